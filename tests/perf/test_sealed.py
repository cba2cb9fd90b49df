"""The sealed set (data/sealed/): drawn reproducibly, read by nothing that fits or chooses, scored by its bench."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What may name the sealed folder: the draws (GPU and TPU), the normalisation that writes its benchmark rows, and the
# scorer.
ALLOWED = {"scripts/seal.py", "scripts/fit_perf.py", "scripts/fit_tpu.py", "bench/sealed.py"}


def _load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_nothing_that_fits_or_chooses_reads_the_sealed_set() -> None:
    readers = []
    for folder in ("planner", "scripts", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            name = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            if name not in ALLOWED and ('"sealed"' in text or "sealed/" in text):
                readers.append(name)
    assert not readers, f"these read data/sealed/, which only {sorted(ALLOWED)} may: {readers}"


def test_the_draw_is_a_seeded_quarter_and_reproducible() -> None:
    seal = _load(ROOT / "scripts" / "seal.py", "seal_script")
    sources = {f"source {i}" for i in range(22)}
    first = seal.draw(sources, "mlperf_training.csv")  # type: ignore[attr-defined]
    assert len(first) == 6 and set(first) <= sources
    assert seal.draw(sources, "mlperf_training.csv") == first  # type: ignore[attr-defined]
    assert seal.draw(sources, "another.csv") != first  # type: ignore[attr-defined]
    assert seal.draw({"one"}, "x.csv") == []  # type: ignore[attr-defined]
    # The record lists every sealed source, and no sealed source is left among the open rows.
    with (ROOT / "data" / "sealed" / "sources.csv").open(newline="", encoding="utf-8") as handle:
        listed = list(csv.DictReader(handle))
    for name in seal.FILES:  # type: ignore[attr-defined]
        with (ROOT / "data" / name).open(newline="", encoding="utf-8") as handle:
            open_sources = {row["source"] for row in csv.DictReader(handle)}
        sealed = {row["source"] for row in listed if row["file"] == name}
        assert sealed and not sealed & open_sources, name


def test_the_scorer_reports_error_and_band_on_a_folder_of_measurements(tmp_path: Path) -> None:
    # Scored here on a few OPEN rows in the sealed set's layout: the bench works without anyone reading the set.
    bench = _load(ROOT / "bench" / "sealed.py", "sealed_bench")
    for name in (
        "benchmarks.csv",
        "published_runs.csv",
        "external_checks.csv",
        "dle_runs.csv",
        "lambda_v2_runs.csv",
        "timm_runs.csv",
        "mlperf_training.csv",
        "mlperf_scale_out.csv",
    ):
        with (ROOT / "data" / name).open(newline="", encoding="utf-8") as handle:
            lines = handle.readlines()
        (tmp_path / name).write_text("".join(lines[:1] + lines[-3:]), encoding="utf-8")
    groups = bench.score(tmp_path)  # type: ignore[attr-defined]
    scored = [s for rows in groups.values() for s in rows]
    assert len(groups) == 9 and len(scored) >= 15
    for s in scored:
        assert s.low <= s.predicted <= s.high and s.measured > 0 and s.error_pct >= 0
    assert any(s.covered for s in scored)
