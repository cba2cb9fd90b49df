"""The TPU station's answer: ``estimate()`` sends a Cloud TPU id here and gets the same ``Estimate`` a GPU gets.

What it models: decoder transformers trained by a MaxText-style JAX/XLA trainer (FSDP and tensor sharding over the
slice's ICI torus, data parallelism over DCN between slices, a rematerialisation policy) in BF16, which is what the
published TPU measurements ran (``data/tpu_runs.csv``). CNNs, encoders, LoRA, FP8 and long-context sequence sharding
have no published TPU evidence here: they are refused with the field that asks for them, not given a number.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.hardware import GpuSpec
from planner.perf.tpu_step import (
    GIB,
    Mesh,
    TpuChip,
    TpuParams,
    TpuStep,
    choose,
    default_tpu_params,
    min_chips_to_fit,
    slice_shape,
    tpu_chips,
    usable_bytes,
)
from planner.perf.workloads import Workload

if TYPE_CHECKING:
    from planner.perf.model import Estimate

STACK_TEXT = (
    "software: a MaxText-style JAX/XLA trainer (FSDP and tensor sharding over the slice's ICI, data parallelism "
    "over DCN between slices, async collectives overlapped with compute), as Google's published TPU recipes run it"
)


def check_question(wl: Workload, precision: str, options: dict[str, Any]) -> None:
    """Refuse what the station has no evidence for, naming the field."""
    if wl.kind != "decoder":
        raise InputError(
            f"{wl.name} is a {wl.kind}: on a TPU only decoder transformers are modelled (the published TPU "
            "measurements are MaxText LLM runs); use a GPU for CNNs and encoders",
            field="workload",
        )
    if wl.mode == "lora":
        raise InputError(
            "lora is not modelled on TPUs (no published TPU LoRA runs); use pretrain or finetune", field="mode"
        )
    if str(precision).strip().lower() != "bf16":
        raise InputError(f"TPUs are estimated in bf16 only, got {precision!r}", field="precision")
    # A slice's links are its own ICI (what a catalog row of a slice says) and the DCN between slices.
    own = {"interconnect": "ici"}
    for name in ("measured", "measured_on", "efficiency", "interconnect", "network_gbps"):
        given = options.get(name)
        if given is not None and given != own.get(name):
            raise InputError("does not apply to a TPU estimate (the ICI and DCN are the chip's own)", field=name)
    if wl.seq_len > 32768:
        raise InputError(
            f"({wl.seq_len}) is beyond what the TPU station models: long sequences need sequence sharding, "
            "which it does not estimate (at most 32768)",
            field="seq_len",
        )


def estimate_tpu(
    wl: Workload, spec: GpuSpec, chips: int, slice_chips: int | None, fitted: TpuParams | None = None
) -> Estimate:
    """``wl`` on ``chips`` chips of ``spec`` (slices of ``slice_chips``, else the fewest that hold them)."""
    return _estimate(wl, spec.id, chips, slice_chips, fitted or default_tpu_params())


@lru_cache(maxsize=1024)
def _estimate(wl: Workload, tpu: str, chips: int, slice_chips: int | None, fitted: TpuParams) -> Estimate:
    from planner.perf.model import Estimate

    chip = tpu_chips()[tpu]
    if slice_chips is not None and (slice_chips > chip.max_slice_chips or chips % slice_chips):
        raise InputError(
            f"({slice_chips}) must divide the chips ({chips}) and be at most {chip.max_slice_chips}, {tpu}'s largest "
            "slice",
            field="gpus_per_node",
        )
    slices, per_slice = slice_shape(chip, chips, slice_chips)
    global_batch = None if wl.global_batch is None else max(chips, wl.global_batch)
    mesh, step, fits = choose(wl, chip, slices, per_slice, fitted, global_batch)
    tokens_per_s = mesh.batch * wl.seq_len * chips / step.step_s
    hours = wl.total_work() / tokens_per_s / 3600.0
    mfu = step.model_flops_per_chip / step.step_s / (chip.bf16_tflops * 1e12)
    energy = None if chip.system_power_w is None else chip.system_power_w * chips * hours / 1000.0
    low, high = fitted.band
    if slices > 1:
        low, high = low + 0.05, high + 0.05
    notes = _notes(wl, chip, mesh, step, fitted)

    def shown(value: float | None) -> float | None:
        return None if value is None or not fits else float(value)

    return Estimate(
        workload=wl.name,
        gpu=tpu,
        gpus=chips,
        nodes=math.ceil(chips / chip.chips_per_host),
        gpus_per_node=min(chips, chip.chips_per_host),
        precision="bf16",
        interconnect="ici",
        network_gbps=float(chip.dcn_gbps_per_chip * min(chips, chip.chips_per_host)),
        throughput=shown(tokens_per_s),
        throughput_unit=wl.throughput_unit,
        throughput_per_gpu=shown(tokens_per_s / chips),
        throughput_low=shown(tokens_per_s * (1.0 - min(low, 0.9))),
        throughput_high=shown(tokens_per_s * (1.0 + high)),
        step_time_s=shown(step.step_s),
        time_to_solution_hours=shown(hours),
        work=float(wl.total_work()),
        work_unit=wl.work_unit,
        memory_per_gpu_gib=float(step.memory_bytes / GIB),
        gpu_memory_gib=float(chip.memory_gib),
        fits_in_memory=fits,
        why_not_fits=None if fits else _why_not(wl, chip, mesh, step),
        min_gpus_to_fit=None if fits else min_chips_to_fit(wl, chip),
        mfu=shown(mfu),
        energy_kwh=shown(energy),
        parallelism=_parallelism(mesh),
        assumptions=notes,
        gpu_calibrated=tpu in fitted.record.get("calibrated_tpus", ()),
        calibration_note=None,
    )


def _parallelism(mesh: Mesh) -> dict[str, Any]:
    return {
        "data": mesh.slices,
        "tensor": mesh.tensor,
        "pipeline": 1,
        "sharded": mesh.fsdp > 1,
        "optimizer_sharded": mesh.fsdp > 1,
        "interleaved_stages": 1,
        "context": 1,
        "recompute": mesh.remat != "none",
        # Sequences a tensor group runs per step (no gradient accumulation: MaxText steps the whole batch at once).
        "micro_batch": mesh.group_batch,
        "global_batch": mesh.global_batch,
        "fsdp": mesh.fsdp,
        "slices": mesh.slices,
        "chips_per_slice": mesh.slice_chips,
        "remat_policy": mesh.remat,
        "tensor_over": "ici",
        "data_over": "dcn" if mesh.slices > 1 else "none",
    }


def _why_not(wl: Workload, chip: TpuChip, mesh: Mesh, step: TpuStep) -> str:
    return (
        f"needs {step.memory_bytes / GIB:.1f} GiB per chip with the most frugal mesh ({mesh.fsdp}-way FSDP x "
        f"{mesh.tensor}-way tensor, {mesh.remat} remat, {mesh.batch:g} sequence per chip) but a {chip.id} leaves "
        f"{usable_bytes(chip) / GIB:.1f} of its {chip.memory_gib:g} GiB HBM; use more chips"
    )


def _notes(wl: Workload, chip: TpuChip, mesh: Mesh, step: TpuStep, fitted: TpuParams) -> list[str]:
    notes = [
        STACK_TEXT,
        f"mesh: {mesh.slices} slice(s) of {mesh.slice_chips} chips; in each, {mesh.fsdp}-way FSDP x {mesh.tensor}-way "
        f"tensor sharding over ICI ({chip.torus_dims}D torus); "
        + ("data parallelism over DCN between slices" if mesh.slices > 1 else "no DCN traffic")
        + f"; {mesh.batch:g} sequence(s) of {wl.seq_len} tokens per chip per step; remat {mesh.remat}",
        "training state: FP32 weights, gradients and AdamW moments (16 bytes per parameter, MaxText's defaults), "
        "sharded over the slice",
        f"step: compute {step.compute_s:.3g} s, overlapped with the ICI collectives (tensor {step.tensor_comm_s:.3g} s "
        f"+ FSDP {step.fsdp_comm_s:.3g} s); DCN {step.dcn_comm_s:.3g} s added",
    ]
    if chip.system_power_w is None:
        notes.append(f"energy: Google publishes no power for {chip.id}, so none is estimated")
    else:
        notes.append(
            f"energy: {chip.system_power_w:.0f} W per chip, system power derived from Google's published pod power "
            "and performance-per-watt ratios (data/tpus.csv); thin evidence"
        )
    if chip.id not in fitted.record.get("calibrated_tpus", ()):
        notes.append(f"no published measurement of {chip.id} was fitted: its figures rest on its specs alone")
    if wl.stack == "tuned":
        notes.append("stack tuned names NVIDIA's recipes; a TPU runs the MaxText-style stack above")
    return notes


def clear_caches() -> None:
    _estimate.cache_clear()
