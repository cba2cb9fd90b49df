"""Cross-source price check: every bundled price that a second, independent public source also gives.

Run: .venv/bin/python bench/crosscheck.py [--all]
Reads the bundle through planner.load_catalog (what users get) and compares it with:
  1. Google Cloud: the other of its two price sources, row by row. Rows priced from the Cyclenerd list
     (data/catalog/sources/gcp_list_prices.csv, 2026-07-30) against SkyPilot's SKU sums
     (../shared/reference/catalog, skypilot-catalog v9 @2c3d7ea7, >= 2026-07-09), and SkyPilot-priced rows
     against the Cyclenerd list where it has the shape.
  2. AWS spot: the bundle's spot discount (1 - spot / on-demand) against the AWS Spot Advisor's savings
     figure for the same type and region (feed of 2025-06-28), in percentage points.
  3. Figures recorded with their source (data/catalog/sources/price_spot_checks.csv): single figures, and Azure
     Retail Prices API items of 2026-08-22 for four EU regions (andy-diericks/azure-pricing-radar @cf741f25),
     on-demand and Spot apart. Those items price their rows (the newer reading, scripts/build_catalog.py), so they
     are checked against the bundle's other Azure source, anycloud's all-region table of 2026-05-20.
Prints every check with its source and date, the differences, and a summary. No network.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REFERENCE = REPO.parent / "shared" / "reference" / "catalog"
SOURCES = REPO / "data" / "catalog" / "sources"
SKYPILOT_GCP = "skypilot-catalog v9 gcp/vms.csv @2c3d7ea7 (SKU sums)"
SKYPILOT_DATE = ">= 2026-07-09"
SPOT_ADVISOR = "AWS Spot Advisor feed (spotinfo @5eedf20a)"
SPOT_ADVISOR_DATE = "2025-06-28"
AGREE = 0.02  # within 2%: the same list price read twice (rounding, local SSD, a price change)


@dataclass(frozen=True)
class Check:
    """One bundled figure against a second source."""

    what: str
    bundled: float | None
    other: float
    source: str
    source_date: str
    unit: str = "USD/h"

    @property
    def difference(self) -> float | None:
        """Bundled relative to the other source (USD), or in percentage points (spot discounts)."""
        if self.bundled is None:
            return None
        if self.unit == "pp":
            return self.bundled - self.other
        return self.bundled / self.other - 1.0

    def line(self) -> str:
        shown = "none" if self.bundled is None else f"{self.bundled:.4f}"
        if self.difference is None:
            diff = "no bundled figure"
        elif self.unit == "pp":
            diff = f"{self.difference:+.1f} pp"
        else:
            diff = f"{self.difference:+.1%}"
        figures = f"bundled {shown:>10}  other {self.other:>10.4f} {self.unit:<5} {diff:>17}"
        return f"  {self.what:<55} {figures}  [{self.source}, {self.source_date}]"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_catalog", REPO / "scripts" / "build_catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _bundle() -> pd.DataFrame:
    from planner.api import load_catalog

    with tempfile.TemporaryDirectory() as home:
        os.environ["GPUPLAN_HOME"] = home
        return load_catalog()


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _first(frame: pd.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    """One row per (instance type, region): zones of one region share Google's prices."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for row in _records(frame):
        rows.setdefault((row["instance_type"], row["region"]), row)
    return rows


def _value(number: Any) -> float | None:
    return None if number is None or bool(pd.isna(number)) else float(number)


def gcp_checks(bundle: pd.DataFrame) -> list[Check]:
    """Each Google Cloud on-demand price against the other source."""
    rows = _first(bundle[bundle["provider"] == "gcp"])
    checks: list[Check] = []
    skypilot: dict[tuple[str, str], float] = {}
    if (REFERENCE / "SOURCES.md").is_file():
        for ref in _builder()._gcp_rows(REFERENCE, [], {})[0]:
            if ref["price_usd_per_hour"] is not None:
                skypilot.setdefault((ref["instance_type"], ref["region"]), ref["price_usd_per_hour"])
    with (SOURCES / "gcp_list_prices.csv").open(newline="", encoding="utf-8") as handle:
        listed = {(r["instance_type"], r["region"]): r for r in csv.DictReader(handle)}
    for key, row in sorted(rows.items()):
        price = _value(row["price_usd_per_hour"])
        source = str(row["price_source"])
        what = f"gcp {key[0]} {key[1]} on-demand"
        if price is None:
            continue  # not sold on demand, or no trusted on-demand price: nothing to compare
        if "Cyclenerd" in source and key in skypilot:
            checks.append(Check(what, price, skypilot[key], SKYPILOT_GCP, SKYPILOT_DATE))
        elif "Cyclenerd" not in source and key in listed:
            entry = listed[key]
            checks.append(Check(what, price, float(entry["price_usd_per_hour"]), entry["source"], entry["source_date"]))
    return checks


def aws_spot_checks(bundle: pd.DataFrame) -> list[Check]:
    """The bundle's AWS spot discount against the Spot Advisor's savings figure (Linux)."""
    path = REFERENCE / "aws_spot_advisor_gpu.csv"
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        advisor = {
            (r["InstanceType"], r["Region"]): float(r["SavingsOverOnDemandPct"])
            for r in csv.DictReader(handle)
            if r["OS"] == "Linux"
        }
    aws = bundle[(bundle["provider"] == "aws") & bundle["spot_price_usd_per_hour"].notna()]
    discounts: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in _records(aws):
        on_demand, spot = _value(row["price_usd_per_hour"]), _value(row["spot_price_usd_per_hour"])
        if on_demand is not None and spot is not None:
            discounts[(row["instance_type"], row["region"])].append(100.0 * (1.0 - spot / on_demand))
    return [
        Check(
            f"aws {shape} {region} spot discount",
            statistics.mean(values),
            advisor[(shape, region)],
            SPOT_ADVISOR,
            SPOT_ADVISOR_DATE,
            unit="pp",
        )
        for (shape, region), values in sorted(discounts.items())
        if (shape, region) in advisor
    ]


def recorded_checks(bundle: pd.DataFrame, group: str = "single") -> list[Check]:
    """Figures recorded with their source in data/catalog/sources/price_spot_checks.csv.

    ``group`` picks the single figures ("single"), or the Azure Retail Prices API items' on-demand ("azure") or
    Spot ("azure-spot") prices.
    """
    checks = []
    # The Azure items price their rows in the bundle: their second source is the all-region table they replaced.
    older = pd.read_csv(SOURCES / "azure_gpu_vms_all_regions.csv").rename(columns={"size": "instance_type"})
    older["provider"] = "azure"
    with (SOURCES / "price_spot_checks.csv").open(newline="", encoding="utf-8") as handle:
        for ref in csv.DictReader(handle):
            retail_item = ref["source"].startswith("Azure Retail Prices API item")
            spot = ref["column"] == "spot_price_usd_per_hour"
            kind = ("azure-spot" if spot else "azure") if retail_item else "single"
            if kind != group:
                continue
            table = older if retail_item else bundle
            rows = table[
                (table["provider"] == ref["provider"])
                & (table["instance_type"] == ref["instance_type"])
                & (table["region"] == ref["region"])
            ]
            bundled = _value(rows[ref["column"]].iloc[0]) if len(rows) else None
            column = ref["column"].removesuffix("_usd_per_hour")
            what = f"{ref['provider']} {ref['instance_type']} {ref['region']} {column}"
            checks.append(Check(what, bundled, float(ref["usd_per_hour"]), ref["source"], ref["source_date"]))
    return checks


def _summary(name: str, checks: list[Check]) -> str:
    compared = [c for c in checks if c.difference is not None]
    if not compared:
        return f"{name}: {len(checks)} checks, none with a bundled figure"
    if checks[0].unit == "pp":
        gaps = [abs(c.difference) for c in compared]  # type: ignore[arg-type]
        return (
            f"{name}: {len(compared)} checks; median |difference| {statistics.median(gaps):.1f} pp; "
            f"within 10 pp: {sum(g <= 10 for g in gaps)}"
        )
    gaps = [abs(c.difference) for c in compared]  # type: ignore[arg-type]
    return (
        f"{name}: {len(compared)} checks ({len(checks) - len(compared)} without a bundled figure); "
        f"median |difference| {statistics.median(gaps):.1%}; within {AGREE:.0%}: {sum(g <= AGREE for g in gaps)}; "
        f"worst {max(gaps):.1%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="print every check, not only the disagreements")
    args = parser.parse_args(argv)
    bundle = _bundle()
    groups = {
        "Google Cloud on-demand vs the other source": gcp_checks(bundle),
        "AWS spot discount vs Spot Advisor savings": aws_spot_checks(bundle),
        "recorded single figures": recorded_checks(bundle),
        "Azure on-demand: anycloud 2026-05-20 vs Retail Prices API items (EU, 2026-08-22, in the bundle)": (
            recorded_checks(bundle, "azure")
        ),
        "Azure Spot: anycloud 2026-05-20 vs Retail Prices API items (EU, 2026-08-22, in the bundle)": (
            recorded_checks(bundle, "azure-spot")
        ),
    }
    total = 0
    for name, checks in groups.items():
        total += sum(c.difference is not None for c in checks)
        print(name)
        for check in checks:
            gap = check.difference
            off = gap is None or (abs(gap) > 10 if check.unit == "pp" else abs(gap) > AGREE)
            if args.all or off or name == "recorded single figures":
                print(check.line())
        print("  " + _summary(name, checks))
    print(f"spot checks with a bundled figure and a second source: {total}")
    if not (REFERENCE / "SOURCES.md").is_file():
        print("note: ../shared/reference/catalog is absent, so the SkyPilot and Spot Advisor checks were skipped")
    print("AWS on-demand: no second independent source offline beyond the recorded figures above")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
