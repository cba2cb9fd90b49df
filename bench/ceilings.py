"""How well board power bounds a GPU's matmul ceiling: each measured ceiling predicted from its peers.

A GPU with no matmul measurement of its own (the A10, the RTX 6000 Ada, the Quadro RTX cards, the H100 NVL, the RTX
PRO 4500) gets ``ceilings.power_bound``: its board power times the best FP16/BF16 TFLOP/s per watt measured on a GPU of
the same architecture and memory family. This script holds out every GPU that has a measurement, with the rows copied
from it (the same silicon), asks ``power_bound`` for it from the rest, and prints the bound over the measurement:

- near 1 (a power-limited part): the bound predicts the ceiling;
- well above 1: the GPU is held back by something else (GeForce's half-rate FP32 accumulation, clocks), and the
  bound does not bind, as intended;
- under 1: the bound would slow a GPU below what it was measured to sustain.

It also prints what ``estimate()`` uses on the GPUs without a measurement, and each GPU's measured FP32 (CUDA-core)
SGEMM rate with the derate it gives FP32 matmuls.

    .venv/bin/python bench/ceilings.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.hardware import gpu_table
from planner.perf import ceilings


def _copies(gpu: str) -> frozenset[str]:
    """The GPU and the GPUs whose ceiling row repeats its measurement (same silicon)."""
    table = ceilings.matmul_ceilings()
    value = table.get((gpu, "bf16")) or table.get((gpu, "fp16"))
    return frozenset(
        other for other in gpu_table() if (table.get((other, "bf16")) or table.get((other, "fp16"))) == value
    )


def main() -> None:
    specs = gpu_table()
    measured = {
        gpu: value
        for (gpu, precision), value in ceilings.matmul_ceilings().items()
        if precision in ("bf16", "fp16") and gpu in specs
    }
    reference_spec = specs[ceilings.REFERENCE_GPU]
    reference = (ceilings.measured_ceiling(reference_spec, "bf16") or 0.0) / reference_spec.peak_tflops("bf16")
    print("Each measured FP16/BF16 matmul ceiling against the power bound from its peers (itself and its copies out);")
    print(
        f"a GPU under the {ceilings.REFERENCE_GPU}'s share of its peak ({reference:.0%}) is held back by power and "
        "tests it"
    )
    print(f"{'GPU':20s} {'W':>5s} {'measured':>9s} {'share':>6s} {'bound':>8s} {'bound/meas':>10s}  peer")
    seen: set[frozenset[str]] = set()
    binding: list[float] = []
    for gpu, value in measured.items():
        group = _copies(gpu)
        if group in seen:
            continue
        seen.add(group)
        spec = specs[gpu]
        bound = ceilings.power_bound(spec, exclude=group)
        share = value / spec.peak_tflops("bf16")
        if bound is None:
            print(
                f"{gpu:20s} {spec.tdp_w:5.0f} {value:9.1f} {share:6.0%} {'-':>8s} {'-':>10s}  no power-limited peer of "
                "its architecture and memory"
            )
            continue
        ratio = bound.tflops / value
        # Only a GPU held back by power (under the reference GPU's share of its peak) tests the bound.
        if share < reference:
            binding.append(ratio)
        print(
            f"{gpu:20s} {spec.tdp_w:5.0f} {value:9.1f} {share:6.0%} {bound.tflops:8.1f} {ratio:10.2f}  {bound.peer} "
            f"({bound.tflops_per_watt:.2f} TFLOP/s/W)"
        )
    print()
    print("GPUs with no measured ceiling, as estimate() now sees them")
    for spec in specs.values():
        if ceilings.measured_ceiling(spec, "bf16") is not None:
            continue
        bound = ceilings.power_bound(spec)
        precision = "bf16" if spec.bf16_supported else "fp16"
        origin = ceilings.ceiling_origin(spec, precision)
        shown = f"{bound.tflops:.1f} TFLOP/s" if bound is not None else "no peer"
        print(
            f"{spec.id:20s} {shown:>14s}  derate {ceilings.matmul_derate(spec, precision):.2f}  {origin or 'not bound'}"
        )
    print()
    print("FP32 matmuls (CUDA cores), measured SGEMM rate over the FP32 peak, and the derate estimate() applies")
    fp32_shares = []
    for spec in specs.values():
        fp32 = ceilings.measured_ceiling(spec, "fp32")
        if fp32 is None:
            continue
        fp32_shares.append(fp32 / spec.fp32_tflops)
        print(
            f"{spec.id:20s} {fp32:6.1f} of {spec.fp32_tflops:5.1f} TFLOP/s ({fp32 / spec.fp32_tflops:4.0%})  derate "
            f"{ceilings.matmul_derate(spec, 'fp32'):.2f}"
        )
    summary = {
        "fp32_measured_gpus": len(fp32_shares),
        "fp32_share_range": [round(min(fp32_shares), 2), round(max(fp32_shares), 2)] if fp32_shares else None,
        "power_limited_checks": len(binding),
        "bound_over_measured_median": round(statistics.median(binding), 3) if binding else None,
        "bound_over_measured_range": [round(min(binding), 3), round(max(binding), 3)] if binding else None,
    }
    print()
    print(
        f"power-limited GPUs predicted from their peers: {summary['power_limited_checks']}, bound / measured median "
        f"{summary['bound_over_measured_median']} (range {summary['bound_over_measured_range']})"
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
