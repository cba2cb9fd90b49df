"""Ranking speed: `rank` on the bundled catalog and on 100k synthetic offerings; whole `gpuplan rank` vs the floor.

Run: .venv/bin/python bench/rank.py
Targets (issue 37): 100k offerings median <= 60 ms in-process for one workload (catalog frame passed in);
whole-process `gpuplan rank --format csv` at most 1.3x the floor `python -c "import pandas; <read the snapshot>"`.
On a shared machine the CPU time beside each median says how much of the wall time was the ranking's own.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import median_ms, paired_seconds, synthetic  # noqa: E402

from planner.api import load_catalog, rank  # noqa: E402

JOB: dict[str, Any] = {"tokens": 2e9}
CLI_JOB = ["--workload", "llama-3-8b", "--tokens", "2e9"]


def cpu_ms(catalog: Any, repeat: int = 11, **options: Any) -> float:
    """Median CPU time of this process per ranking of ``catalog``, ms: what the wall time is on an idle core."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        rank("llama-3-8b", catalog=catalog, **JOB, **options)
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GPUPLAN_HOME": home}
        os.environ["GPUPLAN_HOME"] = home
        catalog = load_catalog()
        print(f"bundled catalog: {len(catalog):,} offerings")
        ms = median_ms(lambda: rank("llama-3-8b", catalog=catalog, **JOB))
        options = len(rank("llama-3-8b", catalog=catalog, **JOB).table)
        print(f"  rank llama-3-8b (both pricings, 1 node): median {ms:.1f} ms, {options} options")
        ms = median_ms(lambda: rank("llama-3-8b", catalog=catalog, max_nodes=4, **JOB))
        print(f"  rank llama-3-8b --max-nodes 4: median {ms:.1f} ms")

        big = synthetic(catalog, 100_000)
        print(f"synthetic catalog: {len(big):,} offerings")
        ms, cpu = median_ms(lambda: rank("llama-3-8b", catalog=big, **JOB), repeat=11), cpu_ms(big)
        print(f"  rank llama-3-8b: median {ms:.1f} ms, CPU {cpu:.1f} ms (target <= 60 ms)")
        ms = median_ms(lambda: rank("llama-3-8b", catalog=big, deadline_hours=24, top=20, **JOB), repeat=11)
        cpu = cpu_ms(big, deadline_hours=24, top=20)
        print(f"  rank llama-3-8b --deadline-hours 24 --top 20: median {ms:.1f} ms, CPU {cpu:.1f} ms")

        python = sys.executable
        argv = [python, "-m", "planner", "rank", *CLI_JOB, "--format", "csv"]
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)  # seeds the store once
        floor, cli = paired_seconds(argv, env)
        print(f"floor (python + pandas + read snapshot): {floor * 1000:.0f} ms")
        print(f"gpuplan rank {' '.join(CLI_JOB)} --format csv: {cli * 1000:.0f} ms")
        print(f"  ratio to floor: {cli / floor:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
