"""Validation where rows enter the store: each bad row is rejected with a reason naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from factories import make_offer

from planner.catalog.schema import COLUMN_NAMES, COLUMNS, SCHEMA_VERSION
from planner.catalog.validate import validate_rows


def test_schema_is_explicit_and_units_last() -> None:
    assert SCHEMA_VERSION == 4
    assert len(set(COLUMN_NAMES)) == len(COLUMN_NAMES)
    for column in COLUMNS:
        for unit in ("usd", "gib", "gbps", "hour"):
            if unit in column.name.split("_"):
                assert column.name.endswith(("_usd_per_hour", "_gib", "_gbps")), column.name


def test_valid_row_passes_and_is_typed() -> None:
    report = validate_rows([make_offer(vcpus="192", gpu_count="8.0", price_usd_per_hour="55.04")])
    assert not report.rejected
    row = report.accepted[0]
    assert row["vcpus"] == 192 and isinstance(row["gpu_count"], float) and row["price_usd_per_hour"] == 55.04


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"price_usd_per_hour": 0.0}, "price_usd_per_hour must be positive or missing"),
        ({"price_usd_per_hour": -3.0}, "price_usd_per_hour must be positive"),
        ({"spot_price_usd_per_hour": 0.00001}, "implausibly low"),
        ({"gpu_count": 0}, "gpu_count must be positive"),
        ({"gpu": "H100"}, "not a canonical GPU id"),
        ({"gpu_memory_gib": 40.0}, "does not match H100-SXM"),
        ({"interconnect": "infiniband"}, "interconnect"),
        ({"availability": "sometimes"}, "availability"),
        ({"available_now": "maybe"}, "available_now 'maybe' is not one of true, false, unknown"),
        ({"available_now": "true"}, "available_now true or false needs available_checked_at"),
        ({"available_now": "false", "available_checked_at": "yesterday"}, "available_checked_at 'yesterday'"),
        ({"spot_interruption": "rare"}, "Spot Advisor bucket"),
        ({"as_of": "last tuesday"}, "ISO 8601"),
        ({"provider": "oracle"}, "provider 'oracle'"),
        ({"price_usd_per_hour": None}, "on-demand offering needs price"),
        ({"availability": "spot-only"}, "spot-only offering"),
        ({"vcpus": 2.5}, "vcpus is not a integer"),
        ({"region": None}, "region is missing"),
        ({"price_usd_per_hour": float("inf")}, "not finite"),
    ],
)
def test_bad_rows_are_rejected_with_a_reason(overrides: dict[str, Any], reason: str) -> None:
    report = validate_rows([make_offer(**overrides)])
    assert not report.accepted
    assert reason in report.rejected[0].reason


def test_spot_above_on_demand_is_flagged_not_rejected() -> None:
    report = validate_rows([make_offer(spot_price_usd_per_hour=60.0, flags="corrected:gpu_count")])
    assert report.accepted[0]["flags"] == "corrected:gpu_count;spot_above_on_demand"


def test_spot_at_the_ninety_percent_floor_is_flagged() -> None:
    # AWS p6-b200.48xlarge in us-east-2: one zone at 10% of on-demand (4-decimal rounding), another at 21%.
    b200 = {"instance_type": "p6-b200.48xlarge", "gpu": "B200", "gpu_memory_gib": 180.0, "price_usd_per_hour": 113.9328}
    floor = make_offer(**b200, spot_price_usd_per_hour=11.3933, zone="use2-az3")
    market = make_offer(**b200, spot_price_usd_per_hour=23.956, zone="use2-az2")
    near = make_offer(price_usd_per_hour=10.0, spot_price_usd_per_hour=1.03)
    report = validate_rows([floor, market, near])
    assert ["spot_at_floor" in r["flags"] for r in report.accepted] == [True, False, False]


def test_gcp_offering_price_is_host_plus_gpus() -> None:
    gcp = {
        "provider": "gcp",
        "instance_type": "a3-highgpu-8g",
        "zone": "",
        "region": "us-central1",
        "host_price_usd_per_hour": 10.0,
        "gpu_price_usd_per_hour": 78.0,
        "price_usd_per_hour": 88.0,
        "spot_price_usd_per_hour": None,
    }
    assert validate_rows([make_offer(**gcp)]).accepted
    bad = validate_rows([make_offer(**{**gcp, "price_usd_per_hour": 10.0})])
    assert "is not host_price_usd_per_hour + gpu_price_usd_per_hour" in bad.rejected[0].reason
    host_only = validate_rows([make_offer(**{**gcp, "gpu_price_usd_per_hour": None, "price_usd_per_hour": 10.0})])
    assert "only one of" in host_only.rejected[0].reason


def test_duplicates_are_rejected() -> None:
    report = validate_rows([make_offer(), make_offer()])
    assert len(report.accepted) == 1
    assert "duplicate offering" in report.rejected[0].reason


def test_fractional_gpus_are_allowed() -> None:
    row = make_offer(
        gpu="L4", gpu_count=0.25, gpu_memory_gib=22.35, price_usd_per_hour=0.5, spot_price_usd_per_hour=0.2
    )
    assert validate_rows([row]).accepted


@pytest.mark.parametrize(
    ("given", "stored"),
    [(None, "unknown"), ("", "unknown"), (True, "true"), (False, "false"), ("false", "false")],
)
def test_available_now_reads_unknown_when_missing(given: Any, stored: str) -> None:
    checked = None if stored == "unknown" else "2026-11-20T06:00:00+00:00"
    row = make_offer(available_now=given, available_checked_at=checked)
    if given is None:
        del row["available_now"]  # a row written before schema 2 has no such column at all
    report = validate_rows([row])
    assert not report.rejected
    assert report.accepted[0]["available_now"] == stored


def test_the_offer_types_name_exactly_the_stored_columns() -> None:
    """Offer (validated) and RawOffer (as an adapter builds it) are the seams' types: one key per stored column."""
    from planner.catalog.schema import COLUMN_NAMES, Offer, RawOffer

    assert tuple(Offer.__annotations__) == COLUMN_NAMES
    assert tuple(RawOffer.__annotations__) == COLUMN_NAMES


def test_spot_as_of_is_a_timestamp_of_a_spot_price() -> None:
    from factories import make_offer

    from planner.catalog.validate import validate_rows

    kept = make_offer(spot_as_of="2026-07-09T00:00:00+00:00")
    report = validate_rows(
        [
            kept,
            make_offer(zone="use1-az5", spot_as_of="July"),
            make_offer(zone="use1-az6", spot_price_usd_per_hour=None, spot_as_of="2026-07-09T00:00:00+00:00"),
        ]
    )
    assert [r["spot_as_of"] for r in report.accepted] == ["2026-07-09T00:00:00+00:00"]
    assert [r.reason for r in report.rejected] == [
        "spot_as_of 'July' is not an ISO 8601 timestamp",
        "spot_as_of is set without a spot price",
    ]
