"""Two writers of one provider at once keep both updates; a store on a read-only mount still reads."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from factories import make_offer

from planner.catalog import backends as store_module
from planner.catalog.store import CatalogStore
from planner.errors import CatalogError

REGIONS = ("us-east-1", "eu-west-1")


def _offer(region: str, price: float) -> dict[str, Any]:
    return make_offer(region=region, zone=f"{region}-az1", price_usd_per_hour=price)


def _prices(path: str) -> dict[str, float]:
    with CatalogStore(path, seed=False) as store:
        frame = store.read_current()
    return dict(zip(frame["region"], frame["price_usd_per_hour"], strict=True))


def _refresh_one_region(path: str, region: str, price: float, both_read: threading.Barrier) -> None:
    """What the refresh orchestrator does: read the current catalog, fetch (slowly), write with carried rows."""
    with CatalogStore(path, seed=False) as store:
        previous = store.read_current().to_dict("records")
        both_read.wait(timeout=10)  # both refreshes have read the catalog before either writes
        carried = [row for row in previous if row["region"] != region]
        store.write_snapshot(
            "aws", [_offer(region, price), *carried], source="live", as_of="2026-11-02T00:00:00+00:00",
            merge_regions=[region],
        )  # fmt: skip


@pytest.mark.parametrize("round_", range(5))
def test_concurrent_refreshes_of_different_regions_keep_both_updates(store_location: str, round_: int) -> None:
    path = store_location
    with CatalogStore(path, seed=False) as store:
        store.write_snapshot("aws", [_offer(r, 10.0) for r in REGIONS], source="old", as_of="2026-11-01T00:00:00")
    both_read = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(region: str, price: float) -> None:
        try:
            _refresh_one_region(path, region, price, both_read)
        except BaseException as exc:  # surfaced below; a thread's exception would otherwise vanish
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(r, p)) for r, p in zip(REGIONS, (20.0, 30.0), strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    assert _prices(path) == {"us-east-1": 20.0, "eu-west-1": 30.0}


def test_merge_keeps_other_regions_from_the_store_and_flags_them(store_location: str) -> None:
    path = store_location
    with CatalogStore(path, seed=False) as store:
        store.write_snapshot("aws", [_offer(r, 10.0) for r in REGIONS], source="old", as_of="2026-11-01T00:00:00")
        stale_copy = _offer("eu-west-1", 1.0)  # the caller's outdated row of a region it did not renew
        result = store.write_snapshot(
            "aws", [_offer("us-east-1", 12.0), stale_copy], source="new", as_of="2026-11-02T00:00:00",
            merge_regions={"us-east-1"},
        )  # fmt: skip
        assert result is not None and result.snapshot.row_count == 2
        frame = store.read_current().set_index("region")
    assert frame.loc["eu-west-1", "price_usd_per_hour"] == 10.0
    assert "carried_over" in frame.loc["eu-west-1", "flags"]
    assert "carried_over" not in frame.loc["us-east-1", "flags"]


def _stored(tmp_path: Path) -> Path:
    path = tmp_path / "ro" / "catalog.sqlite"
    with CatalogStore(path, seed=False) as store:
        store.write_snapshot("aws", [_offer("us-east-1", 10.0)], source="old", as_of="2026-11-01T00:00:00")
    return path


def test_read_only_store_is_read_and_refuses_writes_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _stored(tmp_path)
    monkeypatch.setattr(store_module, "_writable", lambda p: False)  # as os.access answers on a read-only mount
    with CatalogStore(path) as store:
        assert store.read_only
        assert list(store.read_current()["region"]) == ["us-east-1"]
        assert [s.provider for s in store.current_snapshots()] == ["aws"]  # not seeded with the bundled catalog
        with pytest.raises(CatalogError, match="read-only; it can be read but not refreshed"):
            store.write_snapshot("aws", [_offer("us-east-1", 11.0)], source="new", as_of="2026-11-02T00:00:00")
        # The connection itself cannot write either.
        with pytest.raises(Exception, match=r"readonly|read-only"):
            store._db.execute("DELETE FROM current")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permission bits do not bind root")
def test_store_in_a_read_only_folder_is_readable(tmp_path: Path) -> None:
    path = _stored(tmp_path)
    for extra in path.parent.glob("catalog.sqlite-*"):
        extra.unlink()
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        with CatalogStore(path) as store:
            assert list(store.read_current()["region"]) == ["us-east-1"]
    finally:
        path.parent.chmod(0o755)
        path.chmod(0o644)


def test_read_only_uses_immutable_when_the_wal_index_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _stored(tmp_path)
    real_connect = store_module.sqlite3.connect
    uris: list[str] = []

    def connect(target: str, *args: Any, **kwargs: Any) -> Any:
        uris.append(str(target))
        if str(target).endswith("mode=ro"):  # what SQLite says when it cannot create catalog.sqlite-shm
            raise store_module.sqlite3.OperationalError("unable to open database file")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)
    monkeypatch.setattr(store_module, "_writable", lambda p: False)
    with CatalogStore(path) as store:
        assert list(store.read_current()["region"]) == ["us-east-1"]
    assert uris[-1].endswith("?immutable=1")
