"""The matmul rate a GPU sustains: its measured ceiling (data/gpu_ceilings.csv), a bound from its board power, or
the reference GPU's share of its datasheet peak; and the operand bytes its SMs consume per clock."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from planner._data import data_dir
from planner.hardware import FP4_PRECISIONS, OPERAND_BYTES, GpuSpec, gpu_table, resolve_gpu

# A GPU's speed is its datasheet peak scaled by its measured matmul ceiling (best GEMM rate over the peak) relative
# to the A100 SXM's (271.2 of 312 TFLOP/s, data/gpu_ceilings.csv), the GPU most calibration rows ran on. Power-capped
# parts (T4, L4: about 40-60%) and the H100 (80%) sustain less of their peak; GeForce cards, which boost above their
# rated clock, more (RTX 3090: 108%).
REFERENCE_GPU = "A100-80GB"
# A GPU with no measured ceiling of its own is bounded by power: a power-capped chip's sustained matmul rate is its
# board power times the TFLOP/s per watt its generation reaches, the best measured on a power-limited GPU of the same
# architecture and memory family (HBM stacks and GDDR boards spend different shares of their power off the SMs);
# bench/ceilings.py predicts each measured one from its peers. Without a peer the bound is not used, and above the
# reference GPU's share of the peak it does not bind. Why: the RTX 6000 Ada, A10 and Quadro RTX 8000 ran slower than
# the reference share of their peaks said.


@cache
def matmul_ceilings() -> dict[tuple[str, str], float]:
    """Measured maximum achievable matmul TFLOP/s per (GPU id, precision) from ``data/gpu_ceilings.csv``."""
    table: dict[tuple[str, str], float] = {}
    with (data_dir() / "gpu_ceilings.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            table[(row["gpu"], row["precision"])] = float(row["achievable_tflops"])
    return table


@cache
def sm_tensor_rates() -> dict[str, float]:
    """Dense FP16 tensor-core FLOPs per SM per clock, per GPU id (``data/gpu_sm_rates.csv``: the architecture
    whitepapers, each checked against the datasheet peak as SMs x rate x clock)."""
    with (data_dir() / "gpu_sm_rates.csv").open(newline="", encoding="utf-8") as handle:
        rates = {row["gpu"]: float(row["tensor_flops_per_sm_clock"]) for row in csv.DictReader(handle)}
    # A memory/power variant (data/gpu_variants.csv) has its base's SMs.
    for spec in gpu_table().values():
        if spec.base is not None and spec.id not in rates and spec.base in rates:
            rates[spec.id] = rates[spec.base]
    return rates


def operand_feed(spec: GpuSpec, precision: str) -> float:
    """Operand bytes each SM's matmul units consume per clock in ``precision``, relative to the reference GPU's in
    BF16. One SM's rate is the same in FP8, BF16 and TF32 (twice the FLOPs on half the bytes); it is half on GeForce
    cards (FP32 accumulate at half rate), twice on an H100 and four times on a B200 what it is on an A100. A GPU
    without a row is taken at the reference GPU's rate."""
    rates = sm_tensor_rates()
    reference = rates[REFERENCE_GPU]
    per_sm = rates.get(spec.id, reference) * spec.peak_tflops(precision) / spec.peak_tflops("fp16")
    return per_sm * OPERAND_BYTES[precision] / (reference * OPERAND_BYTES["bf16"])


def ceiling_key(spec: GpuSpec, precision: str) -> str:
    """Which ceiling a precision runs at. FP16 and BF16 share one. TF32 tensor ops run at the same clocks and power
    limit, so without a TF32 measurement a GPU sustains the share its FP16/BF16 ceiling shows (the same database
    measures both on the H100 SXM, 81% and 80%, and the RTX 4090, 104% and 102%); on a GPU without TF32 (V100, T4)
    "TF32" runs as FP32 on the CUDA cores, at the FP32 ceiling. No FP4 matmul rate is measured yet: FP4 runs on the
    same tensor cores at the share of its peak the GPU's FP8 ceiling shows (76% on the B200, 72% on the GB200), the
    FP8 ceiling having been taken the same way from BF16's (an assumption the estimate states, with a wider band)."""
    if precision in ("fp16", "bf16"):
        return "bf16"
    if precision in FP4_PRECISIONS and (spec.id, precision) not in matmul_ceilings():
        return "fp8" if spec.fp8_tflops is not None else "bf16"
    if precision == "tf32" and (spec.id, "tf32") not in matmul_ceilings():
        return "bf16" if spec.tf32_tflops is not None else "fp32"
    return precision


def ceiling_share(spec: GpuSpec, precision: str) -> float | None:
    """Measured matmul ceiling over the datasheet peak (``ceiling_key``), a power bound (half precision only), or
    None without either.

    FP32 runs on the CUDA cores, where SGEMM reaches 90-98% of the peak on the A100 and B200 but 51-70% on Ada and
    GA102 cards (their doubled FP32 lanes share issue slots with integer work) and 37-53% on the 70 W L4 and T4
    (data/gpu_ceilings.csv, FP32 rows).
    """
    found = _ceiling(spec, precision)
    return None if found is None else found[0]


def _ceiling(spec: GpuSpec, precision: str) -> tuple[float, PowerBound | None] | None:
    """(share of the datasheet peak, the power bound it comes from, or None where it is measured), or None."""
    key = ceiling_key(spec, precision)
    peak = spec.peak_tflops(key)
    measured = measured_ceiling(spec, key)
    if measured is not None:
        return measured / peak, None
    if key == "bf16":
        bound = power_bound(spec)
        if bound is not None and bound.tflops / peak < reference_share():
            return bound.tflops / peak, bound
    return None


def ceiling_origin(spec: GpuSpec, precision: str) -> str | None:
    """Where the GPU's matmul ceiling for ``precision`` comes from, in words, or None where none applies."""
    found = _ceiling(spec, precision)
    if found is None:
        return None
    bound = found[1]
    key = ceiling_key(spec, precision)
    if bound is None and key != precision and precision in FP4_PRECISIONS:
        return f"no measured {precision} ceiling: the share its measured {key} ceiling shows, data/gpu_ceilings.csv"
    if bound is None:
        return "measured ceiling, data/gpu_ceilings.csv"
    return (
        f"no measured ceiling: bounded by its {spec.tdp_w:.0f} W board power at the {bound.tflops_per_watt:.2f} "
        f"TFLOP/s per watt measured on the {bound.peer}"
    )


def sustained_matmul(spec: GpuSpec, precision: str) -> tuple[float, str]:
    """The matmul TFLOP/s in ``precision`` the model lets the GPU sustain, and where it comes from: ``measured``,
    ``power bound (<peer>)``, or ``assumed`` (the reference GPU's share of the datasheet peak)."""
    peak = spec.peak_tflops(precision)
    found = _ceiling(spec, precision)
    if found is None:
        return peak * reference_share(reference_key(spec, precision)), "assumed"
    share, bound = found
    return peak * share, "measured" if bound is None else f"power bound ({bound.peer})"


def measured_ceiling(spec: GpuSpec, precision: str) -> float | None:
    """The GPU's own row in ``data/gpu_ceilings.csv`` (BF16 falls back to FP16), in TFLOP/s."""
    table = matmul_ceilings()
    return table.get((spec.id, precision)) or (table.get((spec.id, "fp16")) if precision == "bf16" else None)


def memory_family(spec: GpuSpec) -> str:
    """HBM or GDDR: a stack beside the die, or chips on the board with their own share of its power."""
    return "HBM" if spec.memory_type.upper().startswith("HBM") else "GDDR"


@dataclass(frozen=True)
class PowerBound:
    """A half-precision matmul bound from board power: ``tdp_w`` x the best TFLOP/s per watt of ``peer``."""

    tflops: float
    peer: str
    tflops_per_watt: float


@cache
def power_bound(spec: GpuSpec, exclude: frozenset[str] = frozenset()) -> PowerBound | None:
    """Board power times the best measured FP16/BF16 TFLOP/s per watt among the GPU's peers (same architecture and
    memory family, each with its own measured ceiling and held back by power), or None without a peer. ``exclude``
    leaves GPUs out (the bench predicts each measured ceiling from the others)."""
    best: PowerBound | None = None
    for other in gpu_table().values():
        if (
            other.id == spec.id
            or other.id in exclude
            or other.architecture != spec.architecture
            or memory_family(other) != memory_family(spec)
        ):
            continue
        ceiling = measured_ceiling(other, "bf16")
        # A GPU at or above the reference GPU's share of its peak is held back by something other than power (the
        # A10G and the GeForce cards reach their FP32-accumulate rate): its TFLOP/s per watt says nothing here.
        if ceiling is None or ceiling / other.peak_tflops("bf16") >= reference_share():
            continue
        per_watt = ceiling / other.tdp_w
        if best is None or per_watt > best.tflops_per_watt:
            best = PowerBound(per_watt * spec.tdp_w, other.id, per_watt)
    return best


def matmul_derate(spec: GpuSpec, precision: str) -> float:
    """How much of its datasheet peak a GPU sustains relative to the reference GPU (1.0 without a measurement).

    FP32 is relative to the reference GPU's FP32 share; TF32 and FP8, as before, to its BF16 share (the fitted
    ``tf32_relative`` and ``fp8_relative`` carry the rest)."""
    share = ceiling_share(spec, precision)
    if share is None:
        return 1.0
    return share / reference_share(reference_key(spec, precision))


def reference_key(spec: GpuSpec, precision: str) -> str:
    return "fp32" if ceiling_key(spec, precision) == "fp32" else "bf16"


@cache
def reference_share(precision: str = "bf16") -> float:
    share = ceiling_share(resolve_gpu(REFERENCE_GPU), precision)
    if share is None:
        raise RuntimeError(f"data/gpu_ceilings.csv must measure the reference GPU {REFERENCE_GPU} in {precision}")
    return share
