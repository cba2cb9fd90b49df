"""Reading a day of a node's GPU metrics in bounded memory: peak Python memory (tracemalloc) and time.

Generates, in a temporary folder, a day-long log of 8 GPUs sampled every second (86,400 s) as ``dcgmi dmon``
prints it (691,200 GPU rows) and, with ``--prometheus``, as saved DCGM exporter scrapes with clock timestamps
(6 metrics x 8 GPUs x 86,400 s: 4.1 M samples); then reads each through ``planner.runlogs`` into the utilisation
report and prints the file's size, the seconds taken and the peak memory the read allocated. Bounded memory means
the peak stays near a megabyte whatever the file's length (compare ``--seconds 8640``).

    .venv/bin/python bench/runlogs.py [--seconds 86400] [--gpus 8] [--prometheus]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.runlogs.lines import LogSource
from planner.runlogs.readers import gpu_samples
from planner.runlogs.report import UtilisationAccumulator, UtilisationReport

HEADER = "#Entity   GPUTL  SMACT  TENSO  DRAMA  FBUSD  POWER\nID                                      MB      W\n"
EPOCH_MS = 1_763_647_200_000  # 2025-11-20 14:00 UTC


def _busy(second: int) -> bool:
    # An hour of evaluation pauses: 5 minutes idle every 2 hours, as a run that evaluates on its training GPUs.
    return second % 7200 >= 300


def write_dmon(path: Path, seconds: int, gpus: int) -> None:
    rng = random.Random(1)
    with path.open("w") as out:
        for second in range(seconds):
            if second % 20 == 0:
                out.write(HEADER)  # dcgmi repeats its header
            busy = _busy(second)
            for gpu in range(gpus):
                util = rng.choice((96, 98, 100)) if busy else 0
                sm = 0.7 + rng.random() * 0.1 if busy else 0.0
                out.write(
                    f"GPU {gpu}     {util:<5}  {sm:.3f}  {sm * 0.6:.3f}  {0.4 if busy else 0.0:.3f}  "
                    f"{71234 + gpu:<6} {(610 if busy else 95) + rng.random() * 20:.3f}\n"
                )


def write_prometheus(path: Path, seconds: int, gpus: int) -> None:
    rng = random.Random(1)
    with path.open("w") as out:
        for second in range(seconds):
            stamp = EPOCH_MS + second * 1000
            busy = _busy(second)
            for gpu in range(gpus):
                labels = f'gpu="{gpu}",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"'
                sm = 0.7 + rng.random() * 0.1 if busy else 0.0
                out.write(
                    f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {rng.choice((96, 98, 100)) if busy else 0} {stamp}\n"
                    f"DCGM_FI_PROF_SM_ACTIVE{{{labels}}} {sm:.4f} {stamp}\n"
                    f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{labels}}} {sm * 0.6:.4f} {stamp}\n"
                    f"DCGM_FI_DEV_FB_USED{{{labels}}} {71234 + gpu} {stamp}\n"
                    f"DCGM_FI_DEV_FB_FREE{{{labels}}} {81559 - 71234 - gpu} {stamp}\n"
                    f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {(610 if busy else 95) + rng.random() * 20:.3f} {stamp}\n"
                )


def _read(path: Path, fmt: str) -> UtilisationReport:
    accumulator = UtilisationAccumulator()
    accumulator.add_all(gpu_samples(LogSource.from_path(path), fmt))
    return accumulator.report("H100-SXM", 700.0)


def measure(path: Path, fmt: str) -> None:
    """Time one read untraced (tracemalloc slows Python several-fold), then trace a second for the peak."""
    start = time.perf_counter()
    report = _read(path, fmt)
    seconds = time.perf_counter() - start
    tracemalloc.start()
    _read(path, fmt)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    node = report.node
    print(
        f"{fmt:<16} {path.stat().st_size / 1e6:8.1f} MB  {node.samples:>9,} GPU samples  {seconds:6.1f} s "
        f"({node.samples / seconds:,.0f} samples/s)  peak {peak / 1e6:5.2f} MB (tracemalloc)  busy "
        f"{node.busy_share:.1%}  idle {node.idle_hours:.1f} of {node.hours:.1f} GPU-hours in {node.idle_stretches} "
        f"stretches  chart points {len(report.series):,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=86_400)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--prometheus", action="store_true", help="also the DCGM exporter's text (about 0.5 GB)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        dmon = Path(folder) / "dmon.txt"
        write_dmon(dmon, args.seconds, args.gpus)
        measure(dmon, "dcgmi-dmon")
        dmon.unlink()
        if args.prometheus:
            prom = Path(folder) / "metrics.prom"
            write_prometheus(prom, args.seconds, args.gpus)
            measure(prom, "dcgm-prometheus")


if __name__ == "__main__":
    main()
