"""The spot model: hazard math, correlated reclaims, Young/Daly checkpointing, scenarios, flags and warnings."""

from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd
import pytest
from factories import make_offer

from cost.fakes import FakeEstimator, small_catalog
from planner._data import data_dir
from planner.api import rank
from planner.cost import spot
from planner.cost.result import SPOT_FLOOR_NOTE


def _one(value: float) -> np.ndarray:
    return np.array([value], dtype=float)


def test_p_no_interruption_is_exp_minus_hazard_times_exposure() -> None:
    assert spot.p_no_interruption(_one(0.1), _one(10.0))[0] == pytest.approx(math.exp(-1.0))
    assert spot.p_no_interruption(_one(0.0), _one(1e6))[0] == 1.0


def test_job_hazard_grows_slower_than_the_node_count() -> None:
    exponent = spot.spot_model().correlation_exponent
    assert exponent == pytest.approx(0.6)
    hazard = spot.job_hazard(_one(0.1), np.array([1.0, 4.0, 16.0]), exponent)
    assert hazard[0] == pytest.approx(0.1)
    assert hazard[1] == pytest.approx(0.1 * 4**0.6)
    # Independent nodes would give 0.4 and 1.6 stops per hour.
    assert hazard[1] < 0.4 and hazard[2] < 1.6


def test_young_daly_interval() -> None:
    # C = 0.1 h, M = 10 h: sqrt(2 x 0.1 x 10) - 0.1.
    assert spot.young_daly_interval(_one(0.1), _one(0.1))[0] == pytest.approx(math.sqrt(2.0) - 0.1)
    # A checkpoint longer than half the mean time between stops: checkpoint once per mean time between stops.
    assert spot.young_daly_interval(_one(8.0), _one(0.1))[0] == pytest.approx(10.0)
    assert math.isinf(spot.young_daly_interval(_one(0.1), _one(0.0))[0])


def test_young_daly_interval_nearly_minimises_the_expected_time() -> None:
    work, hazard, checkpoint, restart = _one(100.0), _one(0.2), _one(0.05), _one(0.3)
    best = spot.young_daly_interval(checkpoint, hazard)

    def exposed(interval: np.ndarray) -> float:
        return float(spot.run_on_spot(work, hazard, interval, checkpoint, restart, 1.0).exposed_hours[0])

    grid = np.geomspace(0.05, 20.0, 400)
    optimum = min(exposed(np.array([g])) for g in grid)
    assert exposed(best) <= optimum * 1.005
    assert exposed(best) < exposed(best / 3) and exposed(best) < exposed(best * 3)


def test_expected_time_without_interruptions_is_work_plus_checkpoints() -> None:
    run = spot.run_on_spot(_one(10.0), _one(0.0), _one(2.0), _one(0.1), _one(0.25), 1.4)
    assert run.exposed_hours[0] == pytest.approx(10.0 + 5 * 0.1)
    assert run.interruptions[0] == 0 and run.wait_hours[0] == 0 and run.p_no_interruption[0] == 1.0


def test_expected_time_matches_a_simulation() -> None:
    """Daly's closed form against a seeded Monte Carlo run of the same process (memoryless stops, restarts)."""
    work, hazard, interval, checkpoint, restart = 6.0, 0.3, 1.0, 0.1, 0.4
    run = spot.run_on_spot(_one(work), _one(hazard), _one(interval), _one(checkpoint), _one(restart), 0.0)
    rng = np.random.default_rng(11)
    totals, stops = [], []
    for _ in range(8000):
        elapsed, count = 0.0, 0
        for _segment in range(int(work / interval)):
            needed, first = interval + checkpoint, True
            while True:
                window = needed if first else restart + needed
                gap = rng.exponential(1.0 / hazard)
                if gap >= window:
                    elapsed += window
                    break
                elapsed += gap
                count += 1
                first = False
        totals.append(elapsed)
        stops.append(count)
    assert run.exposed_hours[0] == pytest.approx(np.mean(totals), rel=0.02)
    assert run.interruptions[0] == pytest.approx(np.mean(stops), rel=0.04)


def test_a_run_that_can_never_finish_is_infinite() -> None:
    run = spot.run_on_spot(_one(5000.0), _one(2.0), _one(np.inf), _one(0.0), _one(1.0), 1.0)
    assert math.isinf(run.exposed_hours[0])


def test_bands_and_labels_come_from_the_data_tables() -> None:
    bands = spot.hazard_bands()
    assert [b.expected for b in bands.values()] == [0.02, 0.10, 0.47]
    assert all(b.low <= b.expected <= b.high for b in bands.values())
    assert spot.band_for("aws", "<5%") == "low"
    assert spot.band_for("aws", ">20%") == "high"
    assert spot.band_for("azure", "20+%") == "high"
    assert spot.band_for("gcp", None) == spot.default_band() == "mid"
    assert spot.band_for("aws", "no such bucket") == "mid"


@pytest.mark.parametrize(
    "name",
    ["spot_hazard.csv", "spot_bands.csv", "spot_model.csv", "node_power.csv", "provider_pue.csv", "region_carbon.csv"],
)
def test_every_row_is_sourced_and_dated(name: str) -> None:
    with open(data_dir() / name, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    assert all(row["source"].strip() and row["as_of"].strip() for row in rows)


def _spot_row(**options: object) -> pd.Series:
    catalog = pd.DataFrame([make_offer(spot_interruption=">20%", availability="spot-only")])
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), pricing="spot", **options)  # type: ignore[arg-type]
    return result.table.iloc[0]


def test_own_interruption_rate_replaces_the_bands() -> None:
    none = _spot_row(tokens=2e9, interruption_rate_per_node_hour=0.0)
    assert none["expected_interruptions"] == 0 and none["p_no_interruption"] == 1.0
    some = _spot_row(tokens=2e9, interruption_rate_per_node_hour=0.05)
    more = _spot_row(tokens=2e9, interruption_rate_per_node_hour=0.5)
    assert 0 < some["expected_interruptions"] < more["expected_interruptions"]
    assert some["time_to_solution_hours"] < more["time_to_solution_hours"]


def test_more_nodes_are_stopped_more_often_but_less_than_in_proportion() -> None:
    catalog = pd.DataFrame([make_offer(spot_interruption="<5%", availability="spot-only")])
    table = rank(
        "llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e10, pricing="spot", max_nodes=4
    ).table.set_index("nodes")
    # Stops per held hour: the job hazard, node hazard x N^0.6 for the "<5%" (low band, 0.02) offering.
    held = table["time_to_solution_hours"] - 0.25 - table["expected_interruptions"] * 1.4
    per_hour = table["expected_interruptions"] / held
    assert per_hour[1] == pytest.approx(0.02)
    assert per_hour[4] == pytest.approx(0.02 * 4**0.6)


def test_the_flag_marks_a_high_scenario_that_more_than_doubles_time_or_cost() -> None:
    catalog = small_catalog()
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, max_nodes=2)
    table = result.table
    # The fake model's slow end is 1.25 x its hours; without interruptions a run takes start-up + that.
    training = result.details["training_hours"].to_numpy(dtype=float)
    free = 0.25 + 1.25 * training
    nodes, price = table["nodes"].to_numpy(dtype=float), table["price_usd_per_hour"].to_numpy(dtype=float)
    high_time = table["time_high_hours"].to_numpy(dtype=float)
    high_cost = table["cost_high_usd"].to_numpy(dtype=float)
    doubles = np.isnan(high_time) | (high_time > 2 * free) | (high_cost > 2 * nodes * price * free * (1 + 1e-6))
    spot_rows = (table["pricing"] == "spot").to_numpy()
    assert (table["spot_risky"].to_numpy(dtype=bool) == (doubles & spot_rows)).all()
    assert table["spot_risky"].any() and not table["spot_risky"].all()
    risky = table[table["spot_risky"]]
    assert risky["notes"].str.contains("RISKY").all()


def test_a_long_spot_run_warns() -> None:
    short = _spot_row(tokens=2e8)
    assert short["time_to_solution_hours"] < 72 and "over 72 h on spot" not in short["notes"]
    long = _spot_row(tokens=2e10, interruption_rate_per_node_hour=0.01)
    assert long["time_to_solution_hours"] > 72 and "over 72 h on spot" in long["notes"]
    relaxed = _spot_row(tokens=2e10, interruption_rate_per_node_hour=0.01, spot_warning_hours=1000.0)
    assert "on spot:" not in relaxed["notes"]


def _on_demand_row(**options: object) -> pd.Series:
    catalog = pd.DataFrame([make_offer(spot_price_usd_per_hour=None, spot_interruption=None)])
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), pricing="on-demand", **options)  # type: ignore[arg-type]
    return result.table.iloc[0]


def test_a_long_on_demand_run_gets_a_note_not_a_cost() -> None:
    short = _on_demand_row(tokens=2e8)
    assert short["time_to_solution_hours"] < 72 and "on demand" not in short["notes"]
    long = _on_demand_row(tokens=4e10)
    assert long["time_to_solution_hours"] > 72
    assert "over 72 h on demand: host maintenance or a failure can stop the run; checkpoint regularly" in long["notes"]
    assert "on spot" not in long["notes"]
    # A note only: the cost is the billed hours at the on-demand price, as without it.
    relaxed = _on_demand_row(tokens=4e10, spot_warning_hours=1000.0)
    assert "on demand:" not in relaxed["notes"] and relaxed["cost_usd"] == long["cost_usd"]


def test_headline_pairs_the_best_on_demand_with_the_best_safe_spot_option() -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, max_nodes=2)
    on_demand, best_spot = result.headline()
    assert on_demand is not None and best_spot is not None
    assert on_demand["pricing"] == "on-demand" and best_spot["pricing"] == "spot"
    assert not best_spot["spot_risky"]
    assert on_demand["rank"] == result.table[result.table["pricing"] == "on-demand"]["rank"].min()
    lines = result.headline_lines()
    # The best option first: here the spot run, then the best on-demand one.
    assert lines[0].startswith("best spot: aws 1 x p5.48xlarge") and lines[1].startswith("best on-demand: aws 1 x")
    only = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, pricing="on-demand")
    assert only.headline()[1] is None and len(only.headline_lines()) == 1


def test_a_spot_price_at_the_floor_is_said_where_the_number_stands() -> None:
    catalog = small_catalog()
    cheapest_zone = (catalog["zone"] == "use1-az6").to_numpy()
    catalog.loc[cheapest_zone, "flags"] = "spot_at_floor"
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9)
    table = result.table
    p5 = table[(table["instance_type"] == "p5.48xlarge") & (table["region"] == "us-east-1")]
    spot, on_demand = p5[p5["pricing"] == "spot"], p5[p5["pricing"] == "on-demand"]
    assert len(spot) and all(SPOT_FLOOR_NOTE in n for n in spot["notes"])
    assert len(on_demand) and not any(SPOT_FLOOR_NOTE in n or "spot_at_floor" in n for n in on_demand["notes"])
    best_spot = result.headline()[1]
    if best_spot is not None and SPOT_FLOOR_NOTE in best_spot["notes"]:
        assert SPOT_FLOOR_NOTE in result.headline_lines()[-1]


def test_a_runaway_expected_time_counts_as_never_finishing() -> None:
    # Finite in floating point (about 1e170 h) but over 100 x the work: no answer, not a number.
    run = spot.run_on_spot(_one(10.0), _one(0.1), _one(1.0), _one(0.0), _one(3900.0), 1.0)
    assert math.isinf(run.exposed_hours[0])
    fine = spot.run_on_spot(_one(10.0), _one(0.1), _one(1.0), _one(0.0), _one(1.0), 1.0)
    assert fine.exposed_hours[0] < 100 * 10


def test_a_high_scenario_that_never_finishes_leaves_its_high_end_blank_and_flags() -> None:
    # Restarts of 40 h: the expected scenario (0.1/node-hour) finishes, the high one (0.23) runs away.
    row = _spot_row(tokens=2e9, interruption_rate_per_node_hour=0.1, restart_overhead_hours=40.0)
    assert math.isfinite(row["time_to_solution_hours"])
    assert math.isnan(row["cost_high_usd"]) and math.isnan(row["time_high_hours"])
    assert row["spot_risky"]


def test_every_interruption_label_the_catalog_stores_has_a_band_and_no_other() -> None:
    """One fact, two places that must agree: the labels a row may carry and the labels the band table maps."""
    from planner.catalog.schema import INTERRUPTION_LABELS
    from planner.cost.spot import spot_labels

    assert set(spot_labels()) == set(INTERRUPTION_LABELS)
