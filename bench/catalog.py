"""Catalog speed: a filtered `offers` query (bundled and 100k synthetic offerings), import time, CLI vs floor.

Run: .venv/bin/python bench/catalog.py
Targets (issue 2): 100k query median < 50 ms; whole-process `gpuplan offers --gpu H100 --format csv`
at most 1.5x the floor `python -c "import pandas; <read the snapshot>"`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import median_ms, paired_seconds, process_seconds, synthetic  # noqa: E402

from planner.api import load_catalog  # noqa: E402
from planner.catalog.query import OfferFilter, filter_offers  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GPUPLAN_HOME": home}
        os.environ["GPUPLAN_HOME"] = home
        catalog = load_catalog()
        query = OfferFilter(gpus=["H100"], min_gpus=8, spot=False)
        print(f"bundled catalog: {len(catalog):,} offerings")
        print(f"  offers(--gpu H100 --min-gpus 8) median: {median_ms(lambda: filter_offers(catalog, query)):.2f} ms")
        big = synthetic(catalog, 100_000)
        ms = median_ms(lambda: filter_offers(big, query), repeat=15)
        print(f"synthetic catalog: {len(big):,} offerings")
        print(f"  offers(--gpu H100 --min-gpus 8) median: {ms:.2f} ms (target < 50 ms)")

        python = sys.executable
        bare = process_seconds([python, "-c", "pass"], env)
        imported = process_seconds([python, "-c", "import planner"], env)
        print(f"import planner: {(imported - bare) * 1000:.1f} ms over a bare interpreter")

        subprocess.run([python, "-m", "planner", "catalog", "status"], env=env, check=True, stdout=subprocess.DEVNULL)
        floor, cli = paired_seconds([python, "-m", "planner", "offers", "--gpu", "H100", "--format", "csv"], env)
        print(f"floor (python + pandas + read snapshot): {floor * 1000:.0f} ms")
        print(f"gpuplan offers --gpu H100 --format csv: {cli * 1000:.0f} ms")
        print(f"  ratio to floor: {cli / floor:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
