"""Accuracy and speed of the TPU station.

    .venv/bin/python bench/tpu.py

Prints, on the published TPU runs (data/tpu_runs.csv, each with its published mesh): the leave-one-source-out
median error (each source predicted by a fit without it), and how many of those held-out runs the bundled band
covers. The TPU sealed share is scored by bench/sealed.py, once per round, not here: a bench that guides changes
must not read it. Then the median time of one TPU estimate() with its caches cleared (the full mesh search; target
under 1 ms) and a TPU-vs-GPU estimate of one LLM pre-training.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import fit_tpu  # noqa: E402

from planner.perf.model import clear_caches, estimate  # noqa: E402
from planner.perf.tpu_step import TpuParams, default_tpu_params  # noqa: E402


def covered(pairs: list[tuple[fit_tpu.Run, float]], band: tuple[float, float]) -> float:
    """Share of runs whose measurement lies inside the band around the prediction."""
    low, high = band
    inside = [pred * (1 - low) <= run.measured <= pred * (1 + high) for run, pred in pairs]
    return sum(inside) / len(inside)


def signed_median_pct(pairs: list[tuple[fit_tpu.Run, float]]) -> float:
    """Median of predicted / measured - 1 in percent: positive where the model is faster than measured."""
    return 100.0 * statistics.median(pred / run.measured - 1.0 for run, pred in pairs)


def estimate_ms(repeats: int = 41) -> float:
    times = []
    for _ in range(repeats):
        clear_caches()
        start = time.perf_counter()
        estimate("llama-3-70b", "TPU-v5p", 512)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def pair(workload: str, count: int) -> dict[str, dict[str, float | None]]:
    out = {}
    for accelerator in ("TPU-v5p", "TPU-v6e", "H100-SXM"):
        found = estimate(workload, accelerator, count)
        out[accelerator] = {
            "tokens_per_s": None if found.throughput is None else round(found.throughput),
            "hours": None if found.time_to_solution_hours is None else round(found.time_to_solution_hours, 2),
            "mfu": None if found.mfu is None else round(found.mfu, 3),
            "energy_kwh": None if found.energy_kwh is None else round(found.energy_kwh),
        }
    return out


def main() -> None:
    bundled: TpuParams = default_tpu_params()
    runs = fit_tpu.read_runs(fit_tpu.RUNS)
    held_out = fit_tpu.leave_one_source_out(runs)
    figures = {
        "fit_rows": len(runs),
        "fit_sources": len({run.source for run in runs}),
        "loso_median_abs_error_pct": round(fit_tpu.median_error_pct(held_out), 2),
        "loso_median_signed_error_pct": round(signed_median_pct(held_out), 2),
        "band_low_high": list(bundled.band),
        "loso_band_coverage": round(covered(held_out, bundled.band), 3),
        "tpu_estimate_median_ms": round(estimate_ms(), 3),
    }
    for key, value in figures.items():
        print(f"{key:32s} {value}")
    comparison = pair("llama-3-8b", 256)
    print("llama-3-8b pre-training (20 tokens per parameter) on 256 accelerators:")
    print(json.dumps(comparison, indent=1))


if __name__ == "__main__":
    main()
