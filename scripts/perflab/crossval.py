"""Held-out errors: each group of rows predicted by a fit without it, on the published layout and through
``estimate()`` as users call it; bands, ratio errors and the naive peak-FLOPs baseline."""

from __future__ import annotations

import copy
import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from perflab.benchmarks import Benchmark, predict, predict_with
from perflab.fit import fit
from planner.perf.model import estimate
from planner.perf.params import PerfParams, default_params
from planner.perf.workloads import Workload, get_workload


def ape(predicted: float, measured: float) -> float:
    """Absolute percentage error."""
    return abs(predicted - measured) / measured * 100.0


@dataclass(frozen=True)
class Errors:
    """Median and mean absolute percentage error over ``count`` rows."""

    median: float
    mean: float
    count: int

    @staticmethod
    def of(values: Sequence[float]) -> Errors:
        if not values:
            return Errors(math.nan, math.nan, 0)
        return Errors(float(statistics.median(values)), float(statistics.fmean(values)), len(values))


def cross_validate(
    rows: Sequence[Benchmark], start: dict[str, Any], key: Callable[[Benchmark], str]
) -> dict[int, float]:
    """Hold out each group of ``key`` in turn, fit on the rest, predict the held-out rows: row index -> prediction."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        groups[key(row)].append(index)
    predictions: dict[int, float] = {}
    for members in groups.values():
        held = set(members)
        train = [row for index, row in enumerate(rows) if index not in held]
        params = fit(train, start)
        for index, value in zip(members, predict_with(params, [rows[i] for i in members]), strict=True):
            predictions[index] = value
    return predictions


# ---------------------------------------------------------------- through estimate(), as users call it


@dataclass(frozen=True)
class Predicted:
    """``estimate()``'s total throughput for a measurement and its low/high band (NaN where it does not fit)."""

    throughput: float
    low: float
    high: float
    # Whether the GPU had measurements of this kind of model in the fit (without them the band is wider).
    calibrated: bool = True

    def covered(self, measured: float) -> bool:
        """Whether ``measured`` falls inside the band."""
        return self.low <= measured <= self.high


def user_workload(row: Benchmark, *, source_recompute: bool = True) -> Workload:
    """The job as a user types it: the preset (CNNs) or the model's shape, sequence length, training mode,
    software stack and activation checkpointing, with the global batch the source states; never the micro-batch or
    the layout. ``source_recompute=False`` leaves checkpointing to ``estimate()`` ("auto") for every job."""
    if row.workload is None:
        raise ValueError(f"row {row.source_row} of {row.source} has no modelled workload")
    if row.family == "cnn":
        return get_workload(row.workload.name, global_batch=row.plan.global_batch)
    # Activation checkpointing is a setting of the source's training script (llm-foundry's YAML, vTrain's Megatron
    # flags) that its user would type: "on" where the source ran with it, else "auto" (which never recomputes when
    # the job fits without it, as every source that did not recompute ran).
    return dataclasses.replace(
        row.workload,
        global_batch=row.plan.global_batch,
        batch_per_gpu=None,
        recompute="on" if row.plan.recompute and source_recompute else "auto",
    )


def predict_through_estimate(
    row: Benchmark, *, source_recompute: bool = True, perf_params: PerfParams | None = None
) -> Predicted:
    """``estimate()`` for the row's workload, GPU, GPU count and precision on the offering's links and network
    (the bundled fit unless ``perf_params`` are given)."""
    result = estimate(
        user_workload(row, source_recompute=source_recompute),
        row.gpu,
        row.gpus,
        row.precision,
        gpus_per_node=min(row.gpus_per_node, row.gpus),
        interconnect=row.interconnect or None,
        network_gbps=row.network_gbps,
        perf_params=perf_params or default_params(),
    )
    if result.throughput is None or result.throughput_low is None or result.throughput_high is None:
        return Predicted(math.nan, math.nan, math.nan)
    return Predicted(result.throughput, result.throughput_low, result.throughput_high, result.gpu_calibrated)


def job_key(row: Benchmark) -> tuple[Any, ...]:
    """What a user types for the row (source, workload with its global batch, GPU, count, precision, offering)."""
    return (
        row.source_name,
        user_workload(row),
        row.gpu.id,
        row.gpus,
        row.precision,
        row.gpus_per_node,
        row.interconnect,
        row.network_gbps,
    )


def fastest_layout_per_job(rows: Sequence[Benchmark]) -> list[int]:
    """Per job (``job_key``), the index of its fastest published layout: what ``estimate()``, choosing its own
    layout, is compared with (a source sweeping layouts, such as vTrain, measures many of one job)."""
    best: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(rows):
        if row.workload is None:
            continue
        key = job_key(row)
        if key not in best or row.throughput_total > rows[best[key]].throughput_total:
            best[key] = index
    return sorted(best.values())


def fold_params(fitted: dict[str, Any], bundled: dict[str, Any]) -> dict[str, Any]:
    """A fold's fitted coefficients with the bundled band widths (those come from the held-out errors themselves)."""
    params = copy.deepcopy(fitted)
    params["band"] = copy.deepcopy(bundled["band"])
    params["uncalibrated_band_factor"] = bundled.get("uncalibrated_band_factor", 1.5)
    return params


def thinned(rows: Sequence[Benchmark], cap: int | None) -> list[int]:
    """Indices of ``rows`` with every source above ``cap`` rows thinned to about ``cap`` evenly spaced ones (the
    fit's cost grows with the rows; a layout sweep such as vTrain's 1,440 rows says much the same thing 300 times)."""
    if cap is None:
        return list(range(len(rows)))
    by_source: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_source[row.source_name].append(index)
    kept: list[int] = []
    for members in by_source.values():
        step = max(1, math.ceil(len(members) / cap))
        kept.extend(members[::step])
    return sorted(kept)


class HeldOut(NamedTuple):
    """Held-out predictions per row index: on the published layout, through ``estimate()`` with what the source
    states, and through ``estimate()`` with activation checkpointing left to it."""

    layout: dict[int, float]
    through: dict[int, Predicted]
    through_auto: dict[int, Predicted]


def cross_validate_both(
    rows: Sequence[Benchmark],
    start: dict[str, Any],
    key: Callable[[Benchmark], str],
    bundled: dict[str, Any],
    *,
    fit_cap: int | None = None,
    auto_recompute: bool = False,
) -> HeldOut:
    """Hold out each group of ``key``, fit on the rest, and predict the held-out rows on their published layouts
    (``throughput_with_plan``) and through ``estimate()`` from what a user types, with and without the source's
    activation-checkpointing setting (one fit serves all three).

    ``fit_cap`` thins each source to about that many rows for fitting (every held-out row is still predicted);
    ``auto_recompute`` also predicts with activation checkpointing left to ``estimate()`` (else ``through_auto`` is
    empty)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        groups[key(row)].append(index)
    fit_pool = thinned(rows, fit_cap)
    layout: dict[int, float] = {}
    through: dict[int, Predicted] = {}
    through_auto: dict[int, Predicted] = {}
    for members in groups.values():
        held = set(members)
        fold = fold_params(fit([rows[index] for index in fit_pool if index not in held], start), bundled)
        fitted = PerfParams.from_dict(fold)
        for index in members:
            layout[index] = predict(rows[index], fitted)
            through[index] = predict_through_estimate(rows[index], perf_params=fitted)
            if auto_recompute:
                through_auto[index] = predict_through_estimate(rows[index], source_recompute=False, perf_params=fitted)
    return HeldOut(layout, through, through_auto)


def band_from_errors(rows: Sequence[Benchmark], predictions: dict[int, Predicted], family: str) -> list[float]:
    """Low/high band of ``family`` ("cnn", "encoder", "decoder", or "transformer" for both of the last two): the 90th
    percentile, per side, of how far below and above ``estimate()``'s held-out figure the measurements fell (so the
    two sides together cover about 80%)."""
    members = {"transformer": ("encoder", "decoder")}.get(family, (family,))
    selected = [
        i
        for i, row in enumerate(rows)
        if row.family in members and i in predictions and math.isfinite(predictions[i].throughput)
    ]
    if not selected:
        return [0.25, 0.25]
    ratios = [rows[i].throughput_total / predictions[i].throughput for i in selected]
    below = sorted(max(0.0, 1.0 - r) for r in ratios)
    above = sorted(max(0.0, r - 1.0) for r in ratios)

    def p90(values: list[float]) -> float:
        return round(min(0.85, max(0.05, values[int(0.9 * (len(values) - 1))])), 3)

    return [p90(below), p90(above)]


def config_key(row: Benchmark) -> tuple[Any, ...]:
    """Rows measuring the same job on different GPUs share this key (for ratio errors and the baseline)."""
    wl = row.workload
    if wl is None:
        return (row.source_name, row.source_row)
    precision_class = "mixed" if row.precision in ("fp16", "bf16") else row.precision
    if precision_class == "tf32":
        precision_class = "fp32"
    return (row.source_name, wl.name, wl.seq_len, wl.params, precision_class, row.gpus, row.plan.tp, row.plan.pp)


def baseline_predictions(rows: Sequence[Benchmark], held_out: Callable[[Benchmark], str]) -> dict[int, float]:
    """Naive baseline: the same job measured on another GPU (not in the held-out group), scaled by peak FLOPs."""
    by_config: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_config[config_key(row)].append(index)
    predictions: dict[int, float] = {}
    for index, row in enumerate(rows):
        refs = [rows[i] for i in by_config[config_key(row)] if held_out(rows[i]) != held_out(row)]
        if not refs:
            continue
        estimates = [
            ref.throughput_total * row.gpu.peak_tflops(row.precision) / ref.gpu.peak_tflops(ref.precision)
            for ref in refs
        ]
        predictions[index] = float(statistics.median(estimates))
    return predictions


def ratio_errors(rows: Sequence[Benchmark], predictions: dict[int, float]) -> list[float]:
    """Percentage error of predicted vs measured throughput ratios between GPUs for the same job."""
    by_config: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        if index in predictions:
            by_config[config_key(row)].append(index)
    errors: list[float] = []
    for members in by_config.values():
        per_gpu: dict[str, list[int]] = defaultdict(list)
        for index in members:
            per_gpu[rows[index].gpu.id].append(index)
        gpus = sorted(per_gpu)
        for a_pos, gpu_a in enumerate(gpus):
            for gpu_b in gpus[a_pos + 1 :]:
                measured_a = statistics.median(rows[i].throughput_total for i in per_gpu[gpu_a])
                measured_b = statistics.median(rows[i].throughput_total for i in per_gpu[gpu_b])
                predicted_a = statistics.median(predictions[i] for i in per_gpu[gpu_a])
                predicted_b = statistics.median(predictions[i] for i in per_gpu[gpu_b])
                errors.append(ape(predicted_a / predicted_b, measured_a / measured_b))
    return errors
