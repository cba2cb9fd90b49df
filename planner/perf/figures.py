"""The numbers of an estimate, before any words: rate, MFU, time to solution with its evaluations, energy, the band
and what the calibration data knows of the GPU, and the memory it leaves."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.energy import node_energy_kwh, node_factor
from planner.hardware import FP4_PRECISIONS, GpuSpec
from planner.perf.evidence import short_steps_across_nodes
from planner.perf.layout import Choice, min_gpus_to_fit
from planner.perf.memory import GIB, reserved_gib, usable_bytes
from planner.perf.params import PerfParams, precision_class
from planner.perf.step import StepTiming, forward_share
from planner.perf.workloads import Workload


@dataclass(frozen=True)
class Setup:
    """Where the job runs, as the estimate reads what was asked: the precision after fallbacks, the node shape, the
    links inside a node and the network between nodes."""

    precision: str
    gpus: int
    gpus_per_node: int
    interconnect: str
    network_gbps: float
    nodes: int
    # GPUs per node the search for the fewest GPUs that fit assumes: as given, or the GPU's NVLink domain.
    fit_search_per_node: int


@dataclass(frozen=True)
class Calibration:
    """What the fit measured of this GPU and kind of model. ``gap`` is None (measured), ``"gpu"`` (nothing on this
    GPU), ``"kind"`` (other kinds of model only, ``measured_kinds``) or ``"precision"`` (this GPU, never in this
    precision, ``measured_precisions``); ``held_out`` is what the runs kept out of the fit found (typical stack, no
    evidence of the user's own). ``beyond_doublings`` is how far the GPU count lies past the largest the fit measured
    this kind of model on (0 within it), of ``measured_scale`` GPUs."""

    calibrated: bool
    gap: str | None
    known_architecture: bool
    measured_kinds: tuple[str, ...]
    held_out: Mapping[str, Any] | None
    measured_precisions: tuple[str, ...] = ()
    beyond_doublings: float = 0.0
    measured_scale: int | None = None


@dataclass(frozen=True)
class Evaluation:
    """The evaluation passes a run makes: hours, a forward pass's share of a trained sample, samples per rank."""

    hours: float
    forward_share: float
    per_rank: int
    # Seconds each pass adds whatever its size (across nodes; ``eval_fixed_s``), included in ``hours``.
    fixed_s: float = 0.0


@dataclass(frozen=True)
class Figures:
    """An estimate's numbers, rescaled by the user's evidence where given."""

    units_per_s: float
    mfu: float
    step_s: float
    hours: float
    evaluation: Evaluation | None
    node_factor: float
    energy_kwh: float
    band_low: float
    band_high: float
    calibration: Calibration
    # NVIDIA's held-out MLPerf runs where the layout takes short steps across many nodes; None elsewhere.
    scale_out: Mapping[str, Any] | None
    reserved_gib: float
    usable_gib: float
    min_gpus_to_fit: int | None


def evaluates_in_loop(wl: Workload) -> bool:
    """NVIDIA's tuned ResNet-50 and BERT recipes keep the evaluation set on the GPUs (DALI; --cache_eval_data) and
    evaluate inside the training loop: a pass costs its samples and no more (MLPerf on 316-448 nodes: ResNet-50 0.06 s
    a pass; BERT on 8 nodes, none)."""
    return wl.stack == "tuned" and wl.kind in ("cnn", "encoder")


def model_rates(wl: Workload, spec: GpuSpec, setup: Setup, timing: StepTiming) -> tuple[float, float]:
    """The model's own rate (workload units/s, all GPUs) and MFU of a step."""
    samples_per_s = timing.samples_per_step / timing.step_s
    peak_total = spec.peak_tflops(setup.precision) * 1e12 * setup.gpus
    return samples_per_s / wl.samples_per_unit, timing.model_flops_per_step / timing.step_s / peak_total


def calibration_of(
    spec: GpuSpec, wl: Workload, own_evidence: bool, fitted: PerfParams, precision: str = "", gpus: int = 1
) -> Calibration:
    """What the fit measured of ``spec`` on this kind of model, in ``precision``, at ``gpus`` GPUs."""
    measured_kinds = fitted.calibrated_kinds.get(spec.id)
    measured_precisions = fitted.calibrated_precisions.get(spec.id)
    gap: str | None = None
    if spec.id not in fitted.calibrated_gpus:
        gap = "gpu"
    elif measured_kinds is not None and wl.kind not in measured_kinds:
        gap = "kind"
    elif precision and measured_precisions is not None and precision_class(precision) not in measured_precisions:
        gap = "precision"
    measured_scale = fitted.calibrated_scale.get(wl.kind)
    beyond = math.log2(gpus / measured_scale) if measured_scale and gpus > measured_scale else 0.0
    held_out = None
    # (The user's own measurement or efficiency replaces the model's level: what held-out runs found of it is moot.)
    if gap is not None and not own_evidence and wl.stack == "typical":
        held_out = fitted.held_out_checks.get(spec.id, {}).get(wl.kind)
    return Calibration(
        calibrated=gap is None,
        gap=gap,
        known_architecture=spec.architecture in fitted.calibrated_architectures,
        measured_kinds=tuple(measured_kinds or ()),
        held_out=held_out,
        measured_precisions=tuple(measured_precisions or ()),
        beyond_doublings=beyond,
        measured_scale=measured_scale,
    )


def figures(
    wl: Workload, spec: GpuSpec, setup: Setup, choice: Choice, scale: float, own_evidence: bool, fitted: PerfParams
) -> Figures:
    """The numbers of ``choice`` on ``setup``, the model's rate times ``scale`` (the user's evidence, else 1)."""
    plan, timing = choice.plan, choice.timing
    units_per_s, mfu = model_rates(wl, spec, setup, timing)
    units_per_s *= scale
    mfu *= scale
    step = timing.step_s / scale
    # Each family's band comes from its own held-out errors (BERT's, with one calibration source, are the widest).
    band = fitted.band.get(wl.kind) or fitted.band["cnn" if not wl.is_transformer else "transformer"]
    low, high = float(band[0]), float(band[1])
    calibration = calibration_of(spec, wl, own_evidence, fitted, setup.precision, setup.gpus)
    if calibration.gap is not None or setup.precision in FP4_PRECISIONS:
        # Held out of the fit, a GPU's own errors are larger (bench/accuracy.py, leave-one-GPU-out): a wider band.
        # A precision never measured on the GPU is as far from the evidence as an unmeasured GPU; no FP4 run is in
        # the fit and no FP4 matmul ceiling is measured: as wide.
        widen = fitted.uncalibrated_band_factor
        low, high = low * widen, high * widen
    if setup.nodes > 1:
        low, high = low + 0.05, high + 0.05
    # Past the largest run the fit measured, each doubling of the GPU count adds what the held-out scale-out runs
    # needed to fall inside the band.
    extra = calibration.beyond_doublings * fitted.scale_band_per_doubling
    low, high = low + extra, high + extra
    if own_evidence:
        low, high = low / 2, high / 2
    low = min(low, 0.9)
    scale_out = fitted.scale_out_checks.get("short_steps")
    if not (scale_out and choice.fits and short_steps_across_nodes(setup.nodes, step)):
        scale_out = None
    hours = wl.total_work() / units_per_s / 3600.0
    evaluation = None
    eval_work = wl.eval_work()
    if eval_work:
        # An evaluation sample is a forward pass, at the training step's pace without its gradient all-reduce (and
        # without an input feed that paces training only). A pass's samples split over the data-parallel ranks in
        # whole samples: every rank runs as many as the busiest (173 over 128 ranks: 2 each, the time of 256).
        share = forward_share(wl)
        per_rank = math.ceil(wl.eval_samples / plan.dp)
        eval_work *= per_rank * plan.dp / wl.eval_samples
        eval_units_per_s = units_per_s * timing.step_s / timing.eval_compute_s
        eval_hours = eval_work * share / eval_units_per_s / 3600.0
        fixed = 0.0
        if setup.nodes > 1 and not evaluates_in_loop(wl):
            # Across nodes a pass costs seconds whatever its size: its launch, the loader's spin-up, the metrics'
            # all-reduce and the sync around it (``eval_fixed_s``).
            fixed = fitted.comm.get("eval_fixed_s", 0.0)
            eval_hours += wl.evaluations * fixed / 3600.0
        hours += eval_hours
        evaluation = Evaluation(eval_hours, share, per_rank, fixed)
    # Node energy at the wall, the one definition ranking uses too (planner.energy): GPUs x TDP x the node factor
    # measured on MLPerf Training nodes, which already counts CPUs, memory, network and fans at training load.
    factor = node_factor().expected
    energy = node_energy_kwh(spec.tdp_w, setup.gpus, hours, factor)
    # The need and the room both count what the framework holds outside the model (the CUDA context, NCCL's
    # workspaces), so the need is ``memory_per_gpu_gib``.
    reserved = reserved_gib(plan.communicates)
    usable_gib = usable_bytes(spec, plan.communicates) / GIB + reserved
    fewest = None
    if not choice.fits:
        fewest = min_gpus_to_fit(wl, spec, setup.precision, setup.fit_search_per_node, fitted)
    return Figures(
        units_per_s=units_per_s,
        mfu=mfu,
        step_s=step,
        hours=hours,
        evaluation=evaluation,
        node_factor=factor,
        energy_kwh=energy,
        band_low=low,
        band_high=high,
        calibration=calibration,
        scale_out=scale_out,
        reserved_gib=reserved,
        usable_gib=usable_gib,
        min_gpus_to_fit=fewest,
    )
