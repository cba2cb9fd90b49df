"""Derive the Google Cloud list-price table (``data/catalog/sources/gcp_list_prices.csv``) from a pricing.yml.

The input is ``pricing.yml`` of Cyclenerd/google-cloud-pricing-cost-calculator: whole-VM hourly prices per
machine type and region, summed by that project from the Cloud Billing Catalog's OnDemand and Spot SKUs
(vCPU + RAM + GPUs + bundled Local SSD; commitment, reservation and DWS SKUs are separate mappings there).
Only the GPU machine types the bundle covers are kept; the output is our own table with a source and date
on every row.

    .venv/bin/python scripts/import_gcp_list_prices.py PRICING_YML --commit SHA [--out data/catalog/sources/...]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "catalog" / "sources" / "gcp_list_prices.csv"
SOURCE_REPO = "Cyclenerd/google-cloud-pricing-cost-calculator"
# Machine types with whole GPUs that data/instance_families.csv covers (fractional G4 sizes are left out).
COVERED = re.compile(
    r"^(a2-(highgpu|megagpu|ultragpu)-\d+g|a3-(highgpu|megagpu)-\d+g|g2-standard-\d+|g4-standard-(48|96|192|384))$"
)
COLUMNS = ("instance_type", "region", "price_usd_per_hour", "spot_price_usd_per_hour", "source", "source_date")


def _load_yaml(path: Path) -> dict[str, Any]:
    import yaml  # PyYAML: only this import script needs it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = yaml.load(handle, Loader=loader)
    return data


def list_price_rows(pricing: dict[str, Any], commit: str) -> list[dict[str, str]]:
    """One row per covered machine type and region, sorted; prices rounded to 1e-6 USD."""
    stamp = int(pricing["about"]["timestamp"])
    date = datetime.fromtimestamp(stamp, UTC).date().isoformat()
    source = f"{SOURCE_REPO} pricing.yml @{commit[:8]} (Cloud Billing Catalog OnDemand/Spot SKUs)"
    rows = []
    for machine, entry in pricing["compute"]["instance"].items():
        if not COVERED.match(machine):
            continue
        for region, cost in entry.get("cost", {}).items():
            hour, spot = cost.get("hour"), cost.get("hour_spot")
            if not hour:
                continue
            rows.append(
                {
                    "instance_type": machine,
                    "region": region,
                    "price_usd_per_hour": f"{float(hour):.6f}",
                    "spot_price_usd_per_hour": f"{float(spot):.6f}" if spot else "",
                    "source": source,
                    "source_date": date,
                }
            )
    return sorted(rows, key=lambda r: (r["instance_type"], r["region"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pricing_yml", type=Path, help="pricing.yml of the calculator repository")
    parser.add_argument("--commit", required=True, help="the repository commit the file was taken from")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not args.pricing_yml.is_file():
        print(f"error: no file {args.pricing_yml}", file=sys.stderr)
        return 2
    rows = list_price_rows(_load_yaml(args.pricing_yml), args.commit)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
