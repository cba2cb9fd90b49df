"""The performance model's entry: ``estimate()`` of throughput, time to solution, memory fit, MFU and energy of a
training job, and the ``Estimate`` it answers with.

Pure and fast (standard library only). Per GPU, one micro-batch costs compute time (hardware FLOPs over the
precision's dense peak times a fitted efficiency that grows with matrix size and micro-batch) plus memory time
(bytes that element-wise kernels move over HBM bandwidth); parallelism adds tensor-parallel traffic, the pipeline
bubble and data-parallel gradient or sharding traffic over NVLink/NVSwitch, PCIe and the network, partly overlapped
with compute. The stations: ``ceilings`` (matmul rates), ``links`` (bandwidths), ``step`` (step time), ``memory``,
``layout`` (the layout search), ``figures`` (the numbers of an answer) and ``notes`` (its words). The coefficients
are a ``PerfParams`` value (``params``), the bundled fit of ``data/perf_params.json`` unless one is passed in.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any

from planner import checks
from planner.errors import InputError, UnknownGpuError
from planner.hardware import (
    FP4_PRECISIONS,
    INTERCONNECTS,
    PRECISIONS,
    GpuSpec,
    gpu_table,
    lookup,
    resolve_gpu,
    software_stack,
    supported_precisions,
)
from planner.perf import notes as words
from planner.perf.ceilings import sustained_matmul
from planner.perf.figures import Setup, figures, model_rates
from planner.perf.layout import MAX_GPUS, choose, min_gpus_to_fit
from planner.perf.links import default_interconnect, default_network_gbps, nvlink_domain
from planner.perf.memory import GIB, trained_params
from planner.perf.options import ModelOptions
from planner.perf.params import PerfParams, default_params
from planner.perf.workloads import Workload, resolve_workload

# ``sustained_matmul`` and ``trained_params`` are read through here by planner.api and planner.cost.rank.
__all__ = ["Estimate", "clear_caches", "estimate", "sustained_matmul", "trained_params"]


@dataclass(frozen=True)
class Estimate:
    """One workload on ``gpus`` x ``gpu``: the JSON contract of ``gpuplan estimate`` plus context."""

    workload: str
    gpu: str
    gpus: int
    nodes: int
    gpus_per_node: int
    precision: str
    interconnect: str
    network_gbps: float
    # None where the configuration does not fit in memory: a number that did not happen is not shown.
    throughput: float | None
    throughput_unit: str
    throughput_per_gpu: float | None
    throughput_low: float | None
    throughput_high: float | None
    step_time_s: float | None
    time_to_solution_hours: float | None
    work: float
    work_unit: str
    memory_per_gpu_gib: float
    gpu_memory_gib: float
    fits_in_memory: bool
    why_not_fits: str | None
    min_gpus_to_fit: int | None
    mfu: float | None
    energy_kwh: float | None
    parallelism: dict[str, Any] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    # Whether data/benchmarks.csv holds measurements of this kind of model (CNN, encoder, decoder) on this GPU;
    # without them the band is wider.
    gpu_calibrated: bool = True
    calibration_note: str | None = None
    # On a GPU without such measurements, what the runs kept out of the fit found (data/lambda_v2_runs.csv, typical
    # stack): the model's median error on them in percent, positive where the model is faster than measured.
    held_out_error_pct: float | None = None
    # Where the layout takes steps under 100 ms across 8 or more nodes: the median of measured over predicted time of
    # NVIDIA's held-out MLPerf runs in that regime (data/mlperf_scale_out.csv); None elsewhere.
    slower_at_scale: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (float, int, str, bool, None, list, dict) for JSON."""
        return asdict(self)


# ---------------------------------------------------------------- input checks


def _check_precision(spec: GpuSpec, precision: str, notes: list[str], wl: Workload) -> str:
    key = str(precision).strip().lower()
    if key not in PRECISIONS:
        raise InputError(f"must be one of {', '.join(PRECISIONS)}, got {precision!r}", field="precision")
    if key in ("fp8", *FP4_PRECISIONS) and not wl.is_transformer:
        # FP8 and FP4 training are Transformer Engine's: their GEMMs replace a transformer's linear layers. No
        # framework trains convolutions in 8 or 4 bits, so there is no such CNN run to estimate (and none was measured).
        raise InputError(
            f"{key} applies to transformer workloads (Transformer Engine's {key} linear layers); {wl.name} trains in "
            "bf16, fp16, tf32 or fp32",
            field="precision",
        )
    if key == "fp8" and not spec.supports("fp8"):
        raise InputError(
            f"fp8 is not supported on {spec.id} (needs Ada, Hopper or newer); use bf16 or fp16", field="precision"
        )
    if key in FP4_PRECISIONS and not spec.supports(key):
        allowed = ", ".join(supported_precisions(spec))
        having = ", ".join(gpu.id for gpu in gpu_table().values() if gpu.supports(key))
        raise InputError(
            f"{key} is not supported on {spec.id} (FP4 tensor cores: {having}); {spec.id} allows {allowed}",
            field="precision",
        )
    if key == "bf16" and not spec.supports("bf16"):
        notes.append(f"{spec.id} has no BF16: estimated with FP16 mixed precision (same tensor-core peak)")
        return "fp16"
    if key == "tf32" and not spec.supports("tf32"):
        notes.append(f"{spec.id} has no TF32: estimated as true FP32")
        return "fp32"
    return key


def _parse_measured_on(text: str) -> tuple[GpuSpec, int]:
    name, _, count = text.partition(":")
    try:
        gpus = int(count) if count else 1
    except ValueError:
        raise InputError(
            f"must look like GPU or GPU:COUNT (e.g. A100-80GB:8), got {text!r}", field="measured_on"
        ) from None
    if gpus <= 0:
        raise InputError(f"needs a positive GPU count, got {text!r}", field="measured_on")
    try:
        return resolve_gpu(name), gpus
    except UnknownGpuError as exc:
        # The same for every configuration ranked: an input error, raised rather than listed per offering.
        raise InputError(f"names {exc}", field="measured_on") from None


# ---------------------------------------------------------------- the public function


def estimate(
    workload: str | Workload,
    gpu: str | GpuSpec,
    gpus: int = 1,
    precision: str = "bf16",
    *,
    gpus_per_node: int | None = None,
    interconnect: str | None = None,
    network_gbps: float | None = None,
    perf_params: PerfParams | None = None,
    **options: Any,
) -> Estimate:
    """Estimate ``workload`` on ``gpus`` x ``gpu`` at ``precision``.

    Options: ``measured`` (throughput in the workload's unit) with ``measured_on`` ("GPU" or "GPU:COUNT") rescales
    through the model's ratios; ``efficiency`` (MFU the user observes, 0-1) replaces the fitted one; workload fields
    (``tokens``/``work``, ``seq_len``, ``batch_per_gpu``, ``global_batch``, ``mode`` ...) override the preset.
    ``perf_params`` are the fitted coefficients (``planner.perf.params``), the bundled fit unless given.
    """
    measured = options.pop("measured", None)
    measured_on = options.pop("measured_on", None)
    efficiency = options.pop("efficiency", None)
    wl = resolve_workload(workload, **options)
    if isinstance(gpu, GpuSpec):
        spec, gpu_note = gpu, None
    else:
        resolution = lookup(str(gpu))
        spec, gpu_note = resolution.spec, resolution.note
    gpus = checks.whole("gpus", gpus, most=MAX_GPUS)
    gpus_per_node = checks.optional_whole("gpus_per_node", gpus_per_node, most=MAX_GPUS)
    if spec.accelerator_kind == "tpu":
        # A Cloud TPU has its own station (planner.perf.tpu); ``gpus`` counts chips, ``gpus_per_node`` a slice's.
        from planner.perf import tpu

        tpu_options = {"measured": measured, "measured_on": measured_on, "efficiency": efficiency}
        tpu_options.update(interconnect=interconnect, network_gbps=network_gbps)
        tpu.check_question(wl, precision, tpu_options)
        found = tpu.estimate_tpu(wl, spec, gpus, gpus_per_node)
        return replace(found, assumptions=list(found.assumptions), parallelism=dict(found.parallelism))
    if interconnect is not None:
        checks.choice("interconnect", interconnect, INTERCONNECTS)
    network_gbps = checks.optional_number("network_gbps", network_gbps)
    # The same checks as every other entry point (one wording): ModelOptions validates the user's evidence.
    ModelOptions(measured=measured, measured_on=measured_on, efficiency=efficiency)
    question = _Question(
        wl,
        spec,
        gpus,
        str(precision),
        gpus_per_node,
        interconnect,
        None if network_gbps is None else float(network_gbps),
        None if measured is None else float(measured),
        None if measured_on is None else str(measured_on),
        None if efficiency is None else float(efficiency),
        gpu_note,
    )
    cached = _estimate(question, perf_params or default_params())
    # Results are cached: hand out copies of the mutable parts so a caller cannot change the cache.
    return replace(cached, assumptions=list(cached.assumptions), parallelism=dict(cached.parallelism))


@dataclass(frozen=True)
class _Question:
    """What ``estimate`` was asked, checked: the key its answers are cached under (with the parameters)."""

    wl: Workload
    spec: GpuSpec
    gpus: int
    precision: str
    gpus_per_node: int | None = None
    interconnect: str | None = None
    network_gbps: float | None = None
    measured: float | None = None
    measured_on: str | None = None
    efficiency: float | None = None
    gpu_note: str | None = None


def _setup(question: _Question, notes: list[str], fitted: PerfParams) -> Setup:
    """Where the job runs: the precision after fallbacks, GPUs per node, links and network (notes on fallbacks)."""
    wl, spec, gpus = question.wl, question.spec, question.gpus
    gpus_per_node, interconnect, network_gbps = question.gpus_per_node, question.interconnect, question.network_gbps
    prec = _check_precision(spec, question.precision, notes, wl)
    per_node = min(gpus_per_node or min(gpus, nvlink_domain(spec)), gpus)
    link = interconnect or default_interconnect(spec)
    if link in ("nvswitch", "nvlink") and not spec.nvlink_gbps:
        notes.append(f"{spec.id} has no NVLink: {link} treated as PCIe")
        link = "pcie"
    network = network_gbps if network_gbps is not None else default_network_gbps(spec, fitted)
    return Setup(
        precision=prec,
        gpus=gpus,
        gpus_per_node=per_node,
        interconnect=link,
        network_gbps=network,
        nodes=math.ceil(gpus / per_node),
        fit_search_per_node=gpus_per_node or nvlink_domain(spec),
    )


def run_on(wl: Workload, spec: GpuSpec) -> Workload:
    """``wl`` as it runs on ``spec``: the tuned stack's factors are fitted on NVIDIA's recipes, so on a GPU whose
    vendor has no measured tuned recipe (data/software_stacks.csv) it trains as the typical stack. On MI300X, NVIDIA's
    speed-ups made the model 34.5% off on published runs and 4.6% without them (issue 39)."""
    if wl.stack == "tuned" and software_stack(spec).tuned_recipe is None:
        return replace(wl, stack="typical")
    return wl


@lru_cache(maxsize=4096)
def _estimate(question: _Question, fitted: PerfParams) -> Estimate:
    """The answer: where the job runs, the layout chosen, its numbers (``figures``), then its words (``notes``)."""
    spec, gpus = question.spec, question.gpus
    wl = run_on(question.wl, spec)
    measured, measured_on, efficiency = question.measured, question.measured_on, question.efficiency
    notes: list[str] = [question.gpu_note] if question.gpu_note else []
    setup = _setup(question, notes, fitted)
    choice = choose(
        wl, spec, setup.precision, gpus, setup.gpus_per_node, setup.interconnect, setup.network_gbps, fitted
    )
    scale = 1.0
    if efficiency is not None:
        _rate, model_mfu = model_rates(wl, spec, setup, choice.timing)
        scale = efficiency / model_mfu
        notes.append(words.efficiency_note(efficiency, model_mfu))
    elif measured is not None and measured_on is not None:
        scale = _measured_scale(wl, question.precision, measured, measured_on, notes, fitted)
    numbers = figures(wl, spec, setup, choice, scale, measured is not None or efficiency is not None, fitted)
    calibration_note = words.calibration_note(spec, wl, setup.precision, numbers)
    if calibration_note is not None:
        notes.append(calibration_note)
    notes += words.estimate_notes(wl, spec, setup, choice, numbers, fitted)
    plan = choice.plan
    ran = choice.fits

    def shown(value: float) -> float | None:
        # A configuration that does not fit never runs: no throughput, time, MFU or energy as if it did.
        return float(value) if ran else None

    held_out = numbers.calibration.held_out
    return Estimate(
        workload=wl.name,
        gpu=spec.id,
        gpus=gpus,
        nodes=setup.nodes,
        gpus_per_node=setup.gpus_per_node,
        precision=setup.precision,
        interconnect=setup.interconnect,
        network_gbps=float(setup.network_gbps),
        throughput=shown(numbers.units_per_s),
        throughput_unit=wl.throughput_unit,
        throughput_per_gpu=shown(numbers.units_per_s / gpus),
        throughput_low=shown(numbers.units_per_s * (1.0 - numbers.band_low)),
        throughput_high=shown(numbers.units_per_s * (1.0 + numbers.band_high)),
        step_time_s=shown(numbers.step_s),
        time_to_solution_hours=shown(numbers.hours),
        work=float(wl.total_work()),
        work_unit=wl.work_unit,
        memory_per_gpu_gib=float(choice.memory_bytes / GIB + numbers.reserved_gib),
        gpu_memory_gib=float(spec.memory_gib),
        fits_in_memory=choice.fits,
        why_not_fits=words.why_not_fits(wl, spec, setup, choice, numbers),
        min_gpus_to_fit=numbers.min_gpus_to_fit,
        mfu=shown(numbers.mfu),
        energy_kwh=shown(numbers.energy_kwh),
        parallelism={
            "data": plan.dp,
            "tensor": plan.tp,
            "pipeline": plan.pp,
            "sharded": plan.sharded,
            "optimizer_sharded": plan.zero1 or plan.sharded,
            "interleaved_stages": plan.vp,
            "context": plan.cp,
            "recompute": plan.recompute,
            "micro_batch": plan.micro_batch,
            "global_batch": plan.global_batch,
        },
        assumptions=words.assumptions(wl, spec, setup, choice, numbers, notes, fitted),
        gpu_calibrated=numbers.calibration.calibrated,
        calibration_note=calibration_note,
        held_out_error_pct=None if held_out is None else float(held_out["median_error_pct"]),
        slower_at_scale=None if numbers.scale_out is None else float(numbers.scale_out["ratio_median"]),
    )


def _measured_scale(
    wl: Workload, precision: str, measured: float, measured_on: str, notes: list[str], fitted: PerfParams
) -> float:
    """The user's measurement over the model's rate for the same job where it was measured (a note says so)."""
    ref_spec, ref_gpus = _parse_measured_on(measured_on)
    reference = _estimate(_Question(wl, ref_spec, ref_gpus, precision), fitted)
    if reference.throughput is None:
        raise InputError(
            f"{measured_on}: the workload does not fit there ({reference.why_not_fits}), so a measurement on it "
            "cannot be",
            field="measured_on",
        )
    scale = measured / reference.throughput
    if reference.mfu is not None and reference.mfu * scale > 1.0:
        # More model FLOPs per second than the GPUs' dense peak: not a measurement of this workload (a total given
        # per GPU, another unit, another model).
        raise InputError(
            f"{measured:g} {wl.throughput_unit} on {ref_gpus}x {ref_spec.id} would be MFU "
            f"{reference.mfu * scale:.3g}, above the GPUs' dense {precision} peak; check the unit "
            f"({wl.throughput_unit}, all {ref_gpus} GPUs together) and the workload",
            field="measured",
            related=("measured_on",),
        )
    notes.append(words.rescale_note(measured, wl, ref_gpus, ref_spec, reference.throughput, scale))
    return scale


def clear_caches() -> None:
    """Forget every cached answer (the speed benchmark times the full layout search this way)."""
    from planner.perf import tpu

    _estimate.cache_clear()
    min_gpus_to_fit.cache_clear()
    tpu.clear_caches()
