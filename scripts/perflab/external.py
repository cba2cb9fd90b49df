"""Runs kept out of the fit: published runs with their own layouts (``data/external_checks.csv``), NVIDIA's and
others' training tables, Lambda's second round (what ``held_out_checks`` records), and the typical CNN floor."""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.benchmarks import miss_with, read_rows, shape
from planner._data import data_dir
from planner.hardware import resolve_gpu
from planner.perf.memory import memory_bytes, usable_bytes
from planner.perf.model import Estimate, estimate
from planner.perf.params import PerfParams, default_params
from planner.perf.plan import Plan
from planner.perf.step import throughput_with_plan
from planner.perf.workloads import Workload, get_workload


@dataclass(frozen=True)
class ExternalCheck:
    """A published run that is not in the calibration data: its workload and tokens/s per GPU."""

    row: dict[str, str]
    workload: Workload
    measured_per_gpu: float


def measured_per_gpu(row: dict[str, str]) -> float:
    """Tokens/s per GPU of a published run, from tokens/s or from TFLOP/s with the authors' FLOP count."""
    value = float(row["reported_value"])
    if row["reported"] == "tokens/s total":
        return value / int(row["gpus"])
    if row["reported"].startswith("tokens"):
        return value
    layers, hidden, seq, vocab = (int(row[k]) for k in ("layers", "hidden", "seq_len", "vocab"))
    if row["reported"].startswith("hardware"):
        # Megatron-LM's count with full recomputation (Narayanan et al. 2021, eq. 3), per token.
        flops = 96.0 * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    else:
        # Model FLOPs: 6N plus attention scores, forward and backward.
        flops = 6.0 * float(row["params"]) + 12.0 * layers * hidden * seq
    return value * 1e12 / flops


def load_external_checks(path: Path | None = None, *, stack: str = "typical") -> list[ExternalCheck]:
    """Rows of ``data/external_checks.csv`` (or ``path`` in the same schema, such as ``data/published_runs.csv``),
    each reported figure turned into tokens/s per GPU; ``stack`` is the software the runs used."""
    checks = []
    with (path or data_dir() / "external_checks.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            wl = Workload(
                name=row["model"], kind="decoder", global_batch=int(row["global_batch"]), stack=stack, **shape(row)
            )
            per_gpu = measured_per_gpu(row)
            checks.append(ExternalCheck(row, wl, per_gpu))
    return checks


def layout_prediction(check: ExternalCheck, perf_params: PerfParams | None = None) -> float:
    """Tokens/s per GPU on the published layout, with the fastest micro-batch of 1, 2, 4 or 8 that fits.

    NaN where the layout uses what the model does not describe (context parallelism, interleaved pipeline stages).
    The bundled fit unless ``perf_params`` are given.
    """
    fitted = perf_params or default_params()
    row, wl = check.row, check.workload
    if int(row["context_parallel"]) > 1 or int(row["virtual_pipeline"]) > 1:
        return math.nan
    spec = resolve_gpu(row["gpu"])
    precision = row["precision"]
    gpus, tp, pp = int(row["gpus"]), int(row["tensor_parallel"]), int(row["pipeline_parallel"])
    dp, batch = gpus // (tp * pp), int(row["global_batch"])
    best = 0.0
    for recompute in (row["recompute"] == "true", True):
        for micro in (1, 2, 4, 8):
            plan = Plan(tp, pp, dp, row["sharded"] == "true", recompute, micro, batch)
            usable = usable_bytes(spec, plan.communicates)
            if batch % (dp * micro) or memory_bytes(wl, precision, plan, fitted) > usable:
                continue
            network = float(row["network_gbps"])
            total = throughput_with_plan(wl, spec, precision, plan, network_gbps=network, perf_params=fitted)
            best = max(best, total / gpus)
        if best:
            break
    return best


def estimate_prediction(check: ExternalCheck, perf_params: PerfParams | None = None) -> float:
    """Tokens/s per GPU from ``estimate`` on the same GPUs and network, choosing its own layout, with activation
    checkpointing as the publication ran it (Megatron-LM 2021 recomputed every layer)."""
    row = check.row
    workload = dataclasses.replace(check.workload, recompute="on" if row["recompute"] == "true" else "auto")
    result = estimate(
        workload,
        row["gpu"],
        int(row["gpus"]),
        row["precision"],
        network_gbps=float(row["network_gbps"]),
        perf_params=perf_params,
    )
    return math.nan if result.throughput_per_gpu is None else result.throughput_per_gpu


def load_dle_checks(path: Path | None = None) -> list[dict[str, str]]:
    """``data/dle_runs.csv``: NVIDIA's training tables for its DeepLearningExamples BERT-Large and ResNet-50 scripts
    (DGX A100 and DGX-1, 1 to 256 GPUs), a second BERT and CNN source kept out of the fit; rows with an
    ``excluded_reason`` are not comparable (LDDL-binned phase-2 sequences)."""
    return read_rows(path or data_dir() / "dle_runs.csv")


def load_timm_checks(path: Path | None = None) -> list[dict[str, str]]:
    """``data/timm_runs.csv``: ResNet-50 training on the RTX 3090 and 4090 with timm's benchmark script (one author's
    blog, 2022 and 2025 software), a second CNN source on GeForce cards, kept out of the fit; same columns as
    ``data/dle_runs.csv``."""
    return read_rows(path or data_dir() / "timm_runs.csv")


def load_lambda_v2_checks(path: Path | None = None) -> list[dict[str, str]]:
    """``data/lambda_v2_runs.csv``: Lambda's second round of the same DLE scripts (NGC containers of 2024-2025) on
    H100, H200, GH200 and B200, 1 to 8 GPUs (``scripts/lambda_v2_results.py``), kept out of the fit; same columns as
    ``data/dle_runs.csv``. One row sets the typical CNN floor (``LAMBDA_V2_CALIBRATION``)."""
    return read_rows(path or data_dir() / "lambda_v2_runs.csv")


# Lambda's B200 TF32 ResNet-50 on one GPU, the fastest typical-stack ResNet-50 per GPU outside the sealed set, sets
# ``cnn.typical_floor_s_per_image`` (``solve_typical_cnn``); every other row of data/lambda_v2_runs.csv checks it.
# (Lambda's H200 FP16 run set it until the FP16 file was drawn into the sealed set.) Keys are
# (workload, precision, GPU, GPUs).
LAMBDA_V2_CALIBRATION = {("resnet50", "tf32", "B200", "1")}


def lambda_v2_key(row: dict[str, str]) -> tuple[str, str, str, str]:
    """A Lambda round-2 row's (workload, precision, GPU, GPUs)."""
    return row["workload"], row["precision"], row["gpu"], row["gpus"]


def held_out_checks(params: dict[str, Any], rows: Sequence[dict[str, str]] | None = None) -> dict[str, Any]:
    """Per GPU and kind of model the fit has no measurement of: how many of Lambda's round-2 runs (held out, typical
    stack) measured it, and the model's median signed error on them in percent (positive: the model is faster than
    the measurement). ``estimate`` says so beside the number (``planner.perf.notes.held_out_note``)."""
    kinds = params.get("calibrated_kinds", {})
    errors: dict[tuple[str, str], list[float]] = defaultdict(list)
    counts: dict[tuple[str, str], set[int]] = defaultdict(set)
    fitted = PerfParams.from_dict(params)
    for row in rows or load_lambda_v2_checks():
        kind = get_workload(row["workload"]).kind
        if lambda_v2_key(row) in LAMBDA_V2_CALIBRATION or kind in kinds.get(row["gpu"], ()):
            continue
        predicted = table_prediction(row, perf_params=fitted)
        errors[(row["gpu"], kind)].append(predicted / float(row["throughput_total"]) - 1.0)
        counts[(row["gpu"], kind)].add(int(row["gpus"]))
    table: dict[str, Any] = {}
    for (gpu, kind), values in sorted(errors.items()):
        error = round(100 * statistics.median(values), 1)
        table.setdefault(gpu, {})[kind] = {
            "runs": len(values),
            "gpus": sorted(counts[(gpu, kind)]),
            "median_error_pct": error,
        }
    return table


def solve_typical_cnn(params: dict[str, Any], rows: Sequence[dict[str, str]] | None = None) -> None:
    """Set ``cnn.typical_floor_s_per_image`` in place so that the typical stack lands on Lambda's B200 TF32 ResNet-50
    run (``LAMBDA_V2_CALIBRATION``). No calibration row is fast enough to reach the floor, so the fit cannot see it;
    solved by bisection on that one row. Where the model without a floor already runs that row no faster than
    measured, the row does not show the floor: it is then set at that row's rate, the fastest any typical-stack
    ResNet-50 run outside the sealed set has gone per GPU (the model then never claims more)."""
    from scipy.optimize import brentq

    (row,) = [r for r in rows or load_lambda_v2_checks() if lambda_v2_key(r) in LAMBDA_V2_CALIBRATION]
    measured = float(row["throughput_total"])

    def ratio(fitted: PerfParams) -> float:
        return table_prediction(row, "typical", fitted) / measured

    def miss(value: float) -> float:
        return float(miss_with(params, "cnn", "typical_floor_s_per_image", value, ratio))

    solved = int(row["gpus"]) / measured if miss(1e-9) <= 0.0 else brentq(miss, 1e-9, 1e-2)
    params["cnn"]["typical_floor_s_per_image"] = float(f"{solved:.4g}")


def table_estimate(row: dict[str, str], stack: str = "typical", perf_params: PerfParams | None = None) -> Estimate:
    """``estimate`` for a row of ``data/dle_runs.csv``, ``data/timm_runs.csv`` or ``data/lambda_v2_runs.csv``, given
    what a user types for the run: the workload, GPU, GPU count, precision, sequence length and training mode (BERT),
    the global batch and ``stack`` (the bundled fit unless ``perf_params`` are given)."""
    options: dict[str, Any] = {"global_batch": int(row["global_batch"]), "stack": stack}
    if row["seq_len"]:
        options.update(seq_len=int(row["seq_len"]), mode=row["mode"])
    workload = get_workload(row["workload"], **options)
    network = float(row["network_gbps"]) if row["network_gbps"] else None
    return estimate(
        workload, row["gpu"], int(row["gpus"]), row["precision"], network_gbps=network, perf_params=perf_params
    )


def table_prediction(row: dict[str, str], stack: str = "typical", perf_params: PerfParams | None = None) -> float:
    """Sequences/s or images/s (all GPUs) for a table row (``table_estimate``); NaN if ``estimate`` says it does not
    fit."""
    result = table_estimate(row, stack, perf_params)
    return math.nan if result.throughput is None else float(result.throughput)


# The precision shares no calibration row informs once Lambda's FP32 file was sealed: solved on the open tables'
# rows of that precision (typical stack), each family on its own models. Keys: (section, key) -> (workloads,
# precision).
PRECISION_SHARES = {
    ("cnn", "tf32_relative"): (("resnet50",), "tf32"),
    ("cnn", "fp32_relative"): (("resnet50",), "fp32"),
    ("transformer", "tf32_relative"): (("bert-base", "bert-large"), "tf32"),
    ("transformer", "fp32_relative"): (("bert-base", "bert-large"), "fp32"),
}


def precision_share_rows(workloads: Sequence[str], precision: str) -> list[dict[str, str]]:
    """The open table rows (Lambda's round 2, NVIDIA's DLE tables, timm) of ``precision`` on ``workloads``."""
    rows = [*load_lambda_v2_checks(), *load_dle_checks(), *load_timm_checks()]
    return [
        row
        for row in rows
        if row["workload"] in workloads and row["precision"] == precision and not row.get("excluded_reason")
    ]


def _median_log_miss(
    params: dict[str, Any], section: str, key: str, value: float, rows: Sequence[dict[str, str]]
) -> float:
    """Median log of predicted over measured on ``rows`` (typical stack) with ``params[section][key]`` at ``value``
    (set in place)."""
    params[section][key] = value
    fitted = PerfParams.from_dict(params)
    return float(
        statistics.median(
            math.log(table_prediction(row, "typical", fitted) / float(row["throughput_total"])) for row in rows
        )
    )


def solve_precision_shares(params: dict[str, Any]) -> None:
    """Set each ``PRECISION_SHARES`` coefficient in place so that the median log error of the typical stack on its
    open rows is zero (bisection); a coefficient with no rows, or no root, keeps its value. No benchmark row of the
    fit runs TF32 or FP32 since the seal, so the fit leaves these at their priors; the tables' rows are the open
    evidence."""
    from scipy.optimize import brentq

    for (section, key), (workloads, precision) in PRECISION_SHARES.items():
        rows = precision_share_rows(workloads, precision)
        if not rows:
            continue
        start, low, high = params[section][key], 0.05, 3.0
        miss_low = _median_log_miss(params, section, key, low, rows)
        miss_high = _median_log_miss(params, section, key, high, rows)
        if miss_low > 0 or miss_high < 0:
            params[section][key] = start
            continue
        solved = brentq(lambda v: _median_log_miss(params, section, key, v, rows), low, high, xtol=1e-4)  # noqa: B023
        params[section][key] = round(float(solved), 4)
