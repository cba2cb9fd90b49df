"""Draw the sealed set: a random quarter of the sources of each measurement file, kept where no fit reads it.

    .venv/bin/python scripts/seal.py [--reference ../shared/reference/benchmarks]

The sealed set measures how the model does on evidence it has never been fitted on or chosen by. No fit, no
cross-validation and no bench that chooses between model variants reads ``data/sealed/``; ``bench/sealed.py``
scores it once, at the end of a round, and ``docs/model-history.md`` records each score.

The draw is reproducible: a seeded generator takes ``ceil(n / 4)`` of a file's ``n`` sources in sorted order (at
least one where a file has two or more). A file's sources are its rows' ``source`` column, counted over the file
and its sealed part together, so running the script again reproduces the same split. The reference folder's
measurements are sealed by name only (``data/sealed/sources.csv``): ``scripts/fit_perf.py`` writes their rows to
``data/sealed/benchmarks.csv`` instead of ``data/benchmarks.csv``.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SEALED = DATA / "sealed"
SEED = 20261128  # the day the set was drawn; a new seed is a new set and must be recorded in model-history.md
# The measurement files whose rows are compared with the model's estimates.
FILES = (
    "published_runs.csv",
    "external_checks.csv",
    "dle_runs.csv",
    "lambda_v2_runs.csv",
    "timm_runs.csv",
    "mlperf_training.csv",
    "mlperf_scale_out.csv",
)
REFERENCE_FILE = "measurements.csv"  # the reference folder's, built into data/benchmarks.csv by fit_perf.py


def draw(sources: set[str], label: str) -> list[str]:
    """The sealed share of ``sources``: the same for the same sources, seed and file label."""
    ordered = sorted(sources)
    if len(ordered) < 2:
        return []
    count = math.ceil(len(ordered) / 4)
    return sorted(random.Random(f"{SEED}:{label}").sample(ordered, count))


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    if not path.is_file():
        return [], []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def split_file(name: str) -> list[str]:
    """Split ``data/<name>`` into its open rows and ``data/sealed/<name>``; return the sealed sources."""
    fields, open_rows = _read(DATA / name)
    sealed_fields, sealed_rows = _read(SEALED / name)
    rows = open_rows + sealed_rows
    chosen = set(draw({row["source"] for row in rows}, name))
    _write(DATA / name, fields or sealed_fields, [row for row in rows if row["source"] not in chosen])
    _write(SEALED / name, fields or sealed_fields, [row for row in rows if row["source"] in chosen])
    return sorted(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference" / "benchmarks")
    args = parser.parse_args()
    _fields, reference = _read(args.reference / REFERENCE_FILE)
    if not reference:
        parser.error(f"--reference {args.reference}: no {REFERENCE_FILE} there")
    SEALED.mkdir(exist_ok=True)
    listing = [(REFERENCE_FILE, source) for source in draw({row["source"] for row in reference}, REFERENCE_FILE)]
    for name in FILES:
        listing.extend((name, source) for source in split_file(name))
    _write(SEALED / "sources.csv", ["file", "source"], [{"file": f, "source": s} for f, s in listing])
    for name, source in listing:
        print(f"sealed {name}: {source}")


if __name__ == "__main__":
    main()
