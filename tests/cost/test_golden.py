"""A golden ranked CSV for a small fixed catalog and the fake performance model.

Regenerate after an intended change with GPUPLAN_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
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
    # Rounded so that the last bits of float arithmetic do not make the file flaky across platforms; staleness and
    # age depend on today's date, so they are checked on their own (test_stale_prices_are_marked_on_every_option).
    dated = ["price_age_days", "price_stale"]
    _check(f"ranked_by_{by}.csv", report.to_csv(result.table.drop(columns=dated).round(6)))


def test_excluded_csv_matches_golden() -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, max_nodes=2)
    _check("excluded.csv", report.to_csv(result.excluded))


def test_golden_ranking_by_hand() -> None:
    """The numbers of the cheapest option, worked out from the fake model and the spot model's published figures."""
    from planner.perf.workloads import get_workload

    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9)
    best = result.table.iloc[0]
    # 8 x H100 at 10,000 tokens/s each: 2e9 / 80,000 / 3600 = 6.94 h of training, plus 0.25 h start-up.
    assert (best["instance_type"], best["pricing"], best["zone"]) == ("p5.48xlarge", "spot", "use1-az6")
    training = 2e9 / 80_000 / 3600
    # "<5%" on Spot Advisor -> the low band, 0.02 reclaims per node-hour (SkyPilot's GCP traces); one node.
    hazard = 0.02
    # Checkpoint: 12 bytes per parameter at 10 Gbit/s; Young/Daly interval sqrt(2 C M) - C with M = 1 / hazard.
    checkpoint = get_workload("llama-3-8b").params * 12 * 8 / 10e9 / 3600
    interval = math.sqrt(2 * checkpoint / hazard) - checkpoint
    assert best["checkpoint_every_hours"] == pytest.approx(interval)
    # Daly: each segment (interval + checkpoint) takes exp(H R) (exp(H s) - 1) / H, R = restart + reading back.
    restart = 0.25 + checkpoint
    exposed = training / interval * math.exp(hazard * restart) * math.expm1(hazard * (interval + checkpoint)) / hazard
    stops = hazard * exposed
    # Each stop waits 1.4 h for capacity on average (unbilled).
    assert best["expected_interruptions"] == pytest.approx(stops)
    assert best["time_to_solution_hours"] == pytest.approx(0.25 + exposed + 1.4 * stops)
    assert best["cost_usd"] == pytest.approx(math.ceil((0.25 + exposed) * 3600) / 3600 * 28.0)
    writes = training / interval * checkpoint
    assert best["p_no_interruption"] == pytest.approx(math.exp(-hazard * (training + writes)))
    # Energy: 8 x 700 W x the fitted node factor x AWS PUE 1.135 over the held hours; us-east-1 at 379.07 g/kWh.
    from planner.energy import node_factor

    energy = 8 * 0.7 * node_factor().expected * 1.135 * exposed
    assert best["energy_kwh"] == pytest.approx(energy)
    assert best["co2_kg"] == pytest.approx(energy * 379.07 / 1000)
    assert not best["spot_risky"]


def test_lora_checkpoints_hold_the_adapters_and_restarts_reload_the_frozen_base() -> None:
    """A LoRA run on spot checkpoints only what trains (12 bytes per adapter parameter); each restart reads that back
    and reloads the frozen base model as published (2 bytes per parameter on every node)."""
    from planner.perf.workloads import get_workload

    def aws_spot(table: pd.DataFrame) -> pd.Series:
        rows = table[(table["instance_type"] == "p5.48xlarge") & (table["pricing"] == "spot")]
        assert list(rows["zone"]) == ["use1-az6"]
        return rows.iloc[0]

    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, mode="lora")
    best = aws_spot(result.table)
    params = get_workload("llama-3-8b").params
    training, hazard = 2e9 / 80_000 / 3600, 0.02
    # The adapters are 1% of the parameters (perf_params memory.lora_trainable_fraction).
    checkpoint = params * 0.01 * 12 * 8 / 10e9 / 3600
    interval = math.sqrt(2 * checkpoint / hazard) - checkpoint
    assert best["checkpoint_every_hours"] == pytest.approx(interval)
    restart = 0.25 + checkpoint + params * 0.99 * 2 * 8 / 10e9 / 3600
    exposed = training / interval * math.exp(hazard * restart) * math.expm1(hazard * (interval + checkpoint)) / hazard
    assert best["time_to_solution_hours"] == pytest.approx(0.25 + exposed + 1.4 * hazard * exposed)
    # A full training run of the same model writes 100x the bytes, so it checkpoints 10x less often.
    full = aws_spot(rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9).table)
    assert full["checkpoint_every_hours"] > 9 * best["checkpoint_every_hours"]
    words = next(line for line in result.assumptions if line.startswith("spot: checkpoint of"))
    assert "0.964 GB (12 bytes per trained parameter: the LoRA adapters, 1% of the 8.03B parameters)" in words
    assert "and the 15.9 GB frozen base model, 2 bytes per parameter as published, on every node" in words


def test_cost_lines_are_named_items_that_sum_to_the_total() -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9)
    azure = result.table[result.table["provider"] == "azure"].iloc[0]
    lines = result.cost_lines(int(azure["rank"]))
    assert [line.name for line in lines] == [
        "spot compute: training",
        "spot compute: start-up",
        "spot compute: writing checkpoints",
        "spot compute: expected rework and restarts after interruptions",
        "spot: waiting for capacity (unbilled)",
        "billing rounding (per minute)",
    ]
    billed_lines = [line for line in lines if "unbilled" not in line.name]
    assert all(line.unit == "instance-hour" and line.unit_price_usd == 40.0 for line in billed_lines)
    assert lines[4].unit_price_usd == 0 and lines[4].quantity > 0
    assert lines[1].quantity == pytest.approx(0.25)
    assert sum(line.cost_usd for line in lines) == pytest.approx(azure["cost_usd"])
    # Azure bills whole minutes: the billed hours are a whole number of minutes.
    billed = sum(line.quantity for line in billed_lines)
    assert billed * 60 == pytest.approx(round(billed * 60))
    breakdown = result.breakdown()
    totals = breakdown.groupby("rank")["cost_usd"].sum()
    assert totals.to_numpy() == pytest.approx(result.table.set_index("rank")["cost_usd"].to_numpy())
    with pytest.raises(InputError, match="no option ranked 99"):
        result.cost_lines(99)


def test_stale_prices_are_marked_on_every_option() -> None:
    catalog = small_catalog()
    catalog["as_of"] = "2020-01-01T00:00:00+00:00"
    catalog.loc[catalog["provider"] == "gcp", "as_of"] = "2999-01-01T00:00:00+00:00"  # never stale
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9)
    stale = result.table.groupby("provider")["price_stale"].agg(set).to_dict()
    assert stale["aws"] == {True} and stale["gcp"] == {False}
    ages = result.table.groupby("provider")["price_age_days"].max()
    # One line for every stale cloud (gcp is fresh), naming the call that refreshes them.
    assert [note for note in result.notes if "older than" in note] == [
        f"warning: prices older than 30 days: aws {ages['aws']:,.0f} days, azure {ages['azure']:,.0f} days; "
        "planner.refresh() updates them"
    ]
    assert ages["aws"] > 2000 and ages["gcp"] < 0
    # The headline says how old its price is, with its date.
    best = result.headline_lines()[0]
    assert best.startswith("best spot: aws") and best.endswith(f"; price from 2020-01-01, {ages['aws']:,.0f} days old")
