"""Energy and carbon: the node power factor, PUE, the region carbon table and the co2 order."""

from __future__ import annotations

import csv
import statistics

import numpy as np
import pandas as pd
import pytest
from factories import make_offer

from cost.fakes import FakeEstimator, small_catalog
from planner import energy
from planner._data import data_dir
from planner.api import rank


def test_node_factor_is_fitted_on_the_measured_nodes() -> None:
    with open(data_dir() / "node_power.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    ratios = [float(r["node_power_kw"]) * 1000 / (float(r["gpus"]) * float(r["gpu_tdp_w"])) for r in rows]
    factor = energy.node_factor()
    assert factor.expected == pytest.approx(statistics.median(ratios))
    assert factor.low == pytest.approx(min(ratios)) and factor.high == pytest.approx(max(ratios))
    # An 8 x H100 node measured at 5.5-7.1 kW against 5.6 kW of GPU TDP: the factor is about 1-1.3.
    assert 1.0 < factor.expected < 1.3


def test_node_power_is_gpus_times_tdp_times_pue() -> None:
    power = energy.node_power_kw(
        ["H100-SXM", "H100-SXM", "no-such-gpu"], np.array([8.0, 8.0, 1.0]), ["aws", "gcp", "aws"]
    )
    assert power[0] == pytest.approx(8 * 0.7 * 1.135)
    assert power[1] == pytest.approx(8 * 0.7 * 1.10)
    assert np.isnan(power[2])


def test_carbon_lookup_uses_the_region_then_the_provider_average() -> None:
    assert energy.carbon_intensity("gcp", "europe-north1") == (39.32, True)
    assert energy.carbon_intensity("aws", "us-east-1") == (pytest.approx(379.07), True)
    assert energy.carbon_intensity("azure", "westus2") == (pytest.approx(322.17), True)
    value, own = energy.carbon_intensity("aws", "eu-south-2")
    assert not own and value == pytest.approx(392.78)
    assert np.isnan(energy.carbon_intensity("nowhere", "x")[0])
    assert energy.carbon_intensities(["gcp", "gcp"], ["us-central1", "us-west1"]).tolist() == [412.72, 79.23]


def test_energy_band_and_co2_in_the_ranking() -> None:
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, max_nodes=2)
    table = result.table
    assert (table["energy_low_kwh"] <= table["energy_kwh"]).all()
    assert (table["energy_kwh"] <= table["energy_high_kwh"].fillna(np.inf)).all()
    on_demand = table[(table["pricing"] == "on-demand") & (table["provider"] == "aws")].iloc[0]
    # On demand the nodes are held for the training hours only: GPUs x TDP x factor x PUE x hours.
    hours = float(result.details.loc[on_demand.name, "training_hours"])
    expected = on_demand["nodes"] * on_demand["gpus_per_node"] * 0.7 * energy.node_factor().expected * 1.135 * hours
    assert on_demand["energy_kwh"] == pytest.approx(expected)
    assert on_demand["co2_kg"] == pytest.approx(expected * 379.07 / 1000)


def test_by_co2_puts_the_cleanest_grid_first() -> None:
    catalog = pd.DataFrame(
        [
            make_offer(provider="gcp", instance_type="a3-highgpu-8g", region="us-east1", zone="us-east1-b",
                       spot_interruption=None),
            make_offer(provider="gcp", instance_type="a3-highgpu-8g", region="europe-north1", zone="europe-north1-a",
                       price_usd_per_hour=80.0, spot_interruption=None),
        ]
    )  # fmt: skip
    by_cost = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, pricing="on-demand")
    by_co2 = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, pricing="on-demand", by="co2")
    assert by_cost.table.iloc[0]["region"] == "us-east1"
    assert by_co2.table.iloc[0]["region"] == "europe-north1"
    assert by_co2.table["co2_kg"].is_monotonic_increasing
    # Same energy, grid intensity 575.77 against 39.32 g/kWh.
    ratio = by_co2.table.iloc[1]["co2_kg"] / by_co2.table.iloc[0]["co2_kg"]
    assert ratio == pytest.approx(575.77 / 39.32)
    assert "ordered by expected kgCO2e per run, then cost" in by_co2.assumptions


def test_estimate_and_rank_count_energy_the_same_way() -> None:
    """One definition: estimate gives node energy at the wall; rank multiplies it by the provider's PUE."""
    from factories import make_offer

    from planner.api import estimate, rank
    from planner.energy import provider_pue

    one = estimate("llama-3-8b", "H100-SXM", 8, tokens=2e9, interconnect="nvswitch", network_gbps=3200)
    catalog = pd.DataFrame([make_offer()])
    result = rank("llama-3-8b", catalog=catalog, tokens=2e9, pricing="on-demand", startup_overhead_hours=0.0)
    option = result.table.iloc[0]
    per_hour = option["energy_kwh"] / option["time_to_solution_hours"]
    assert per_hour == pytest.approx(one.energy_kwh / one.time_to_solution_hours * provider_pue()["aws"], rel=0.02)


@pytest.mark.parametrize(("gpu", "gpus", "work"), [("H100-SXM", 8, 2e9), ("A100-80GB", 16, None), ("L40S", 8, 1e8)])
def test_the_model_s_node_energy_is_the_one_formula_ranking_uses(gpu: str, gpus: int, work: float | None) -> None:
    # planner.energy.node_energy_kwh states GPUs x TDP x node factor x hours once; the model's estimate agrees to the
    # last bit, so the two faces of one number cannot drift apart.
    from planner import estimate
    from planner.hardware import gpu_table

    found = estimate("llama-3-8b", gpu, gpus, **({"tokens": work} if work else {}))
    assert found.energy_kwh is not None and found.time_to_solution_hours is not None
    expected = energy.node_energy_kwh(
        gpu_table()[gpu].tdp_w, gpus, found.time_to_solution_hours, energy.node_factor().expected
    )
    assert found.energy_kwh == expected
