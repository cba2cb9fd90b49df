"""Invariants of the ranking on random catalogs: filters hold, costs bound below, Pareto flags, cost lines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from factories import make_offer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cost.fakes import FakeEstimator
from planner.api import rank
from planner.catalog.schema import SPOT_INTERRUPTION_BUCKETS, is_local_zone
from planner.cost.lines import billed_hours, billing_steps
from planner.cost.pareto import pareto_mask

FAMILIES: list[dict[str, Any]] = [
    {"instance_type": "p5.48xlarge", "gpu": "H100-SXM", "gpu_count": 8.0, "network_gbps": 3200.0},
    {"instance_type": "p4d.24xlarge", "gpu": "A100-40GB", "gpu_count": 8.0, "network_gbps": 400.0},
    {"instance_type": "g6.12xlarge", "gpu": "L4", "gpu_count": 4.0, "network_gbps": 40.0},
    {"instance_type": "g6.48xlarge", "gpu": "L4", "gpu_count": 8.0, "network_gbps": 100.0},
    {"instance_type": "a2-ultragpu-8g", "gpu": "A100-80GB", "gpu_count": 8.0, "network_gbps": None},
]

offer = st.fixed_dictionaries(
    {
        "family": st.sampled_from(range(len(FAMILIES))),
        "provider": st.sampled_from(["aws", "gcp", "azure"]),
        "region": st.sampled_from(["r1", "r2", "r3"]),
        # A Local Zone ID too: an option of its own beside the region's standard zones.
        "zone": st.sampled_from(["", "a", "b", "usw2-lax1-az1"]),
        "price_usd_per_hour": st.one_of(st.none(), st.floats(0.5, 120.0)),
        "spot_price_usd_per_hour": st.one_of(st.none(), st.floats(0.1, 120.0)),
        "spot_interruption": st.one_of(st.none(), st.sampled_from(SPOT_INTERRUPTION_BUCKETS)),
        "availability": st.sampled_from(["on-demand", "on-demand", "spot-only", "reservation-only"]),
    }
)


def _catalog(specs: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for given_spec in specs:
        spec = dict(given_spec)
        family = dict(FAMILIES[spec.pop("family")])
        family["instance_type"] = f"{spec['provider']}-{family['instance_type']}"
        rows.append(make_offer(**family, **spec))
    # One row per offering and zone, as in the store.
    return pd.DataFrame(rows).drop_duplicates(["provider", "instance_type", "region", "zone"]).reset_index(drop=True)


constraints = st.fixed_dictionaries(
    {
        "deadline_hours": st.one_of(st.none(), st.floats(1.0, 200.0)),
        "budget_usd": st.one_of(st.none(), st.floats(10.0, 5000.0)),
        "pricing": st.sampled_from(["both", "on-demand", "spot"]),
        "max_nodes": st.integers(1, 3),
        "by": st.sampled_from(["cost", "time", "cost-time", "co2"]),
        "checkpoint_interval_hours": st.one_of(st.none(), st.floats(0.1, 12.0)),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(offer, min_size=1, max_size=25), options=constraints)
def test_ranking_invariants(specs: list[dict[str, Any]], options: dict[str, Any]) -> None:
    catalog = _catalog(specs)
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=1e9, **options)
    table = result.table
    if result.empty:
        assert result.message
        return
    assert result.message is None
    time = table["time_to_solution_hours"].to_numpy(dtype=float)
    cost = table["cost_usd"].to_numpy(dtype=float)
    price = table["price_usd_per_hour"].to_numpy(dtype=float)
    nodes = table["nodes"].to_numpy(dtype=float)
    # Constraints hold.
    if options["deadline_hours"] is not None:
        assert (time <= options["deadline_hours"]).all()
    if options["budget_usd"] is not None:
        assert (cost <= options["budget_usd"]).all()
    assert (nodes <= options["max_nodes"]).all()
    if options["pricing"] != "both":
        assert (table["pricing"] == options["pricing"]).all()
    # Expected cost is at least price x instances x the hours the instances are held (billing only rounds up);
    # waits for spot capacity are wall time but unbilled.
    held = result.details["held_hours"].to_numpy(dtype=float)
    assert (held <= time + 1e-9).all()
    assert (cost >= price * nodes * held * (1 - 1e-12)).all()
    spot = (table["pricing"] == "spot").to_numpy()
    assert (table["expected_interruptions"].to_numpy()[~spot] == 0).all()
    assert (table["p_no_interruption"].to_numpy()[~spot] == 1).all()
    assert table["p_no_interruption"].between(0, 1).all()
    assert not table["spot_risky"].to_numpy(dtype=bool)[~spot].any()
    assert (table["cost_low_usd"] <= table["cost_usd"] + 1e-9).all()
    # The high end is NaN only where the high scenario never finishes, and then the option is flagged.
    high = table["cost_high_usd"].to_numpy(dtype=float)
    assert table["spot_risky"].to_numpy(dtype=bool)[np.isnan(high)].all()
    assert (np.nan_to_num(high, nan=np.inf) >= cost - 1e-9).all()
    assert (table["time_low_hours"] <= table["time_to_solution_hours"] + 1e-9).all()
    assert (table["energy_low_kwh"] <= table["energy_kwh"] + 1e-9).all()
    assert (table["co2_kg"] > 0).all()
    # Ordered by the chosen key.
    co2 = table["co2_kg"].to_numpy(dtype=float)
    key = {"cost": cost, "time": time, "cost-time": cost * time, "co2": co2}[options["by"]]
    assert (np.diff(key) >= -1e-9 * np.abs(key[1:])).all()
    # Pareto flags: brute force.
    for i in range(len(table)):
        dominated = ((cost <= cost[i]) & (time <= time[i]) & ((cost < cost[i]) | (time < time[i]))).any()
        assert bool(table["pareto"].iloc[i]) == (not dominated)
    # Zones collapse: one option per offering, region, node count and pricing.
    local = table["zone"].map(is_local_zone)
    assert (
        not table.assign(local=local)
        .duplicated(["provider", "instance_type", "region", "local", "nodes", "pricing"])
        .any()
    )
    # Reservation-only rows are all accounted for among the exclusions.
    reserved = int((catalog["availability"] == "reservation-only").sum())
    reasons = result.excluded["reason"].str.startswith("sold as reservation only")
    assert int(result.excluded.loc[reasons, "offerings"].sum()) == reserved
    # Spot-only never on demand, reservation-only never at all.
    merged = table.merge(catalog, on=["provider", "instance_type", "region", "zone"], suffixes=("", "_catalog"))
    assert not ((merged["availability"] == "spot-only") & (merged["pricing"] == "on-demand")).any()
    assert not (merged["availability"] == "reservation-only").any()
    # Totals are sums of the cost lines.
    for rank_number in table["rank"].head(5):
        lines = result.cost_lines(int(rank_number))
        row_cost = float(table.loc[table["rank"] == rank_number, "cost_usd"].iloc[0])
        assert sum(line.cost_usd for line in lines) == pytest.approx(row_cost, rel=1e-9)
        assert all(line.quantity >= -1e-9 for line in lines)


@pytest.mark.parametrize(
    ("provider", "seconds", "billed_seconds"),
    [
        ("aws", 30, 60),  # the 60 s minimum
        ("aws", 61.2, 62),  # then per second
        ("gcp", 3600.2, 3601),
        ("gcp", 1, 60),
        ("azure", 61, 120),  # per minute
        ("azure", 3600, 3600),
        ("azure", 3600.5, 3660),
    ],
)
def test_billing_rounding_per_cloud(provider: str, seconds: float, billed_seconds: float) -> None:
    increment, minimum = billing_steps([provider])
    billed = billed_hours(np.array([seconds / 3600.0]), increment, minimum)
    assert billed[0] * 3600 == pytest.approx(billed_seconds)


def test_pareto_mask_ties_and_duplicates() -> None:
    cost = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 0.5])
    time = np.array([5.0, 5.0, 4.0, 5.0, 1.0, 9.0])
    assert pareto_mask(cost, time).tolist() == [True, True, True, False, True, True]
    assert pareto_mask(np.zeros(0), np.zeros(0)).tolist() == []


def test_riskier_spot_bucket_costs_more() -> None:
    rows = [
        make_offer(instance_type=f"t{i}", zone="", spot_interruption=bucket, availability="spot-only")
        for i, bucket in enumerate(SPOT_INTERRUPTION_BUCKETS)
    ]
    result = rank("llama-3-8b", catalog=pd.DataFrame(rows), estimator=FakeEstimator(), tokens=1e9, pricing="spot")
    by_type = result.table.set_index("instance_type")
    order = [f"t{i}" for i in range(len(rows))]
    interruptions = by_type["expected_interruptions"].reindex(order).to_numpy(dtype=float).tolist()
    times = by_type["time_to_solution_hours"].reindex(order).to_numpy(dtype=float).tolist()
    assert interruptions == sorted(interruptions) and interruptions[0] < interruptions[-1]
    assert times == sorted(times)


def test_longer_checkpoint_interval_means_more_rework() -> None:
    catalog = pd.DataFrame([make_offer(spot_interruption=">20%")])
    short, long = (
        rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=1e10, pricing="spot",
             checkpoint_interval_hours=hours).table.iloc[0]
        for hours in (0.25, 4.0)
    )  # fmt: skip
    assert long["time_to_solution_hours"] > short["time_to_solution_hours"]
    assert long["cost_usd"] >= short["cost_usd"]


def test_spot_that_would_never_finish_is_excluded() -> None:
    catalog = pd.DataFrame([make_offer(spot_interruption=">20%", availability="spot-only")])
    result = rank(
        "llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=1e12, pricing="spot",
        checkpoint_interval_hours=2000.0, restart_overhead_hours=2000.0,
    )  # fmt: skip
    assert result.empty
    assert "never finish" in str(result.message)
    assert (result.excluded["reason"].str.contains("never finish")).all()
