"""How well ``estimate()``'s memory model knows what fits: Lambda's batch sizes against the largest one-pass batch.

Lambda's deeplearning-benchmark ran each GPU at a batch sized to its memory (BERT-Large in FP16: 28 sequences on a
24 GB card, 64 on 48 GB, 112 on 80 GB; half that in TF32), so its batches sit near the largest that fit. For every
single-GPU configuration this asks ``estimate()``, as a user would (workload, GPU, precision, sequence length, global
batch), for the largest global batch it still runs in one micro-batch, and prints Lambda's batch over that limit:
near 1 is a memory model that knows what fits; well under 1 is one that would let a user plan a batch that runs out
of memory (or assume a step without gradient accumulation that the GPU cannot take). Above 1 is a batch that ran and
the model splits. timm's ResNet-50 batches on the 24 GB RTX 3090 and 4090 (data/timm_runs.csv) are printed after
Lambda's: the same question of a second source.

    .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import perflab
from perflab import Benchmark

from planner.perf import model
from planner.perf.workloads import Workload, get_workload


def _one_pass(workload: Workload, gpu: str, precision: str, batch: int) -> bool:
    result = model.estimate(dataclasses.replace(workload, global_batch=batch), gpu, 1, precision)
    return bool(result.fits_in_memory and result.parallelism.get("micro_batch") == batch)


def largest_one_pass_batch(workload: Workload, gpu: str, precision: str, ceiling: int = 8192) -> int:
    """The largest global batch ``estimate()`` runs in a single micro-batch on one GPU (0 if none)."""
    low, high = 0, 1
    while high <= ceiling and _one_pass(workload, gpu, precision, high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _one_pass(workload, gpu, precision, middle) else (low, middle)
    return low


def _row_limit(row: Benchmark) -> int:
    return largest_one_pass_batch(perflab.user_workload(row), row.gpu.id, row.precision)


def _timm() -> dict[str, float]:
    """timm's batches (each ran) over the one-pass limit: at most 1 is a model that lets them run."""
    print("\ntimm's ResNet-50 batch (it ran) over the largest batch estimate() runs in one pass on one GPU")
    ratios: list[float] = []
    seen: set[tuple[str, str]] = set()
    for row in perflab.load_timm_checks():
        key = (row["gpu"], row["precision"])
        if key in seen:
            continue
        seen.add(key)
        batch = int(row["global_batch"])
        limit = largest_one_pass_batch(get_workload(row["workload"]), *key)
        ratios.append(batch / limit if limit else float("inf"))
        print(f"{row['workload']:11s} {key[0]:16s} {key[1]:5s} {batch:6d} {limit:6d} {ratios[-1]:6.2f}")
    return {"max": round(max(ratios), 2), "configs": len(ratios)}


def main() -> None:
    rows = perflab.load_benchmarks()
    seen: set[tuple[str, str, str]] = set()
    ratios: dict[str, list[float]] = {}
    print("Lambda's batch over the largest batch estimate() runs in one pass on one GPU")
    print(f"{'workload':11s} {'GPU':16s} {'prec':5s} {'Lambda':>6s} {'limit':>6s} {'ratio':>6s}")
    for row in rows:
        if not row.source_name.startswith("lambdal") or row.gpus != 1 or row.workload is None:
            continue
        key = (row.workload.name, row.gpu.id, row.precision)
        if key in seen:
            continue
        seen.add(key)
        limit = _row_limit(row)
        ratio = row.plan.global_batch / limit if limit else float("inf")
        ratios.setdefault(row.family, []).append(ratio)
        print(f"{key[0]:11s} {key[1]:16s} {key[2]:5s} {row.plan.global_batch:6d} {limit:6d} {ratio:6.2f}")
    summary = {
        family: {
            "median": round(statistics.median(values), 2),
            "min": round(min(values), 2),
            "max": round(max(values), 2),
            "configs": len(values),
        }
        for family, values in sorted(ratios.items())
    }
    print()
    for family, figures in summary.items():
        print(
            f"{family:8s} Lambda's batch / estimate's one-pass limit: median {figures['median']:.2f} "
            f"(range {figures['min']:.2f}-{figures['max']:.2f}, {figures['configs']} configurations)"
        )
    timm = _timm()
    print(f"timm's batch / estimate's one-pass limit: at most {timm['max']:.2f} ({timm['configs']} configurations)")
    print(json.dumps({**summary, "timm": timm}))


if __name__ == "__main__":
    main()
