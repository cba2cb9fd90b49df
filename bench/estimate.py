"""Speed of the performance model.

    .venv/bin/python bench/estimate.py

Prints the median in-process time of one ``estimate()`` over a spread of workloads and GPU counts (with the result
cache cleared before each call, so every call does the full layout search; only the layout templates of a job shape
and GPU count, which no GPU or fitted parameter changes, are kept between calls, as a ranking keeps them), and the
whole-process wall time of ``gpuplan estimate ... --format json`` (median of a few runs).
Targets: under 1 ms and under 1 s.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.perf import model  # noqa: E402

CASES = [
    ("resnet50", "A100-80GB", 8, "fp16"),
    ("bert-large", "L4", 1, "bf16"),
    ("llama-2-7b", "H100-SXM", 8, "bf16"),
    ("llama-2-7b", "H100-SXM", 64, "fp8"),
    ("llama-2-70b", "A100-80GB", 32, "bf16"),
    ("llama-3.1-405b", "H200", 256, "bf16"),
    ("mpt-7b", "L40S", 4, "bf16"),
    ("gpt3-175b", "B200", 1024, "bf16"),
    # Data-parallel CNN across nodes, and a configuration that does not fit (searches the minimum GPU count).
    ("resnet50", "H100-SXM", 64, "bf16"),
    ("llama-2-70b", "L4", 1, "bf16"),
]


def in_process(repeats: int = 30) -> dict[str, float]:
    timings: list[float] = []
    for _ in range(repeats):
        for workload, gpu, gpus, precision in CASES:
            model.clear_caches()
            started = time.perf_counter()
            model.estimate(workload, gpu, gpus, precision)
            timings.append(time.perf_counter() - started)
    cached: list[float] = []
    for workload, gpu, gpus, precision in CASES * repeats:
        started = time.perf_counter()
        model.estimate(workload, gpu, gpus, precision)
        cached.append(time.perf_counter() - started)
    return {
        "estimate_median_ms": statistics.median(timings) * 1e3,
        "estimate_p90_ms": sorted(timings)[int(0.9 * len(timings))] * 1e3,
        "estimate_cached_median_ms": statistics.median(cached) * 1e3,
    }


def whole_process(repeats: int = 5) -> dict[str, float]:
    gpuplan = ROOT / ".venv" / "bin" / "gpuplan"
    command = [str(gpuplan)] if gpuplan.exists() else [sys.executable, "-m", "planner"]
    if shutil.which(command[0]) is None and not Path(command[0]).exists():
        command = [sys.executable, "-m", "planner"]
    args = [*command, "estimate", "--workload", "llama-2-7b", "--gpu", "H100", "--gpus", "16", "--format", "json"]
    timings: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
        timings.append(time.perf_counter() - started)
    return {"cli_median_s": statistics.median(timings), "cli_max_s": max(timings)}


def main() -> None:
    figures = {**in_process(), **whole_process()}
    for key, value in figures.items():
        print(f"{key:28s} {value:10.3f}")
    print(json.dumps({key: round(value, 4) for key, value in figures.items()}))


if __name__ == "__main__":
    main()
