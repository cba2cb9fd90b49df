"""The TPU station: memory fit against a chip's HBM, the mesh over ICI and DCN, the Estimate it answers with, what it
refuses, and the sealed share of its calibration data."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.perf.model import estimate
from planner.perf.tpu_step import GIB, Mesh, default_tpu_params, memory_bytes, step_time, tpu_chips, usable_bytes
from planner.perf.workloads import resolve_workload

DATA = Path(__file__).resolve().parents[2] / "data"


def test_a_model_larger_than_a_v5e_chip_is_refused_then_sharded() -> None:
    # Llama 3 70B's training state alone is 16 bytes x 70.6e9 = 1.1 TB: no 8 chips of 16 GiB hold it.
    small = estimate("llama-3-70b", "TPU-v5e", 8)
    assert not small.fits_in_memory and small.throughput is None and small.energy_kwh is None
    assert small.memory_per_gpu_gib > small.gpu_memory_gib == 16
    assert small.why_not_fits is not None and "HBM" in small.why_not_fits
    assert small.min_gpus_to_fit is not None and small.min_gpus_to_fit > 8
    # On the fewest chips the station names, FSDP shards it into each chip's HBM.
    fits = estimate("llama-3-70b", "TPU-v5e", small.min_gpus_to_fit)
    assert fits.fits_in_memory and fits.memory_per_gpu_gib <= 16
    assert fits.parallelism["fsdp"] * fits.parallelism["tensor"] == small.min_gpus_to_fit


def test_one_v5e_chip_cannot_hold_an_8b_model_but_a_v5p_slice_can() -> None:
    assert not estimate("llama-3-8b", "TPU-v5e", 1).fits_in_memory
    assert estimate("llama-3-8b", "TPU-v5p", 8).fits_in_memory


def test_state_is_sharded_over_the_slice_and_replicated_across_slices() -> None:
    wl = resolve_workload("llama-3-70b")
    one = memory_bytes(wl, Mesh(1, 256, 1, 1, "full"))
    two = memory_bytes(wl, Mesh(2, 256, 1, 1, "full"))
    half = memory_bytes(wl, Mesh(1, 128, 1, 1, "full"))
    assert one == two < half


def test_a_v5p_slice_shards_tensors_over_ici_and_uses_dcn_only_across_slices() -> None:
    wl, chip, fitted = resolve_workload("llama-3-70b"), tpu_chips()["TPU-v5p"], default_tpu_params()
    inside = step_time(wl, chip, Mesh(1, 256, 8, 8, "full"), fitted)
    across = step_time(wl, chip, Mesh(2, 256, 8, 8, "full"), fitted)
    assert inside.tensor_comm_s > 0 and inside.dcn_comm_s == 0
    # The tensor axis stays inside a slice: a second slice adds DCN traffic and nothing to the tensor collectives.
    assert across.tensor_comm_s == inside.tensor_comm_s and across.dcn_comm_s > 0
    # A whole-slice estimate: one slice, no DCN; two slices of 256: data parallel over DCN between them.
    single = estimate("llama-3-70b", "TPU-v5p", 256)
    assert single.parallelism["slices"] == 1 and single.parallelism["data_over"] == "none"
    assert single.parallelism["tensor_over"] == "ici" and single.interconnect == "ici"
    split = estimate("llama-3-70b", "TPU-v5p", 512, gpus_per_node=256)
    assert split.parallelism["slices"] == 2 and split.parallelism["data_over"] == "dcn"
    assert split.parallelism["chips_per_slice"] == 256 and 256 % split.parallelism["tensor"] == 0


def test_a_count_beyond_the_largest_slice_runs_as_slices() -> None:
    found = estimate("llama-3-8b", "TPU-v6e", 1024)
    assert (found.parallelism["slices"], found.parallelism["chips_per_slice"]) == (4, 256)


def test_a_tpu_estimate_has_the_fields_of_a_gpu_one() -> None:
    found = estimate("llama-3-8b", "TPU-v6e", 256)
    assert found.gpu == "TPU-v6e" and found.gpus == 256 and found.precision == "bf16" and found.fits_in_memory
    assert found.throughput is not None and found.throughput_per_gpu == pytest.approx(found.throughput / 256)
    assert found.throughput_low is not None and found.throughput_high is not None
    assert found.throughput_low < found.throughput < found.throughput_high
    assert found.mfu is not None and 0.2 < found.mfu < 0.9
    assert found.time_to_solution_hours == pytest.approx(found.work / found.throughput / 3600)
    # Energy from the chips' power (data/tpus.csv), nothing else.
    power_w = tpu_chips()["TPU-v6e"].system_power_w
    assert power_w is not None
    assert found.energy_kwh == pytest.approx(power_w * 256 * found.time_to_solution_hours / 1000)
    assert found.memory_per_gpu_gib <= usable_bytes(tpu_chips()["TPU-v6e"]) / GIB
    assert any("MaxText" in line for line in found.assumptions) and found.gpu_calibrated


def test_no_energy_where_google_publishes_no_power() -> None:
    found = estimate("llama-3-8b", "TPU-v5p", 64)
    assert found.throughput is not None and found.energy_kwh is None
    assert any("publishes no power" in line for line in found.assumptions)


def test_more_hbm_bandwidth_per_flop_gives_a_higher_mfu() -> None:
    # Trillium has the most FLOPs per byte of HBM bandwidth: the published MaxText runs reach a lower MFU on it
    # (about 45%) than on v5p (about 70%), and so does the model.
    trillium = estimate("llama-3-70b", "TPU-v6e", 256).mfu
    v5p = estimate("llama-3-70b", "TPU-v5p", 256).mfu
    assert trillium is not None and v5p is not None and trillium < v5p


@pytest.mark.parametrize(
    ("workload", "options", "field"),
    [
        ("resnet50", {}, "workload"),
        ("bert-large", {}, "workload"),
        ("llama-3-8b", {"precision": "fp8"}, "precision"),
        ("llama-3-8b", {"mode": "lora"}, "mode"),
        ("llama-3-8b", {"efficiency": 0.5}, "efficiency"),
        ("llama-3-8b", {"seq_len": 131072}, "seq_len"),
        ("llama-3-8b", {"gpus_per_node": 512}, "gpus_per_node"),
    ],
)
def test_what_has_no_tpu_evidence_is_refused_with_its_field(
    workload: str, options: dict[str, object], field: str
) -> None:
    with pytest.raises(InputError) as raised:
        estimate(workload, "TPU-v6e", 256, **options)  # type: ignore[arg-type]
    assert raised.value.field == field


def _sources(path: Path) -> set[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["source"] for row in csv.DictReader(handle) if row["use"] == "true"}


def test_the_sealed_share_is_the_seeded_quarter_of_the_sources() -> None:
    # scripts/fit_tpu.py --seal: the sorted sources, random.Random(41).sample of a quarter; no source in both files.
    fitted, sealed = _sources(DATA / "tpu_runs.csv"), _sources(DATA / "sealed" / "tpu_runs.csv")
    assert fitted and sealed and not fitted & sealed
    everything = sorted(fitted | sealed)
    assert set(random.Random(41).sample(everything, round(len(everything) / 4))) == sealed


def test_every_calibration_row_is_sourced_and_not_mlperf() -> None:
    for path in (DATA / "tpu_runs.csv", DATA / "sealed" / "tpu_runs.csv"):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                assert row["source"] and row["source_date"] and row["licence"]
                assert "mlperf" not in row["source"].lower() and "torchtitan" not in row["source"].lower()
                assert row["use"] == "true" or row["excluded_reason"]
