"""`export` writes the current catalog with SHA-256 sums; `pull` checks them and every row, then swaps it in whole."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import make_commitment, make_offer

from planner.api import export_catalog, pull_catalog
from planner.catalog.store import CatalogStore
from planner.errors import CatalogError

AS_OF = "2026-11-01T00:00:00+00:00"


def _source_store(path: Path) -> CatalogStore:
    store = CatalogStore(path, seed=False)
    store.write_snapshot(
        "aws",
        [
            make_offer(zone="use1-az1", price_usd_per_hour=98.32),
            make_offer(zone="use1-az2", spot_price_usd_per_hour=None),
        ],
        source="aws live",
        as_of=AS_OF,
        commitments=[
            make_commitment(),
            make_commitment(payment="all-upfront", upfront_usd=300000.0, hourly_usd_per_hour=0),
        ],
    )
    store.write_snapshot(
        "azure",
        [make_offer(provider="azure", instance_type="Standard_ND96isr_H100_v5", region="eastus", zone="")],
        source="azure live",
        as_of="2026-11-02T00:00:00+00:00",
    )
    return store


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    folder = tmp_path / "export"
    with _source_store(tmp_path / "source.sqlite") as store:
        export_catalog(folder, store=store)
    return folder


def _sorted(frame: object) -> list[dict[str, object]]:
    records = frame.astype(object).fillna("").to_dict("records")  # type: ignore[attr-defined]
    return sorted(records, key=lambda r: (r["provider"], r["zone"]))


def _rehash(folder: Path, provider: str) -> None:
    """Make the manifest agree with an edited file again (a well-formed export carrying a bad row)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    data = (folder / f"{provider}.csv").read_bytes()
    manifest["providers"][provider]["sha256"] = hashlib.sha256(data).hexdigest()
    manifest["providers"][provider]["rows"] = data.decode().count("\n") - 1
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_export_writes_files_and_a_manifest_with_their_sums(exported: Path) -> None:
    manifest = json.loads((exported / "manifest.json").read_text())
    assert set(manifest["providers"]) == {"aws", "azure"}
    aws = manifest["providers"]["aws"]
    assert aws["rows"] == 2 and aws["as_of"] == AS_OF and aws["source"] == "aws live" and aws["kind"] == "live"
    assert aws["sha256"] == hashlib.sha256((exported / "aws.csv").read_bytes()).hexdigest()
    assert not list(exported.glob(".*"))  # no temporary file left behind


def test_pull_makes_the_exported_catalog_current_and_keeps_history(exported: Path, store_location: str) -> None:
    with CatalogStore(exported.parent / "source.sqlite", seed=False) as source:
        expected = _sorted(source.read_current())
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", [make_offer(price_usd_per_hour=1.0)], source="old", as_of="2026-01-01T00:00:00")
        frame = pull_catalog(exported, store=store)
        assert list(frame["provider"]) == ["aws", "azure"] and list(frame["rows"]) == [2, 1]
        assert _sorted(store.read_current()) == expected
        assert [s.source for s in store.snapshots("aws")] == ["old", f"aws live (pulled from {exported})"]
        assert {s.as_of for s in store.current_snapshots()} == {AS_OF, "2026-11-02T00:00:00+00:00"}


def test_commitment_prices_travel_with_their_snapshot(exported: Path, store_location: str) -> None:
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["providers"]["aws"]["commitments"]["rows"] == 2
    assert manifest["providers"]["azure"]["commitments"]["rows"] == 0
    with CatalogStore(exported.parent / "source.sqlite", seed=False) as source:
        expected = source.read_commitments()
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot(
            "aws", [make_offer()], source="old", as_of=AS_OF, commitments=[make_commitment(region="eu-west-1")]
        )
        old = store.current_snapshots()[0].id
        pull_catalog(exported, store=store)
        assert store.read_commitments().equals(expected)
        assert store.read_commitments([old])["region"].tolist() == ["eu-west-1"]  # the one before, kept


def test_an_export_without_commitment_files_keeps_the_current_ones(exported: Path, store_location: str) -> None:
    manifest = json.loads((exported / "manifest.json").read_text())
    for entry in manifest["providers"].values():
        del entry["commitments"]  # as gpu-planner exported before schema 4
    (exported / "manifest.json").write_text(json.dumps(manifest))
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot(
            "aws", [make_offer()], source="old", as_of=AS_OF, commitments=[make_commitment(region="eu-west-1")]
        )
        pull_catalog(exported, store=store)
        assert store.read_commitments()["region"].tolist() == ["eu-west-1"]


def test_a_commitment_file_that_does_not_match_its_sum_changes_nothing(exported: Path, store_location: str) -> None:
    path = exported / "aws.commitments.csv"
    path.write_text(path.read_text().replace("20.0", "2.0"))
    with CatalogStore(store_location, seed=False) as store:
        with pytest.raises(CatalogError, match=r"aws.commitments.csv has SHA-256 .* nothing pulled"):
            pull_catalog(exported, store=store)
        assert store.snapshots() == []


def test_a_file_that_does_not_match_its_sum_changes_nothing(exported: Path, store_location: str) -> None:
    text = (exported / "azure.csv").read_text()
    (exported / "azure.csv").write_text(text.replace("eastus", "westus"))
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", [make_offer(price_usd_per_hour=1.0)], source="old", as_of="2026-01-01T00:00:00")
        with pytest.raises(CatalogError, match=r"azure.csv has SHA-256 .* nothing pulled"):
            pull_catalog(exported, store=store)
        assert [s.source for s in store.snapshots()] == ["old"]  # aws, checked first and fine, was not stored either


def test_rows_are_validated_as_a_refresh_validates_them(exported: Path, store_location: str) -> None:
    lines = (exported / "aws.csv").read_text().splitlines()
    header = lines[0].split(",")
    bad = lines[1].split(",")
    bad[header.index("price_usd_per_hour")] = "-5"
    bad[header.index("zone")] = "use1-az9"
    (exported / "aws.csv").write_text("\n".join([*lines, ",".join(bad)]) + "\n")
    _rehash(exported, "aws")
    with CatalogStore(store_location, seed=False) as store:
        frame = pull_catalog(exported, store=store).set_index("provider")
        assert frame.loc["aws", "rows"] == 2 and frame.loc["aws", "rejected_rows"] == 1
        assert "price_usd_per_hour" in frame.loc["aws", "rejected_examples"]
        assert "use1-az9" not in set(store.read_current()["zone"])


def test_a_provider_with_no_valid_row_fails_the_whole_pull(exported: Path, store_location: str) -> None:
    lines = (exported / "azure.csv").read_text().splitlines()
    header = lines[0].split(",")
    bad = lines[1].split(",")
    bad[header.index("gpu_count")] = "0"
    (exported / "azure.csv").write_text("\n".join([lines[0], ",".join(bad)]) + "\n")
    _rehash(exported, "azure")
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", [make_offer(price_usd_per_hour=1.0)], source="old", as_of="2026-01-01T00:00:00")
        with pytest.raises(CatalogError, match=r"azure: .*kept the previous catalog"):
            pull_catalog(exported, store=store)
        assert [s.source for s in store.snapshots()] == ["old"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m["providers"]["aws"].update(file="../source.sqlite"), "is not a file name"),
        (lambda m: m["providers"]["aws"].pop("sha256"), r"providers.aws.sha256 must be a str"),
        (lambda m: m["providers"]["aws"].update(rows=3), "aws.csv has 2 rows, the manifest says 3"),
        (lambda m: m["providers"]["aws"].update(kind="pulled"), "must be bundled or live"),
        (lambda m: m.update(schema_version=99), "schema_version 99 is not one this gpu-planner reads"),
        (lambda m: m.update(providers={}), "lists no provider"),
    ],
)
def test_a_bad_manifest_is_one_line_naming_the_field(exported: Path, edit: object, message: str) -> None:
    manifest = json.loads((exported / "manifest.json").read_text())
    edit(manifest)  # type: ignore[operator]
    (exported / "manifest.json").write_text(json.dumps(manifest))
    with CatalogStore(exported.parent / "target.sqlite", seed=False) as store, pytest.raises(CatalogError) as info:
        pull_catalog(exported, store=store)
    assert info.match(message)
    assert "\n" not in str(info.value)


@pytest.fixture
def served(exported: Path) -> Iterator[str]:
    """The exported folder on a loopback HTTP server."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(exported)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_pull_from_a_url(served: str, exported: Path, tmp_path: Path) -> None:
    with CatalogStore(tmp_path / "target.sqlite", seed=False) as store:
        frame = pull_catalog(served, store=store)
        assert list(frame["rows"]) == [2, 1]
        assert len(store.read_current()) == 3
    (exported / "azure.csv").unlink()
    with CatalogStore(tmp_path / "other.sqlite", seed=False) as store:
        with pytest.raises(CatalogError, match=r"azure\.csv: HTTP 404"):
            pull_catalog(served, store=store)
        assert store.snapshots() == []


def test_plain_http_is_refused_off_this_machine(tmp_path: Path) -> None:
    with CatalogStore(tmp_path / "target.sqlite", seed=False) as store, pytest.raises(CatalogError, match="https://"):
        pull_catalog("http://catalog.example.com/gpu", store=store)


def test_cli_export_and_pull(cli: object, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    code, _out, err = cli("catalog", "export", str(folder))  # type: ignore[operator]
    assert code == 0, err
    assert "manifest:" in err and (folder / "manifest.json").is_file()
    code, out, err = cli("catalog", "pull", str(folder), "--format", "csv")  # type: ignore[operator]
    assert code == 0, err
    assert out.splitlines()[0].startswith("provider,rows,rejected_rows,")
    (folder / "aws.csv").write_text("tampered\n")
    code, _out, err = cli("catalog", "pull", str(folder))  # type: ignore[operator]
    assert code == 1
    assert "aws.csv has SHA-256" in err and "Traceback" not in err
