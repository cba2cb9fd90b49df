"""Offerings sold alike in several regions are one table row; CSV, JSON and the library keep each region."""

from __future__ import annotations

import math

import pandas as pd

from planner import report


def _option(rank: int, region: str, **overrides: object) -> dict[str, object]:
    row: dict[str, object] = {"rank": rank, "provider": "lambda", "region": region, "zone": "",
                              "instance_type": "gpu_8x_h100_sxm5", "gpu": "H100-SXM", "gpus_per_node": 8.0,
                              "nodes": 1, "pricing": "on-demand", "price_usd_per_hour": 23.92,
                              "time_to_solution_hours": 4.4, "cost_usd": 105.3, "co2_kg": math.nan,
                              "price_as_of": f"2026-11-0{rank}", "notes": ""}  # fmt: skip
    row.update(overrides)
    return row


def test_rows_that_differ_only_by_region_become_one() -> None:
    frame = pd.DataFrame(
        [
            _option(1, "us-east-1"),
            _option(2, "us-west-1"),
            _option(3, "us-east-1", instance_type="gpu_1x_h100_sxm5", price_usd_per_hour=2.99, cost_usd=110.0),
            _option(4, "europe-central-1"),
            _option(5, "us-south-1", price_usd_per_hour=24.0, cost_usd=105.6),  # another price: its own row
        ]
    )
    rows = report.collapse_regions(frame)
    assert rows["rank"].tolist() == [1, 3, 5]
    assert rows["region"].tolist() == ["us-east-1 +2 more", "us-east-1", "us-south-1"]
    assert rows["regions"].tolist() == [3, 1, 1]
    assert rows["all_regions"].iloc[0] == "us-east-1, us-west-1, europe-central-1"
    # The numbers are the ranking's, untouched; the input frame too.
    assert rows["cost_usd"].tolist() == [105.3, 110.0, 105.6]
    assert len(frame) == 5 and frame["region"].iloc[0] == "us-east-1"


def test_a_shown_region_dependent_figure_keeps_rows_apart() -> None:
    frame = pd.DataFrame([_option(1, "eastus2", co2_kg=15.0), _option(2, "westus3", co2_kg=12.7)])
    assert len(report.collapse_regions(frame)) == 2  # every column compared, co2_kg included
    compact = report.collapse_regions(frame, ("rank", "provider", "region", "cost_usd"))
    assert compact["region"].tolist() == ["eastus2 +1 more"]


def test_an_empty_table_stays_empty() -> None:
    empty = report.collapse_regions(pd.DataFrame(columns=list(_option(1, "x"))))
    assert empty.empty and {"regions", "all_regions"} <= set(empty.columns)
