"""Fit the TPU station's coefficients (``data/tpu_params.json``) on the published TPU runs (``data/tpu_runs.csv``).

    .venv/bin/python scripts/fit_tpu.py            # fit and write data/tpu_params.json
    .venv/bin/python scripts/fit_tpu.py --seal     # once: move the sealed quarter of the sources out (see SEED)

Each row is one published MaxText run (Google's maxtext config READMEs and AI-Hypercomputer/tpu-recipes), with its
mesh as published; the fit predicts its tokens/s per chip with that mesh and minimises the squared log errors, each
source weighted equally (one README table counts once however many rows it has). The band is the 90th percentile,
per side, of the leave-one-source-out errors, as for the GPU model (scripts/perflab/crossval.py).

The sealed share: ``--seal`` sorts the distinct sources of the usable rows, draws a quarter of them (rounded) with
``random.Random(SEED).sample`` and moves their rows to ``data/sealed/tpu_runs.csv``. No fit and no choice reads that
file; ``bench/tpu.py`` scores it once. MLPerf Training TPU submissions are not used anywhere (kept outside as an
independent check).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

from planner.perf.tpu_step import Mesh, TpuParams, step_time, tpu_chips  # noqa: E402
from planner.perf.workloads import Workload  # noqa: E402

RUNS = ROOT / "data" / "tpu_runs.csv"
SEALED = ROOT / "data" / "sealed" / "tpu_runs.csv"
PARAMS = ROOT / "data" / "tpu_params.json"
SEED = 41
# The coefficients fitted, with their starting values and bounds; ``tokens_half`` is held (an assumption: the MXU
# reaches half its efficiency at 1k tokens per chip; the published runs all use 8k or more, so they cannot fix it).
FITTED = {
    "mxu_efficiency": (0.7, 0.2, 1.0),
    "hbm_bytes_per_activation": (100.0, 0.0, 2000.0),
    "partial_remat_share": (0.3, 0.0, 1.0),
    "attention_relative": (0.7, 0.2, 2.0),
    "ici_efficiency": (0.5, 0.02, 1.0),
    "dcn_efficiency": (0.5, 0.02, 1.0),
}
TOKENS_HALF = 1024.0


@dataclass(frozen=True)
class Run:
    source: str
    tpu: str
    workload: Workload
    mesh: Mesh
    measured: float  # tokens/s per chip


def read_runs(path: Path) -> list[Run]:
    """The usable rows of a runs file."""
    runs = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["use"] != "true":
                continue
            wl = Workload(
                name=row["model"],
                kind="decoder",
                params=float(row["params"]),
                layers=int(row["layers"]),
                hidden=int(row["hidden"]),
                heads=int(row["heads"]),
                vocab=int(row["vocab"]),
                seq_len=int(row["seq_len"]),
            )
            chips, slices = int(row["chips"]), int(row["slices"])
            tensor = int(row["tensor"])
            mesh = Mesh(slices, chips // slices, tensor, int(row["per_device_batch"]) * tensor, row["remat"])
            runs.append(Run(row["source"], row["tpu"], wl, mesh, float(row["tokens_per_s_per_chip"])))
    return runs


def params_of(values: np.ndarray | list[float], band: tuple[float, float] = (0.2, 0.2)) -> TpuParams:
    fitted = dict(zip(FITTED, (float(v) for v in values), strict=True))
    fitted["tokens_half"] = TOKENS_HALF
    return TpuParams.from_dict({"fitted": fitted, "band": list(band)})


def predict(run: Run, params: TpuParams) -> float:
    """The station's tokens/s per chip for the run's published mesh."""
    step = step_time(run.workload, tpu_chips()[run.tpu], run.mesh, params)
    return run.mesh.batch * run.workload.seq_len / step.step_s


def fit(runs: list[Run]) -> np.ndarray:
    """Least squares on log(predicted / measured), each source's rows weighing one source in all."""
    per_source = Counter(run.source for run in runs)
    weights = np.array([1.0 / math.sqrt(per_source[run.source]) for run in runs])
    start = [v[0] for v in FITTED.values()]
    bounds = ([v[1] for v in FITTED.values()], [v[2] for v in FITTED.values()])

    def residuals(values: np.ndarray) -> np.ndarray:
        params = params_of(values)
        errors: np.ndarray = weights * np.array([math.log(predict(run, params) / run.measured) for run in runs])
        return errors

    values: np.ndarray = np.asarray(least_squares(residuals, start, bounds=bounds).x, dtype=float)
    return values


def leave_one_source_out(runs: list[Run]) -> list[tuple[Run, float]]:
    """(run, prediction of a fit without the run's source)."""
    out = []
    for source in sorted({run.source for run in runs}):
        kept = [run for run in runs if run.source != source]
        params = params_of(fit(kept))
        out += [(run, predict(run, params)) for run in runs if run.source == source]
    return out


def band_from(pairs: list[tuple[Run, float]]) -> tuple[float, float]:
    """The 90th percentile per side of how far below and above the held-out predictions the measurements fell."""
    ratios = [run.measured / pred for run, pred in pairs]
    below = sorted(max(0.0, 1.0 - r) for r in ratios)
    above = sorted(max(0.0, r - 1.0) for r in ratios)

    def p90(values: list[float]) -> float:
        return round(min(0.85, max(0.05, values[int(0.9 * (len(values) - 1))])), 3)

    return p90(below), p90(above)


def median_error_pct(pairs: list[tuple[Run, float]]) -> float:
    """Median of |predicted / measured - 1| in percent."""
    return 100.0 * statistics.median(abs(pred / run.measured - 1.0) for run, pred in pairs)


def seal() -> None:
    """Move a seeded random quarter of the sources to the sealed file (run once; refuses to run twice)."""
    if SEALED.exists():
        raise SystemExit(f"{SEALED} exists: the sealed share is drawn once")
    with RUNS.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = list(reader.fieldnames or [])
        rows = list(reader)
    sources = sorted({row["source"] for row in rows if row["use"] == "true"})
    sealed = set(random.Random(SEED).sample(sources, round(len(sources) / 4)))
    SEALED.parent.mkdir(exist_ok=True)
    for path, keep in ((RUNS, False), (SEALED, True)):
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(row for row in rows if (row["source"] in sealed) == keep)
    print(f"sealed {len(sealed)} of {len(sources)} sources")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seal", action="store_true", help="draw the sealed quarter of the sources (once)")
    if parser.parse_args().seal:
        seal()
        return
    runs = read_runs(RUNS)
    values = fit(runs)
    held_out = leave_one_source_out(runs)
    band = band_from(held_out)
    fitted = {name: round(float(v), 4) for name, v in zip(FITTED, values, strict=True)}
    fitted["tokens_half"] = TOKENS_HALF
    document = {
        "fitted": fitted,
        "band": list(band),
        "calibrated_tpus": sorted({run.tpu for run in runs}),
        "fitted_on": {"rows": len(runs), "sources": len({run.source for run in runs}), "file": "data/tpu_runs.csv"},
        "leave_one_source_out_median_error_pct": round(median_error_pct(held_out), 2),
        "sealed": {"file": "data/sealed/tpu_runs.csv", "seed": SEED, "share": "a quarter of the sources"},
    }
    PARAMS.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
