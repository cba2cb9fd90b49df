"""Reproducible reports: answers pinned to stored snapshots, the JSON envelope, the one-file HTML report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CliRun
from factories import make_offer

import planner
from planner.catalog.store import CatalogStore
from planner.errors import InputError

RANK = ("rank", "-w", "llama-3-8b", "--tokens", "2e9", "-p", "aws")
HOSTILE_SOURCE = '<script>alert(1)</script> "quoted" & https://example.com/prices'


def _write(price: float, source: str = "first", **overrides: object) -> int:
    with CatalogStore(seed=False) as store:
        result = store.write_snapshot(
            "aws",
            [make_offer(price_usd_per_hour=price, spot_price_usd_per_hour=None, **overrides)],
            source=source,
            as_of="2026-11-01T00:00:00+00:00",
        )
    assert result is not None
    return result.snapshot.id


@pytest.fixture
def first_snapshot(isolated_store: Path, no_bundled_catalog: Path) -> int:
    """The id of an aws snapshot of one offering at $55.04 an hour, the only catalog."""
    return _write(55.04, price_source=HOSTILE_SOURCE)


def test_a_pinned_rank_reproduces_its_csv_byte_for_byte_after_a_refresh(first_snapshot: int, cli: CliRun) -> None:
    code, before, err = cli(*RANK, "--snapshot", str(first_snapshot), "--format", "csv")
    assert code == 0, err
    assert "55.04" in before and "generated_at" not in before
    second = _write(40.0, source="second")
    code, after, _ = cli(*RANK, "--snapshot", str(first_snapshot), "--format", "csv")
    assert code == 0 and after == before
    # Unpinned, the same command reads the new prices: the pin is what kept the answer.
    _, current, _ = cli(*RANK, "--format", "csv")
    assert "40.0" in current and current != before
    _, pinned_second, _ = cli(*RANK, "--snapshot", str(second), "--format", "csv")
    assert "40.0" in pinned_second


def test_as_of_reads_the_snapshot_that_was_current_then(first_snapshot: int, cli: CliRun) -> None:
    second = _write(40.0, source="second")
    with CatalogStore(seed=False) as store:
        for snapshot_id, created in (
            (first_snapshot, "2026-11-02T00:00:00+00:00"),
            (second, "2026-11-20T00:00:00+00:00"),
        ):
            store._db.execute("UPDATE snapshots SET created_at = ? WHERE id = ?", (created, snapshot_id))
    code, out, err = cli(*RANK, "--as-of", "2026-11-10", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [s["snapshot_id"] for s in report["snapshots"]] == [first_snapshot]
    assert {o["price_usd_per_hour"] for o in report["options"]} == {55.04}
    # Ages are judged at the pinned moment: 9 days after the prices' as_of, whatever today is.
    assert report["price_ages_days"] == {"aws": 9.0}
    code, _, err = cli(*RANK, "--as-of", "2026-10-01")
    assert code == 2 and err == "error: --as-of is before the first stored snapshot (2026-10-01T00:00:00+00:00)\n"


def test_every_json_report_carries_the_envelope(first_snapshot: int, cli: CliRun) -> None:
    expected = {
        "provider": "aws",
        "snapshot_id": first_snapshot,
        "as_of": "2026-11-01T00:00:00+00:00",
        "kind": "live",
        "source": "first",
    }
    for args, payload in (
        ([*RANK, "-f", "json"], "options"),
        (["compare", *RANK[1:], "-g", "H100", "-f", "json"], "options"),
        (["offers", "-p", "aws", "-f", "json"], "offers"),
    ):
        code, out, err = cli(*args)
        assert code == 0, err
        report = json.loads(out)
        assert list(report)[:6] == [
            "schema_version",
            "tool_version",
            "currency",
            "generated_at",
            "snapshots",
            "price_ages_days",
        ]
        assert report["schema_version"] == 1 and report["tool_version"] == planner.__version__
        assert report["currency"] == "USD" and report["snapshots"] == [expected]
        assert report["price_ages_days"]["aws"] > 20 and len(report[payload]) >= 1
    code, out, _ = cli("estimate", "-w", "llama-3-8b", "-g", "H100", "-f", "json")
    report = json.loads(out)
    assert code == 0 and report["snapshots"] == [] and report["workload"] == "llama-3-8b"


def test_bad_snapshot_arguments_are_one_line_naming_the_flag(first_snapshot: int, cli: CliRun) -> None:
    second = _write(40.0, source="second")
    for args, message in (
        (["--snapshot", "999"], "--snapshot names no stored snapshot: 999; `gpuplan catalog status` shows"),
        (["--snapshot", f"{first_snapshot},{second}"], "--snapshot names two snapshots of aws: give one per provider"),
        (["--snapshot", "one"], "--snapshot must be snapshot ids (whole numbers, comma-separated), got 'one'"),
        (["--snapshot", "1", "--as-of", "2026-11-10"], "--snapshot and --as-of cannot both be given"),
        (["--as-of", "last week"], "--as-of must be an ISO 8601 date or time"),
    ):
        code, out, err = cli(*RANK, *args)
        assert (code, out) == (2, ""), err
        assert err.startswith(f"error: {message}"), err
    with pytest.raises(InputError) as caught:
        planner.rank("llama-3-8b", tokens=2e9, snapshot=first_snapshot, catalog=planner.load_catalog())
    assert caught.value.field == "catalog"


def test_the_library_pins_by_snapshot_too(first_snapshot: int) -> None:
    _write(40.0, source="second")
    pinned = planner.rank("llama-3-8b", tokens=2e9, snapshot=[first_snapshot])
    assert set(pinned.table["price_usd_per_hour"]) == {55.04}
    assert [s["snapshot_id"] for s in pinned.snapshots] == [first_snapshot]
    assert set(planner.offers(snapshot=str(first_snapshot))["price_usd_per_hour"]) == {55.04}
    assert set(planner.offers()["price_usd_per_hour"]) == {40.0}
    assert set(planner.load_catalog(snapshot=first_snapshot)["price_usd_per_hour"]) == {55.04}
    compared = planner.compare("llama-3-8b", tokens=2e9, gpus="H100", snapshot=first_snapshot)
    assert set(compared.table["price_usd_per_hour"].dropna()) == {55.04} and compared.snapshots == pinned.snapshots


def test_the_html_report_stands_alone_and_escapes_catalog_text(
    first_snapshot: int, cli: CliRun, tmp_path: Path
) -> None:
    target = tmp_path / "report.html"
    code, out, err = cli(*RANK, "--deadline-hours", "100", "--snapshot", str(first_snapshot), "-f", "html", "-o", str(target))  # fmt: skip
    assert code == 0 and out == "", err
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<circle" in page
    # Nothing loads from anywhere: no script, stylesheet link, image or CSS import; a URL only as escaped text.
    assert not re.search(r"(src|href)\s*=|<script|<link|<img|@import|url\(", page, re.IGNORECASE)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; https://example.com/prices" in page
    for text in ("llama-3-8b", "deadline hours", "100", f"snapshot {first_snapshot}", "p5.48xlarge", "best on-demand"):
        assert text in page, text
    assert planner.rank("llama-3-8b", tokens=2e9, snapshot=first_snapshot).to_html().startswith("<!DOCTYPE html>")
