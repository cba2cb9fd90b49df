"""What the speed benchmarks share: timing, a synthetic catalog, and the whole-process floor."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


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
    """``size`` offerings: the bundled ones repeated over invented regions and zones, prices jittered."""
    copies = -(-size // len(base))
    frames = []
    for i in range(copies):
        frame = base.copy()
        frame["region"] = frame["region"] + f"-x{i % 40}"
        frame["zone"] = frame["zone"] + f"-{i}"
        frame["price_usd_per_hour"] = frame["price_usd_per_hour"] * (1 + (i % 7) / 100)
        frame["spot_price_usd_per_hour"] = frame["spot_price_usd_per_hour"] * (1 + (i % 11) / 50)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).iloc[:size].reset_index(drop=True)


def process_seconds(argv: list[str], env: dict[str, str], repeat: int = 7) -> float:
    """Median wall time of a whole process (its output discarded)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def floor_argv() -> list[str]:
    """The floor a CLI command is compared with: python + pandas + reading the bundled snapshot."""
    snapshot = sorted(str(p) for p in (REPO / "data" / "catalog").glob("*.csv"))
    return [sys.executable, "-c", f"import pandas as pd; [pd.read_csv(p) for p in {snapshot!r}]"]


def paired_seconds(argv: list[str], env: dict[str, str], repeat: int = 9) -> tuple[float, float]:
    """Median wall times of the floor and of ``argv``, run alternately so that a change in the machine's load
    (two cores, shared) falls on both rather than on whichever ran second."""
    floor: list[float] = []
    command: list[float] = []
    for _ in range(repeat):
        for target, times in ((floor_argv(), floor), (argv, command)):
            start = time.perf_counter()
            subprocess.run(target, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
    return statistics.median(floor), statistics.median(command)
