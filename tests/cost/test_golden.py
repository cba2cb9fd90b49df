"""A golden ranked CSV for a small fixed catalog and the fake performance model.

Regenerate after an intended change with GPUPLAN_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from cost.fakes import FakeEstimator, small_catalog
from planner import report
from planner.api import rank
from planner.cost.result import TABLE_COLUMNS
from planner.errors import InputError

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "cost"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("GPUPLAN_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; GPUPLAN_UPDATE_GOLDEN=1 rewrites it"


@pytest.mark.parametrize("by", ["cost", "time", "cost-time"])
def test_ranked_csv_matches_golden(by: str) -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, max_nodes=2, by=by)
    assert tuple(result.table.columns) == TABLE_COLUMNS
    # Rounded so that the last bits of float arithmetic do not make the file flaky across platforms.
    _check(f"ranked_by_{by}.csv", report.to_csv(result.table.round(6)))


def test_excluded_csv_matches_golden() -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, max_nodes=2)
    _check("excluded.csv", report.to_csv(result.excluded))


def test_golden_ranking_by_hand() -> None:
    """The numbers of the cheapest option, worked out from the fake model and the cost rules."""
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9)
    best = result.table.iloc[0]
    # 8 x A100-40GB at 3,500 tokens/s each: 2e9 / 28,000 / 3600 = 19.84 h of training, plus 0.25 h start-up.
    assert best["instance_type"] == "p4d.24xlarge"
    assert best["pricing"] == "spot"
    work = 2e9 / 28_000 / 3600 + 0.25
    # ">20%" bucket: 30% of instances a month -> rate -ln(0.7)/730 per hour; loss per stop 0.5 h + 0.25 h.
    rate = -math.log(0.7) / 730
    wall = work / (1 - rate * 0.75)
    assert best["time_to_solution_hours"] == pytest.approx(wall)
    assert best["expected_interruptions"] == pytest.approx(rate * wall)
    assert best["cost_usd"] == pytest.approx(math.ceil(wall * 3600) / 3600 * 9.0)


def test_cost_lines_are_named_items_that_sum_to_the_total() -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9)
    azure = result.table[result.table["provider"] == "azure"].iloc[0]
    lines = result.cost_lines(int(azure["rank"]))
    assert [line.name for line in lines] == [
        "spot compute: training",
        "spot compute: start-up",
        "spot compute: expected rework after interruptions",
        "billing rounding (per minute)",
    ]
    assert all(line.unit == "instance-hour" and line.unit_price_usd == 40.0 for line in lines)
    assert lines[1].quantity == pytest.approx(0.25)
    assert sum(line.cost_usd for line in lines) == pytest.approx(azure["cost_usd"])
    # Azure bills whole minutes: the billed hours are a whole number of minutes.
    billed = sum(line.quantity for line in lines)
    assert billed * 60 == pytest.approx(round(billed * 60))
    breakdown = result.breakdown()
    totals = breakdown.groupby("rank")["cost_usd"].sum()
    assert totals.to_numpy() == pytest.approx(result.table.set_index("rank")["cost_usd"].to_numpy())
    with pytest.raises(InputError, match="no option ranked 99"):
        result.cost_lines(99)
