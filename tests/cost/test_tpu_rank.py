"""Cloud TPU slices beside GPU offerings: slice pricing (chip-hour x chips x billed hours), spot, the filter.

The pricing tests take the estimate from the fake model (a test double for the estimate only), so their expectations
are exact; ranking calls the estimator exactly as it calls planner.perf.model.estimate. The last test ranks the
bundled slices with the real estimate (the TPU station, planner.perf.tpu) beside the GPUs.
"""

from __future__ import annotations

import csv
import math
from typing import Any

import pandas as pd
import pytest

from cost.fakes import MEMORY_GIB, TOKENS_PER_GPU_S, FakeEstimator, small_catalog
from planner._data import data_dir
from planner.api import offers, rank
from planner.catalog.tpu import TPU_NOTE, TPU_SPOT_NOTE, is_tpu
from planner.catalog.validate import validate_rows
from planner.errors import InputError

TOKENS = 2e9
CHIP_TOKENS_S = 2_500.0  # the double's rate per chip, every generation


@pytest.fixture(autouse=True)
def _tpu_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    for gpu, hbm in (("TPU-v5e", 16.0), ("TPU-v5p", 95.0), ("TPU-v6e", 32.0)):
        monkeypatch.setitem(TOKENS_PER_GPU_S, gpu, CHIP_TOKENS_S)
        monkeypatch.setitem(MEMORY_GIB, gpu, hbm)


def tpu_rows(*wanted: tuple[str, str]) -> list[dict[str, Any]]:
    """Bundled TPU rows (type, zone), as the store reads them."""
    with (data_dir() / "catalog" / "gcp.csv").open(newline="", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if (r["instance_type"], r["zone"]) in wanted]
    assert len(rows) == len(wanted)
    return [dict(r) for r in validate_rows(rows).accepted]


def catalog() -> pd.DataFrame:
    slices = tpu_rows(("v5p-8", "us-central1-a"), ("v6e-8", "us-east1-d"), ("v5litepod-4", "us-central1-a"))
    return pd.concat([small_catalog(), pd.DataFrame(slices)], ignore_index=True)


def ranked(**options: Any) -> pd.DataFrame:
    return rank("llama-3-8b", catalog=catalog(), estimator=FakeEstimator(), tokens=TOKENS, **options).table


def test_a_slice_costs_chip_hour_price_times_chips_times_billed_hours() -> None:
    table = ranked(accelerator="tpu", pricing="on-demand")
    v5p = table[table["instance_type"] == "v5p-8"].iloc[0]
    # 4 chips x 2,500 tokens/s; a quarter-hour start-up is billed too; Google bills per second.
    seconds = TOKENS / (4 * CHIP_TOKENS_S) + 0.25 * 3600
    assert v5p["price_usd_per_hour"] == 16.8  # 4 chips x $4.20 per chip-hour in us-central1
    assert v5p["cost_usd"] == pytest.approx(math.ceil(seconds) / 3600 * 16.8, rel=1e-9)
    assert TPU_NOTE in v5p["notes"]
    v6e = table[table["instance_type"] == "v6e-8"].iloc[0]
    assert v6e["price_usd_per_hour"] == 21.6  # 8 x $2.70


def test_a_spot_slice_is_priced_per_chip_and_reclaimed_whole() -> None:
    table = ranked(accelerator="tpu", pricing="spot")
    v5p = table[table["instance_type"] == "v5p-8"].iloc[0]
    assert v5p["price_usd_per_hour"] == 3.12196  # 4 x $0.78049, SkyPilot's own v5p-8 row to the cent
    hours = (TOKENS / (4 * CHIP_TOKENS_S) + 0.25 * 3600) / 3600
    assert v5p["cost_usd"] > hours * 3.12196  # the expected reclaims cost rework and restarts
    assert TPU_SPOT_NOTE in v5p["notes"]


def test_a_slice_too_small_for_the_job_is_left_out_with_the_reason() -> None:
    result = rank("llama-3-8b", catalog=catalog(), estimator=FakeEstimator(), tokens=TOKENS, accelerator="tpu")
    assert "v5litepod-4" not in set(result.table["instance_type"])  # 120 GiB over 4 x 16 GiB does not fit
    assert "v5litepod-4" in set(result.excluded["instance_type"])


@pytest.mark.parametrize(("accelerator", "kinds"), [("any", {True, False}), ("gpu", {False}), ("tpu", {True})])
def test_the_accelerator_filter_in_rank_and_offers(accelerator: str, kinds: set[bool]) -> None:
    assert {is_tpu(g) for g in ranked(accelerator=accelerator)["gpu"]} == kinds
    assert {is_tpu(g) for g in offers(accelerator=accelerator, catalog=catalog())["gpu"]} == kinds


def test_a_tpu_generation_is_a_gpu_filter_value_too() -> None:
    assert set(offers(gpu="tpu-v6e", catalog=catalog())["instance_type"]) == {"v6e-8"}


def test_an_unknown_accelerator_names_the_field() -> None:
    with pytest.raises(InputError) as caught:
        offers(accelerator="fpga", catalog=catalog())
    assert caught.value.field == "accelerator" and "any, gpu, tpu" in str(caught.value)


def test_compare_sets_a_tpu_generation_beside_a_gpu() -> None:
    from planner.api import compare

    result = compare(
        "llama-3-8b", gpus=["TPU-v5p", "H100"], catalog=catalog(), estimator=FakeEstimator(), tokens=TOKENS
    )
    table = result.table
    assert {"TPU-v5p", "H100-SXM"} <= set(table["gpu"])
    assert set(table.loc[table["gpu"] == "TPU-v5p", "instance_type"]) == {"v5p-8"}


def test_bundled_slices_rank_beside_gpus_with_the_tpu_station_estimate() -> None:
    table = rank("llama-3-8b", tokens=TOKENS, pricing="on-demand", provider="gcp").table
    slices = table[table["gpu"].map(is_tpu)]
    gpus = table[~table["gpu"].map(is_tpu)]
    assert len(slices) > 10 and len(gpus) > 10
    assert (slices["time_to_solution_hours"] > 0).all() and (slices["cost_usd"] > 0).all()
    # Energy comes from the chips' published system power where Google gives one (v5p has none).
    v6e = slices[slices["gpu"] == "TPU-v6e"]
    assert len(v6e) and (v6e["energy_kwh"] > 0).all()
    # The assumptions say which software the slices are estimated for, beside the GPUs' stack.
    result = rank("llama-3-8b", tokens=TOKENS, pricing="on-demand", provider="gcp")
    assert any(line.startswith("TPU slices: a MaxText-style JAX/XLA trainer") for line in result.assumptions)
    gpu_only = rank("llama-3-8b", tokens=TOKENS, pricing="on-demand", provider="gcp", accelerator="gpu")
    assert not any(line.startswith("TPU slices") for line in gpu_only.assumptions)
    # The TPU filter keeps only slices.
    only = rank("llama-3-8b", tokens=TOKENS, pricing="on-demand", provider="gcp", accelerator="tpu").table
    assert len(only) and only["gpu"].map(is_tpu).all()
