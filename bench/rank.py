"""Ranking speed: `rank` on the bundled catalog and on 100k synthetic offerings; whole `gpuplan rank` vs the floor.

Run: .venv/bin/python bench/rank.py
Targets (issue 4): 100k offerings median <= 100 ms in-process for one workload; whole-process
`gpuplan rank --format csv` at most 1.5x the floor `python -c "import pandas; <read the snapshot>"`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

from planner.api import load_catalog  # noqa: E402
from planner.cost.rank import rank  # noqa: E402

JOB: dict[str, Any] = {"tokens": 2e9}
CLI_JOB = ["--workload", "llama-3-8b", "--tokens", "2e9"]


def median_ms(func: Callable[[], object], repeat: int = 21) -> float:
    """Median wall time of ``func`` in milliseconds (after one warm-up call)."""
    func()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def synthetic(base: pd.DataFrame, size: int) -> pd.DataFrame:
    """``size`` offerings: the bundled ones repeated over invented regions and zones, spot prices jittered."""
    copies = -(-size // len(base))
    frames = []
    for i in range(copies):
        frame = base.copy()
        frame["region"] = frame["region"] + f"-x{i % 40}"
        frame["zone"] = frame["zone"] + f"-{i}"
        frame["spot_price_usd_per_hour"] = frame["spot_price_usd_per_hour"] * (1 + (i % 11) / 50)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).iloc[:size].reset_index(drop=True)


def process_seconds(argv: list[str], env: dict[str, str], repeat: int = 7) -> float:
    """Median wall time of a whole process."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
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
        ms = median_ms(lambda: rank("llama-3-8b", catalog=big, **JOB), repeat=11)
        print(f"  rank llama-3-8b: median {ms:.1f} ms (target <= 100 ms)")
        ms = median_ms(lambda: rank("llama-3-8b", catalog=big, deadline_hours=24, top=20, **JOB), repeat=11)
        print(f"  rank llama-3-8b --deadline-hours 24 --top 20: median {ms:.1f} ms")

        python = sys.executable
        snapshot = sorted(str(p) for p in (REPO / "data" / "catalog").glob("*.csv"))
        floor_code = f"import pandas as pd; [pd.read_csv(p) for p in {snapshot!r}]"
        floor = process_seconds([python, "-c", floor_code], env)
        argv = [python, "-m", "planner", "rank", *CLI_JOB, "--format", "csv"]
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)  # seeds the store once
        cli = process_seconds(argv, env)
        print(f"floor (python + pandas + read snapshot): {floor * 1000:.0f} ms")
        print(f"gpuplan rank {' '.join(CLI_JOB)} --format csv: {cli * 1000:.0f} ms")
        print(f"  ratio to floor: {cli / floor:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
