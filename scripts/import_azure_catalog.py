"""Derive the all-region Azure GPU price table (``data/catalog/sources/azure_gpu_vms_all_regions.csv``).

The input is a SkyPilot-format Azure catalog (``azure/vms.csv``: InstanceType, AcceleratorName,
AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region, Generation), one row per VM size and
region, priced from the Azure Retail Prices API's Linux pay-as-you-go and Spot meters. The bundle uses the copy
kept by anycloud-sh/catalog (every region). Only the GPU sizes of ``data/catalog/sources/azure_sizes.csv`` are
kept, and a row whose GPU count, vCPUs or memory disagrees with that table stops the import: the output is our
own table with a source and date on every row. Upstream's quirks (a Spot price equal to the pay-as-you-go one,
as for ND H200 v5) stay in it and are corrected through ``data/corrections.csv``.

    .venv/bin/python scripts/import_azure_catalog.py VMS_CSV --repo OWNER/NAME --commit SHA --date YYYY-MM-DD
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "data" / "catalog" / "sources"
OUT = SOURCES / "azure_gpu_vms_all_regions.csv"
COLUMNS = ("size", "region", "price_usd_per_hour", "spot_price_usd_per_hour", "source", "source_date")


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _money(text: str) -> str:
    """A price as written upstream, normalised to at most 6 decimals; '' when absent or not positive."""
    if not text.strip():
        return ""
    value = float(text)
    return f"{value:.6f}".rstrip("0").rstrip(".") if value > 0 else ""


def price_rows(
    vms: list[dict[str, str]], sizes: dict[str, dict[str, str]], source: str, date: str
) -> list[dict[str, str]]:
    """One row per covered size and region with an on-demand or Spot price, sorted by size and region."""
    rows, disagreements = [], []
    for ref in vms:
        spec = sizes.get(ref["InstanceType"])
        if spec is None:
            continue
        # Upstream leaves the GPU count empty for sizes its GPU table lacks (ND GB200 v6): checked where given.
        # Memory is not compared: Resource SKUs and the size pages round it differently (864 vs 900 GiB).
        count = float(ref["AcceleratorCount"]) if ref["AcceleratorCount"] else float(spec["gpu_count"])
        upstream = (count, int(float(ref["vCPUs"])))
        ours = (float(spec["gpu_count"]), int(spec["vcpus"]))
        if upstream != ours:
            disagreements.append(f"{ref['InstanceType']} {ref['Region']}: upstream {upstream}, azure_sizes.csv {ours}")
            continue
        price, spot = _money(ref["Price"]), _money(ref["SpotPrice"])
        if not price and not spot:
            continue
        rows.append(
            {
                "size": ref["InstanceType"],
                "region": ref["Region"],
                "price_usd_per_hour": price,
                "spot_price_usd_per_hour": spot,
                "source": source,
                "source_date": date,
            }
        )
    if disagreements:
        raise ValueError("sizes disagree with azure_sizes.csv:\n" + "\n".join(disagreements))
    return sorted(rows, key=lambda r: (r["size"], r["region"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vms_csv", type=Path, help="a SkyPilot-format Azure vms.csv")
    parser.add_argument("--repo", required=True, help="the repository it was taken from, owner/name")
    parser.add_argument("--commit", required=True, help="the commit of that file")
    parser.add_argument("--date", required=True, help="the date of that commit, YYYY-MM-DD")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sizes = {ref["size"]: ref for ref in _read_csv(SOURCES / "azure_sizes.csv")}
    source = f"{args.repo} azure/vms.csv @{args.commit[:8]} (Azure Retail Prices API, Linux pay-as-you-go and Spot)"
    try:
        rows = price_rows(_read_csv(args.vms_csv), sizes, source, args.date)
    except (KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    regions = len({r["region"] for r in rows})
    print(f"{len(rows)} rows, {len({r['size'] for r in rows})} sizes, {regions} regions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
