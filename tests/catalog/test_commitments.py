"""The commitment price table: validation row by row, the bundled snapshot and its manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import make_commitment

from planner._data import data_dir
from planner.catalog.commitments import (
    COMMITMENT_COLUMNS,
    bundled_path,
    load_commitments,
    read_csv,
    validate_commitments,
)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("provider", "oracle"),
        ("commitment", "cud"),  # a Google kind on an AWS row
        ("term_years", 2),
        ("payment", "monthly"),
        ("upfront_usd", "-5"),
        ("hourly_usd_per_hour", "n/a"),
        ("region", ""),
        ("as_of", None),
    ],
)
def test_a_bad_field_rejects_its_row_only_and_names_the_field(field: str, value: object) -> None:
    report = validate_commitments([make_commitment(**{field: value}), make_commitment(region="us-west-2")])
    assert [row["region"] for row in report.accepted] == ["us-west-2"]
    assert len(report.rejected) == 1 and f"commitment {field}" in report.rejected[0].reason


def test_payment_and_parts_must_agree() -> None:
    bad = [
        make_commitment(payment="no-upfront"),  # has an upfront fee
        make_commitment(payment="all-upfront"),  # has an hourly rate
        make_commitment(upfront_usd=0, hourly_usd_per_hour=0),
    ]
    assert not validate_commitments(bad).accepted
    assert len(validate_commitments(bad).rejected) == 3


def test_the_bundled_table_is_valid_sourced_and_in_the_manifest() -> None:
    raw = read_csv(bundled_path())
    report = validate_commitments(raw)
    assert not report.rejected and len(report.accepted) == len(raw) > 0
    assert tuple(raw[0]) == COMMITMENT_COLUMNS
    manifest = json.loads((data_dir() / "catalog" / "manifest.json").read_text(encoding="utf-8"))["commitments"]
    assert manifest["rows"] == len(raw) and manifest["file"] == "commitments.csv"
    assert manifest["licence"] and manifest["as_of"] == min(row["as_of"] for row in raw)
    # Each price is the one of its own region: the table never spreads one figure over a provider's regions.
    regions = {(row["instance_type"], row["term_years"]): set() for row in raw}
    for row in raw:
        regions[(row["instance_type"], row["term_years"])].add(row["hourly_usd_per_hour"])
    assert all(len(prices) > 1 for prices in regions.values())


def test_every_bundled_commitment_is_below_the_on_demand_list_price() -> None:
    import planner.api as api

    frame = api.commitment_prices(store=None)
    checked = frame[frame["on_demand_usd_per_hour"].notna()]
    assert len(checked) > 20
    assert (checked["committed_usd_per_hour"] < checked["on_demand_usd_per_hour"]).all()


def test_a_new_store_serves_the_bundled_rows(tmp_path: Path) -> None:
    frame = load_commitments(tmp_path / "catalog.sqlite")
    assert len(frame) == len(read_csv(bundled_path())) and set(frame.columns) == set(COMMITMENT_COLUMNS)
    assert frame["hourly_usd_per_hour"].dtype == "float64" and frame["term_years"].dtype == "int64"
