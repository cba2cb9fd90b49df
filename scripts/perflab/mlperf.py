"""MLPerf Training time-to-train: the workload a user types for each result, ``estimate()``'s answer, and the
tuned-stack constants solved on the calibration rows; what the held-out multi-node runs say at scale."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perflab.benchmarks import miss_with, read_rows
from planner._data import data_dir
from planner.perf.evidence import short_steps_across_nodes
from planner.perf.model import Estimate, estimate
from planner.perf.params import PerfParams
from planner.perf.workloads import Workload, get_workload

# NVIDIA's ResNet-50 on H100 and H200 (v4.0) set the two tuned-CNN constants (cnn.tuned_speedup and
# cnn.tuned_input_s_per_image, solved by ``solve_tuned_cnn``); Dell's BERT on H100 and H200 (v4.1, NVIDIA's recipe)
# and NVIDIA's on B200 (v5.0) the tuned encoder's three (``solve_tuned_encoder``): calibration rows, not checks.
# NVIDIA's own v4.0 H100/H200 BERT pair set them until it was drawn into the sealed set (scripts/seal.py). Keys are
# (round, benchmark, GPU, submitter).
MLPERF_CALIBRATION = {
    ("v4.0", "resnet", "H100-SXM", "NVIDIA"),
    ("v4.0", "resnet", "H200", "NVIDIA"),
    ("v4.1", "bert", "H100-SXM", "Dell"),
    ("v4.1", "bert", "H200", "Dell"),
    ("v5.0", "bert", "B200", "NVIDIA"),
}
# The H100/H200 pair that sets the tuned encoder's HBM traffic and rate.
ENCODER_PAIR = (("v4.1", "bert", "H100-SXM", "Dell"), ("v4.1", "bert", "H200", "Dell"))


def mlperf_key(row: dict[str, str]) -> tuple[str, str, str, str]:
    """An MLPerf row's (round, benchmark, GPU, submitter)."""
    return row["round"], row["benchmark"], row["gpu"], row["submitter"]


# The share of Llama-2-70B's parameters MLPerf's LoRA trains, as a user would read it off PEFT's "trainable%": rank-16
# adapters on the attention's QKV and output projections (NVIDIA's implementation, train.py: target_modules
# linear_qkv and linear_proj, lora dim 16). Per layer 16 x (8,192 + 10,240) + 16 x (8,192 + 8,192) = 557,056
# parameters, 44.6M over 80 layers: 0.065% of 69.0B.
MLPERF_LORA_SHARE = 80 * 16 * (8192 + 10240 + 8192 + 8192) / 69.0e9
# MLPerf benchmark -> (workload preset, precision, training mode). NVIDIA's submissions: MXNet ResNet-50 and PyTorch
# BERT in FP16/BF16 mixed precision; NeMo Llama-2-70B LoRA with FP8 Transformer Engine.
MLPERF_BENCHMARKS = {
    "resnet": ("resnet50", "fp16", "pretrain"),
    "bert": ("bert-large", "bf16", "pretrain"),
    "llama2_70b_lora": ("llama-2-70b", "fp8", "lora"),
}


def load_mlperf(path: Path | None = None) -> list[dict[str, str]]:
    """``data/mlperf_training.csv``: 8-GPU MLPerf Training v4.0/v4.1/v5.0 results (NVIDIA's, and Dell's v4.1)."""
    return read_rows(path or data_dir() / "mlperf_training.csv")


def load_mlperf_scale_out(path: Path | None = None) -> list[dict[str, str]]:
    """``data/mlperf_scale_out.csv``: NVIDIA's multi-node MLPerf Training results of the same benchmarks (64 to 3,584
    GPUs), in ``load_mlperf``'s columns; held out like them, and outside the 8-GPU targets."""
    return read_rows(path or data_dir() / "mlperf_scale_out.csv")


def mlperf_minutes(
    row: dict[str, str], stack: str = "tuned", perf_params: PerfParams | None = None
) -> tuple[float | None, str]:
    """Minutes ``estimate()`` predicts from run_start to run_stop, from what a user types (workload, GPU, 8 GPUs,
    precision, sequence length, the submission's global batch, LoRA's trainable share, the stack, and the evaluations
    the row's logs show), and the layout it chose."""
    return mlperf_minutes_of(mlperf_estimate(row, stack, perf_params))


def mlperf_minutes_of(result: Estimate) -> tuple[float | None, str]:
    """The minutes and the layout of an ``mlperf_estimate`` answer (None and "does not fit" where it does not)."""
    split = result.parallelism
    context = f" cp{split['context']}" if split.get("context", 1) > 1 else ""
    layout = f"tp{split['tensor']} pp{split['pipeline']}{context} dp{split['data']} mb{split['micro_batch']}"
    if result.time_to_solution_hours is None:
        return None, "does not fit"
    return result.time_to_solution_hours * 60.0, layout


def mlperf_train_rate(row: dict[str, str], result: Estimate) -> float | None:
    """``result``'s training rate (``mlperf_estimate``'s answer for ``row``) in the logs' unit, samples per second;
    None where the configuration does not fit."""
    if result.throughput is None:
        return None
    # The model counts a decoder's work in tokens; the logs count sequences of the row's length.
    return result.throughput / int(row["seq_len"]) if result.work_unit == "tokens" else result.throughput


def mlperf_rate_error(row: dict[str, str], result: Estimate) -> float | None:
    """Percent by which ``result``'s training rate is above the rate the row's logs show between evaluations
    (``train_samples_per_s``): the steady state alone, without convergence, evaluations or start-up. None where the
    row logs no rate or the configuration does not fit."""
    rate = mlperf_train_rate(row, result)
    if not row.get("train_samples_per_s") or rate is None:
        return None
    return (rate / float(row["train_samples_per_s"]) - 1.0) * 100.0


def _mlperf_workload(row: dict[str, str], stack: str) -> Workload:
    """The workload a user would type for an MLPerf row: its work the row's samples to convergence, and the
    evaluations MLPerf's clock runs between run_start and run_stop (passes and samples each, from the row's logs:
    0.4% of ResNet-50's measured time, 5-8% of BERT's, 11% of Llama-2-70B LoRA's)."""
    preset, _precision, mode = MLPERF_BENCHMARKS[row["benchmark"]]
    samples = float(row["samples_to_converge"])
    options: dict[str, Any] = {
        "stack": stack,
        "global_batch": int(row["global_batch"]),
        "evaluations": float(row["evaluations"]),
        "eval_samples": float(row["eval_samples"]),
    }
    if row["seq_len"] and preset != "resnet50":
        options["seq_len"] = int(row["seq_len"])
    if row["benchmark"] == "bert":
        # NVIDIA's BERT submissions skip padding (packed/unpadded sequences); at sequence length 512 padding is over
        # half of the Wikipedia tokens (Krell et al. 2021, arXiv:2107.02027): about 256 real tokens per sample.
        options["seq_len"] = int(row["seq_len"]) // 2
    if mode != "pretrain":
        options["mode"] = mode
    if mode == "lora":
        options["trainable_share"] = MLPERF_LORA_SHARE
    workload = get_workload(preset, **options)
    # Work in the workload's own unit: images, sequences, or tokens (samples x sequence length).
    work = samples * workload.seq_len if workload.work_unit == "tokens" else samples
    return get_workload(workload, work=work)


def mlperf_estimate(row: dict[str, str], stack: str = "tuned", perf_params: PerfParams | None = None) -> Estimate:
    """``estimate()``'s whole answer for an MLPerf row, asked as ``mlperf_minutes`` asks it (band, notes, layout),
    under the bundled fit unless ``perf_params`` are given."""
    precision = MLPERF_BENCHMARKS[row["benchmark"]][1]
    return estimate(_mlperf_workload(row, stack), row["gpu"], int(row["gpus"]), precision, perf_params=perf_params)


def _log_miss(params: dict[str, Any], section: str, key: str, value: float, row: dict[str, str]) -> float:
    """``miss_with`` on the predicted over the measured time-to-train of MLPerf ``row``: the tuned-stack solves."""

    def ratio(fitted: PerfParams) -> float:
        minutes, _layout = mlperf_minutes(row, "tuned", fitted)
        return (minutes or math.inf) / float(row["time_to_train_minutes"])

    return miss_with(params, section, key, value, ratio)


def solve_tuned_cnn(params: dict[str, Any], rows: Sequence[dict[str, str]] | None = None) -> None:
    """Set ``cnn.tuned_speedup`` and ``cnn.tuned_input_s_per_image`` in place so that the tuned stack lands on the two
    MLPerf ResNet-50 calibration rows. No benchmark row runs a tuned CNN stack, so the fit cannot: NVIDIA's
    MXNet/DALI recipe runs a multiple of the PyTorch DDP scripts Lambda measured (the speed-up, set by H100), and its
    input pipeline and launches cap a GPU at a rate that does not grow with its FLOPs (set by H200, only 1.1x an
    H100 where its HBM promises 1.4x). Each is solved by bisection on the row it governs, alternately."""
    from scipy.optimize import brentq

    table = {mlperf_key(r): r for r in rows or load_mlperf()}
    h100, h200 = (table[("v4.0", "resnet", gpu, "NVIDIA")] for gpu in ("H100-SXM", "H200"))
    cnn = params["cnn"]
    for _round in range(4):
        cnn["tuned_input_s_per_image"] = brentq(
            lambda v: _log_miss(params, "cnn", "tuned_input_s_per_image", v, h200), 1e-6, 1e-2
        )
        cnn["tuned_speedup"] = brentq(lambda v: _log_miss(params, "cnn", "tuned_speedup", v, h100), 1.0, 10.0)
    cnn["tuned_input_s_per_image"] = float(f"{cnn['tuned_input_s_per_image']:.4g}")
    cnn["tuned_speedup"] = round(float(cnn["tuned_speedup"]), 3)


def solve_tuned_encoder(params: dict[str, Any], rows: Sequence[dict[str, str]] | None = None) -> None:
    """Set the tuned encoder's three constants in place so that the tuned stack lands on three of NVIDIA's MLPerf
    BERT-Large runs. No benchmark row runs NVIDIA's BERT recipe (fused attention, packed sequences, fused element-wise
    kernels, CUDA graphs), so the fit cannot, and the decoders' tuned pair does not carry over: with it an H200 ran
    BERT 1.11x an H100 where every round measured 1.05-1.06x (half the HBM traffic the model gave it), and an H100
    8-11% slower than measured.

    - ``tuned_encoder_memory_relative`` (its share of the typical stack's element-wise HBM traffic) from v4.1's
      H200 over H100 (``ENCODER_PAIR``), two GPUs with the same tensor cores and 1.43x the bandwidth;
    - ``tuned_encoder_speedup`` (its matmul rate over the fitted typical-stack rate) from v4.1's H100;
    - ``tuned_input_s_per_token`` (the feed every Blackwell run waits for) from v5.0's B200; Hopper runs sit below
      that rate, so it moves nothing else.

    Each by bisection, in that order, until they settle (the first two move each other)."""
    from scipy.optimize import brentq

    table = {mlperf_key(r): r for r in rows or load_mlperf()}
    h100, h200 = (table[key] for key in ENCODER_PAIR)
    b200 = table[("v5.0", "bert", "B200", "NVIDIA")]
    section = params["transformer"]

    def ratio_miss(value: float) -> float:
        return _log_miss(params, "transformer", "tuned_encoder_memory_relative", value, h200) - _log_miss(
            params, "transformer", "tuned_encoder_memory_relative", value, h100
        )

    for _round in range(6):
        section["tuned_encoder_memory_relative"] = brentq(ratio_miss, 0.01, 1.0)
        section["tuned_encoder_speedup"] = brentq(
            lambda v: _log_miss(params, "transformer", "tuned_encoder_speedup", v, h100), 0.3, 3.0
        )
        section["tuned_input_s_per_token"] = brentq(
            lambda v: _log_miss(params, "transformer", "tuned_input_s_per_token", v, b200), 1e-8, 1e-4
        )
    section["tuned_encoder_memory_relative"] = round(float(section["tuned_encoder_memory_relative"]), 4)
    section["tuned_encoder_speedup"] = round(float(section["tuned_encoder_speedup"]), 4)
    section["tuned_input_s_per_token"] = float(f"{section['tuned_input_s_per_token']:.4g}")


def scale_out_checks(params: dict[str, Any], rows: Sequence[dict[str, str]] | None = None) -> dict[str, Any]:
    """What NVIDIA's multi-node MLPerf runs (held out) measured where the model's layout takes short steps across many
    nodes (``evidence.short_steps_across_nodes``): how many, their GPU counts, and measured over predicted time
    (``short_steps``). ``estimate`` says so beside the number (``planner.perf.notes.scale_out_note``)."""
    ratios: list[float] = []
    gpus: list[int] = []
    fitted = PerfParams.from_dict(params)
    for row in rows or load_mlperf_scale_out():
        result = mlperf_estimate(row, "tuned", fitted)
        if result.step_time_s is None or result.time_to_solution_hours is None:
            continue
        if short_steps_across_nodes(result.nodes, result.step_time_s):
            ratios.append(float(row["time_to_train_minutes"]) / (result.time_to_solution_hours * 60.0))
            gpus.append(int(row["gpus"]))
    if not ratios:
        return {}
    return {
        "short_steps": {
            "runs": len(ratios),
            "gpus": [min(gpus), max(gpus)],
            "ratio_low": round(min(ratios), 2),
            "ratio_high": round(max(ratios), 2),
            "ratio_median": round(statistics.median(ratios), 2),
        }
    }


def solve_scale_band(params: dict[str, Any], rows: Sequence[dict[str, str]] | None = None) -> None:
    """Set ``scale_band_per_doubling`` in place: how much each side of the band widens per doubling of the GPU count
    past the largest run the fit measured (``calibrated_scale``), so that 80% of NVIDIA's held-out multi-node MLPerf
    runs past it fall inside the band on their time to train. Each run needs the widening that brings its measured
    time to the band's edge; the value is the 80th percentile of those needs (0 where the band already holds 80%)."""
    start = dict(params, scale_band_per_doubling=0.0)
    fitted = PerfParams.from_dict(start)
    needs: list[float] = []
    for row in rows or load_mlperf_scale_out():
        result = mlperf_estimate(row, "tuned", fitted)
        scale = fitted.calibrated_scale.get(_mlperf_workload(row, "tuned").kind)
        if result.time_to_solution_hours is None or not result.throughput or not scale or int(row["gpus"]) <= scale:
            continue
        doublings = math.log2(int(row["gpus"]) / scale)
        low = 1.0 - (result.throughput_low or 0.0) / result.throughput
        high = (result.throughput_high or result.throughput) / result.throughput - 1.0
        # Measured over predicted time; the throughput band turned over is the time band: a slower run needs the
        # low side, a faster one the high side.
        ratio = float(row["time_to_train_minutes"]) / (result.time_to_solution_hours * 60.0)
        need = (1.0 - 1.0 / ratio) - low if ratio > 1.0 else (1.0 / ratio - 1.0) - high
        needs.append(max(0.0, need / doublings))
    if not needs:
        params["scale_band_per_doubling"] = 0.0
        return
    needs.sort()
    params["scale_band_per_doubling"] = round(needs[min(len(needs) - 1, math.ceil(0.8 * len(needs)) - 1)], 4)
