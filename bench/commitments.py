"""Cross-check of the bundled commitment prices (data/catalog/commitments.csv) against a second source.

Run: .venv/bin/python bench/commitments.py
Compares, row by row:
  1. Each committed hourly price with the same figure in a second snapshot of its source
     (data/catalog/sources/commitment_checks.csv rows from Cyclenerd pricing.yml @082120d2, generated 2024-11-07,
     against the bundled @0166a59e of 2025-03-06; the a2 shapes). Same publisher, four months apart: it catches
     transcription errors and moved prices, not an error of the publisher's own.
  2. The on-demand price that source gives beside each commitment with the catalog's on-demand list price of the
     same offering (data/catalog/gcp.csv, priced from Cyclenerd @fd66b26f of 2026-07-30 or SkyPilot v9): the
     discount a commitment is measured against must be the catalog's own.
  3. The implied discount (1 - committed / on-demand) per series and term: Google publishes one discount per
     resource and term, so a row far from its series' median is suspect.
Prints the counts within 1% and the worst differences. No network. AWS and Azure have no bundled commitment prices.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.catalog.commitments import bundled_path, read_csv, validate_commitments  # noqa: E402

TOLERANCE = 0.01
SECOND_SNAPSHOT = "@082120d2"
WORST_SHOWN = 5


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _report(title: str, pairs: list[tuple[str, float, float]]) -> None:
    """Rows within TOLERANCE of each other and the worst relative differences."""
    diffs = sorted(((abs(a - b) / b if b else float("inf"), key, a, b) for key, a, b in pairs), reverse=True)
    within = sum(1 for diff, *_ in diffs if diff <= TOLERANCE)
    print(f"\n{title}: {within} of {len(pairs)} rows within {TOLERANCE:.0%}")
    for diff, key, a, b in diffs[:WORST_SHOWN]:
        print(f"  {key:<48} {a:>10.6f} vs {b:>10.6f}  {diff:+.2%}")


def main() -> int:
    bundled = validate_commitments(read_csv(bundled_path())).accepted
    checks = {
        (row["instance_type"], row["region"], int(row["term_years"])): row
        for row in _read(REPO / "data" / "catalog" / "sources" / "commitment_checks.csv")
    }
    catalog = {(row["instance_type"], row["region"]): row for row in _read(REPO / "data" / "catalog" / "gcp.csv")}
    print(f"bundled commitment prices: {len(bundled)} rows ({sorted({r['provider'] for r in bundled})})")

    snapshot: list[tuple[str, float, float]] = []
    on_demand: list[tuple[str, float, float]] = []
    discounts: dict[tuple[str, int], list[float]] = {}
    for row in bundled:
        key = (row["instance_type"], row["region"], row["term_years"])
        name = f"{row['instance_type']} {row['region']} {row['term_years']}y"
        check = checks.get(key)
        if check is not None:
            if SECOND_SNAPSHOT in check["source"]:
                snapshot.append((name, row["hourly_usd_per_hour"], float(check["hourly_usd_per_hour"])))
            listed = catalog.get(key[:2])
            if listed and listed["price_usd_per_hour"] and row["term_years"] == 1:
                on_demand.append(
                    (name[:-3], float(check["on_demand_usd_per_hour"]), float(listed["price_usd_per_hour"]))
                )
            group = (row["instance_type"].split("-")[0], row["term_years"])
            discount = 1 - row["hourly_usd_per_hour"] / float(check["on_demand_usd_per_hour"])
            discounts.setdefault(group, []).append(discount)
    _report(
        f"1. committed price vs the second snapshot ({SECOND_SNAPSHOT}; {len(bundled) - len(snapshot)} rows have none)",
        snapshot,
    )
    _report("2. source's on-demand price vs the catalog's list price (1y rows)", on_demand)
    print("\n3. implied discount off the source's on-demand price, per series and term")
    for (series, term), values in sorted(discounts.items()):
        if values:
            median = statistics.median(values)
            far = [v for v in values if abs(v - median) > TOLERANCE]
            print(
                f"  {series} {term}y: median {median:.2%}, range {min(values):.2%} to {max(values):.2%}, "
                f"{len(far)} of {len(values)} rows more than 1 point from the median"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
