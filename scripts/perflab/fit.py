"""The staged weighted least-squares fit of ``data/perf_params.json`` on the benchmarks' throughputs (numpy and
scipy, development dependencies, imported lazily)."""

from __future__ import annotations

import copy
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from perflab.benchmarks import Benchmark, predict_with
from perflab.priors import FIRM_PRIORS, FITTED, SCALE_OUT, TUNED_PRIOR_WEIGHT
from planner.hardware import PRECISIONS
from planner.perf.params import precision_class


def _weights(rows: Sequence[Benchmark]) -> list[float]:
    """Each (family, source) group weighs the same, so 1,440 vTrain rows do not drown 200 MosaicML ones."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        counts[(row.family, row.source_name)] += 1
    return [1.0 / math.sqrt(counts[(row.family, row.source_name)]) for row in rows]


def _apply(base: dict[str, Any], values: Iterable[float], names: Sequence[tuple[str, str, float, float]]) -> None:
    for (section, key, _lo, _hi), value in zip(names, values, strict=True):
        base[section][key] = float(value)


def _active(rows: Sequence[Benchmark]) -> list[tuple[str, str, float, float]]:
    """The coefficients the rows can inform (a held-out family or precision leaves its priors alone)."""
    precisions = {(("cnn" if r.family == "cnn" else "transformer"), r.precision) for r in rows}
    sections = {section for section, _ in precisions}
    multi_gpu = any(r.gpus > 1 for r in rows)
    pcie = any(r.gpus > 1 and r.interconnect == "pcie" for r in rows)
    multi_node = any(r.gpus > r.gpus_per_node for r in rows)
    active = []
    for item in FITTED:
        section, key = item[0], item[1]
        if section in ("cnn", "transformer"):
            if section not in sections:
                continue
            precision = key.removesuffix("_relative")
            if precision in PRECISIONS and (section, precision) not in precisions:
                continue
        if key == "overlap" and not multi_gpu:
            continue
        if key == "pcie_efficiency" and not pcie:
            continue
        if key == "loss_per_node_doubling" and not multi_node:
            continue
        if key in ("layer_overhead_s", "host_layer_s") and "transformer" not in sections:
            continue
        if key.startswith("tuned_") and not any(r.workload and r.workload.stack == "tuned" for r in rows):
            continue
        if key == "collective_latency_s" and not any(r.plan.tp > 1 for r in rows):
            continue
        active.append(item)
    return active


def _solve(
    params: dict[str, Any],
    names: Sequence[tuple[str, str, float, float]],
    weighted_errors: Callable[[], Any],
    prior_weight: float,
) -> None:
    """Set ``names`` in place to minimise ``weighted_errors()`` (evaluated with ``params`` as they stand), with a weak
    pull towards the values already in ``params``: it keeps coefficients the rows do not identify sensible."""
    import numpy as np
    from scipy.optimize import least_squares

    prior = np.log([params[s][k] for s, k, _lo, _hi in names])
    pull = np.asarray([max(prior_weight, FIRM_PRIORS.get((s, k), 0.0)) for s, k, _lo, _hi in names])
    lower = np.log([lo for _s, _k, lo, _hi in names])
    upper = np.log([hi for _s, _k, _lo, hi in names])

    def residuals(log_values: Any) -> Any:
        _apply(params, np.exp(log_values), names)
        return np.concatenate([weighted_errors(), pull * (log_values - prior)])

    x0 = np.clip(prior, lower + 1e-9, upper - 1e-9)
    result = least_squares(residuals, x0, bounds=(lower, upper), x_scale=1.0, diff_step=1e-3, max_nfev=400)
    _apply(params, np.exp(result.x), names)


def _least_squares(
    rows: Sequence[Benchmark],
    params: dict[str, Any],
    names: Sequence[tuple[str, str, float, float]],
    prior_weight: float = 0.01,
) -> None:
    """Fit ``names`` in place on the rows' throughputs (weighted log errors)."""
    import numpy as np

    if not names or not rows:
        return
    measured = np.log([row.throughput_total for row in rows])
    weights = np.asarray(_weights(rows))
    _solve(params, names, lambda: (np.log(predict_with(params, rows)) - measured) * weights, prior_weight)


def scale_out_steps(rows: Sequence[Benchmark]) -> list[tuple[Benchmark, Benchmark]]:
    """Pairs of one job's runs at consecutive GPU counts, the larger spanning nodes: how per-GPU throughput changes
    as a job leaves its node (same source, workload, GPU, precision, micro-batch and model-parallel layout)."""
    jobs: dict[tuple[Any, ...], list[Benchmark]] = defaultdict(list)
    for row in rows:
        if row.workload is not None:
            plan = row.plan
            key = (row.source_name, row.workload, row.gpu.id, row.precision, plan.micro_batch, plan.tp, plan.pp)
            jobs[(*key, plan.sharded)].append(row)
    steps: list[tuple[Benchmark, Benchmark]] = []
    for members in jobs.values():
        members.sort(key=lambda row: row.gpus)
        steps.extend((a, b) for a, b in itertools.pairwise(members) if a.gpus < b.gpus and b.gpus > b.gpus_per_node)
    return steps


def _least_squares_steps(
    steps: Sequence[tuple[Benchmark, Benchmark]],
    params: dict[str, Any],
    names: Sequence[tuple[str, str, float, float]],
    prior_weight: float = 0.01,
) -> None:
    """Fit ``names`` in place on the throughput ratios of scale-out steps, each source weighing the same."""
    import numpy as np

    if not names or not steps:
        return
    per_source: dict[str, int] = defaultdict(int)
    for first, _second in steps:
        per_source[first.source_name] += 1
    weights = np.asarray([1.0 / math.sqrt(per_source[first.source_name]) for first, _second in steps])
    firsts = [first for first, _second in steps]
    seconds = [second for _first, second in steps]
    measured = np.log([second.throughput_total / first.throughput_total for first, second in steps])

    def weighted_errors() -> Any:
        predicted = np.log(np.asarray(predict_with(params, seconds)) / np.asarray(predict_with(params, firsts)))
        return (predicted - measured) * weights

    _solve(params, names, weighted_errors, prior_weight)


def fit(rows: Sequence[Benchmark], start: dict[str, Any]) -> dict[str, Any]:
    """Fit in stages and return a new parameter set.

    1. The hardware and typical-software coefficients, on the typical-stack rows' throughputs.
    2. The scale-out coefficients (``SCALE_OUT``: overlap and the loss per node doubling) again, on how throughput
       changes when a job grows past its node, with the rest held: a level error of a source (its software, its
       GPU) cannot then be explained away as exposed communication, which made every multi-node estimate fall too
       steeply (MPT-7B from 8 to 512 H100s 16% against the 9% measured).
    3. The stage-1 coefficients again, with the scale-out ones held.
    4. The few ``tuned_*`` coefficients (NVIDIA's Megatron-Core/NeMo recipes), on the tuned rows with the rest held,
       so a handful of vendor-tuned runs can describe their stack without moving what the other sources measured.
    """
    params = copy.deepcopy(start)
    # Which GPUs (and generations) the fit has seen: estimates on the others carry a wider band and a note.
    params["calibrated_gpus"] = sorted({row.gpu.id for row in rows})
    params["calibrated_architectures"] = sorted({row.gpu.architecture for row in rows})
    # And which kinds of model each GPU was measured on: NVIDIA's B200 rows are all LLMs, and a BERT estimate there
    # carries other GPUs' encoder measurements over (MLPerf BERT on B200 ran 25-29% slower than that predicts).
    kinds: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        kinds[row.gpu.id].add(row.family)
    params["calibrated_kinds"] = {gpu: sorted(kinds[gpu]) for gpu in sorted(kinds)}
    # The precisions each GPU was measured in, and the largest run of each kind: past them the band widens.
    classes: dict[str, set[str]] = defaultdict(set)
    scale: dict[str, int] = defaultdict(int)
    for row in rows:
        classes[row.gpu.id].add(precision_class(row.precision))
        if row.workload is not None:
            scale[row.workload.kind] = max(scale[row.workload.kind], row.gpus)
    params["calibrated_precisions"] = {gpu: sorted(classes[gpu]) for gpu in sorted(classes)}
    params["calibrated_scale"] = dict(sorted(scale.items()))
    typical = [row for row in rows if row.workload is None or row.workload.stack == "typical"]
    tuned = [row for row in rows if row.workload is not None and row.workload.stack == "tuned"]
    level = [name for name in _active(typical) if not name[1].startswith("tuned_")]
    scale_out = [name for name in level if name[:2] in SCALE_OUT]
    _least_squares(typical, params, level)
    steps = scale_out_steps(typical)
    if steps and scale_out:
        _least_squares_steps(steps, params, scale_out)
        _least_squares(typical, params, [name for name in level if name not in scale_out])
    _least_squares(tuned, params, [n for n in _active(tuned) if n[1].startswith("tuned_")], TUNED_PRIOR_WEIGHT)
    return params
