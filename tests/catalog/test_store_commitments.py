"""Commitment prices in the store, on SQLite and PostgreSQL: kept per snapshot, with history, written with the
offerings in one transaction, pinned like them, and moved in from the files a store of schema 3 kept beside it."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from factories import make_commitment, make_offer

from planner.catalog.commitments import COMMITMENT_COLUMNS, bundled_path, load_commitments, read_csv
from planner.catalog.schema import PROVIDERS
from planner.catalog.store import CatalogStore
from planner.errors import CatalogError

AS_OF = "2026-11-01T00:00:00+00:00"


def _offers(price: float = 98.0) -> list[dict[str, Any]]:
    return [make_offer(region=region, zone="", price_usd_per_hour=price) for region in ("us-east-1", "us-west-2")]


def _hourly(store: CatalogStore, snapshot_ids: list[int] | None = None) -> dict[tuple[str, str], float]:
    frame = store.read_commitments(snapshot_ids)
    return {
        (str(r.region), str(r.payment)): float(r.hourly_usd_per_hour)
        for r in frame[frame["provider"] == "aws"].itertuples()
    }


def test_a_snapshot_keeps_its_commitments_and_older_ones_stay_readable(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        first = store.write_snapshot(
            "aws", _offers(), source="t1", as_of=AS_OF, commitments=[make_commitment(hourly_usd_per_hour=20.0)]
        )
        second = store.write_snapshot(
            "aws", _offers(), source="t2", as_of=AS_OF, commitments=[make_commitment(hourly_usd_per_hour=18.0)]
        )
        assert first is not None and second is not None and second.commitments == 1
        assert _hourly(store) == {("us-east-1", "partial-upfront"): 18.0}
        # History: the older snapshot's prices are still there, pinned by id or by the moment it was current.
        assert _hourly(store, [first.snapshot.id]) == {("us-east-1", "partial-upfront"): 20.0}
        pinned = load_commitments(store, snapshot=first.snapshot.id)
        assert list(pinned["hourly_usd_per_hour"]) == [20.0]
        reopened = load_commitments(store_location)  # by location, as the ranking opens it (it seeds the rest)
        assert list(reopened[reopened["provider"] == "aws"]["hourly_usd_per_hour"]) == [18.0]
    with pytest.raises(Exception, match="snapshot"):
        load_commitments(store_location, snapshot=999_999)


def test_a_write_without_commitments_keeps_the_current_ones(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", _offers(), source="t1", as_of=AS_OF, commitments=[make_commitment()])
        # A feed that failed (none read) in a refresh, and a write that names none: the prices stay current.
        store.write_snapshot("aws", _offers(), source="t2", as_of=AS_OF, merge_regions={"us-east-1"}, commitments=[])
        store.write_snapshot("aws", _offers(), source="t3", as_of=AS_OF)
        assert _hourly(store) == {("us-east-1", "partial-upfront"): 20.0}
        assert [s.source for s in store.current_snapshots()] == ["t3"]


def test_a_regional_refresh_renews_its_regions_and_keeps_the_others(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        old = [make_commitment(region=r, hourly_usd_per_hour=20.0) for r in ("us-east-1", "us-west-2")]
        store.write_snapshot("aws", _offers(), source="t1", as_of=AS_OF, commitments=old)
        fresh = [make_commitment(region="us-west-2", hourly_usd_per_hour=17.0), make_commitment(region="")]
        result = store.write_snapshot(
            "aws", _offers(), source="t2", as_of=AS_OF, merge_regions={"us-west-2"}, commitments=fresh
        )
        assert result is not None and result.commitments == 1
        assert any("commitment region" in r.reason for r in result.rejected)  # the bad row only, named
        assert _hourly(store) == {("us-east-1", "partial-upfront"): 20.0, ("us-west-2", "partial-upfront"): 17.0}


def test_a_failed_write_keeps_the_previous_commitments(store_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", _offers(), source="t1", as_of=AS_OF, commitments=[make_commitment()])
        with pytest.raises(CatalogError, match="no valid offering"):
            store.write_snapshot(
                "aws", [], source="t2", as_of=AS_OF, commitments=[make_commitment(hourly_usd_per_hour=1.0)]
            )

        # A write that fails inside its transaction, after its snapshot and offerings were inserted, rolls all back.
        def interrupted(*args: object) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr("planner.catalog.commitment_table.insert", interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.write_snapshot(
                "aws", _offers(), source="t3", as_of=AS_OF, commitments=[make_commitment(hourly_usd_per_hour=2.0)]
            )
        monkeypatch.undo()
        assert _hourly(store) == {("us-east-1", "partial-upfront"): 20.0}
        assert [s.source for s in store.snapshots("aws")] == ["t1"]


def test_another_providers_commitment_is_rejected(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        gcp = make_commitment(provider="gcp", commitment="cud", payment="no-upfront", upfront_usd=0)
        result = store.write_snapshot("aws", _offers(), source="t1", as_of=AS_OF, commitments=[gcp, make_commitment()])
        assert result is not None and result.commitments == 1
        assert [r.reason for r in result.rejected] == ["commitment of 'gcp' in a aws snapshot"]


def test_seeding_stores_the_bundled_commitments_with_the_bundled_snapshot(store_location: str) -> None:
    bundled = read_csv(bundled_path())
    with CatalogStore(store_location) as store:
        frame = store.read_commitments()
        assert len(frame) == len(bundled)
        gcp = next(info for info in store.current_snapshots() if info.provider == "gcp")
        assert len(store.snapshot_commitments(gcp.id)) == sum(row["provider"] == "gcp" for row in bundled)
        seeded = len(store.snapshots())
    with CatalogStore(store_location) as store:
        assert len(store.snapshots()) == seeded  # opening again seeds nothing more


def test_new_bundled_commitments_reseed_a_bundled_snapshot_but_never_a_live_one(store_location: str) -> None:
    with CatalogStore(store_location) as store:
        store.write_snapshot("aws", _offers(), source="live aws", as_of=AS_OF, commitments=[make_commitment()])
        # As if the installed bundle's commitment prices changed since this store was seeded.
        for provider in PROVIDERS:
            store._db.execute(
                "UPDATE meta SET value = 'an older bundle' WHERE key = ?", (f"seeded_commitments:{provider}",)
            )
        before = {info.provider: info.id for info in store.current_snapshots()}
    with CatalogStore(store_location) as store:
        after = {info.provider: info.id for info in store.current_snapshots()}
        assert after["aws"] == before["aws"] and after["gcp"] > before["gcp"]
        assert _hourly(store) == {("us-east-1", "partial-upfront"): 20.0}


def _schema_3_store(path: Path) -> None:
    """A store as gpu-planner wrote it at schema 3: the same tables without commitments, and a live aws snapshot."""
    with CatalogStore(path) as store:
        store.write_snapshot("aws", _offers(), source="live aws", as_of=AS_OF)
        store._db.execute("DROP TABLE commitments")
        store._db.execute("DELETE FROM meta WHERE key LIKE 'seeded_commitments:%'")
        store._db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")


def test_the_migration_keeps_the_live_file_and_the_bundled_rows(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    _schema_3_store(path)
    folder = tmp_path / "commitments"  # where schema 3 kept a refresh's prices
    folder.mkdir()
    with (folder / "aws.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COMMITMENT_COLUMNS)
        writer.writeheader()
        writer.writerow(make_commitment(hourly_usd_per_hour=19.5))
    with CatalogStore(path) as store:
        before = len(store.snapshots())
        assert _hourly(store) == {("us-east-1", "partial-upfront"): 19.5}
        gcp = store.read_commitments()
        assert sum(gcp["provider"] == "gcp") == sum(row["provider"] == "gcp" for row in read_csv(bundled_path()))
        assert len(store.read_current()) > 0
    with CatalogStore(path) as store:
        assert len(store.snapshots()) == before  # the migrated bundled snapshots count as seeded
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "4"


def test_the_migration_on_postgresql_keeps_the_offerings(postgres_url: str) -> None:
    import postgres_server

    location = postgres_server.new_schema(postgres_url)
    with CatalogStore(location) as store:
        store.write_snapshot("aws", _offers(), source="live aws", as_of=AS_OF)
        offerings = len(store.read_current())
        store._db.execute("DROP TABLE commitments")
        store._db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with CatalogStore(location) as store:
        assert len(store.read_current()) == offerings
        assert store._meta("schema_version") == "4"
        assert sum(store.read_commitments()["provider"] == "gcp") > 0  # the bundled rows, as schema 3 served them
