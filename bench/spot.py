"""Spot risk through `planner.rank`: interruptions and cost per scenario, and spot's share of the top 10.

Run: .venv/bin/python bench/spot.py
For a few workloads it prints the best spot option's expected interruptions, time and cost under the low, mid and
high hazard bands (the same offering ranked with each band's rate as the user's own rate), its cost band and its
risk flag; then the share of rank's top 10 that is spot, against the share before issue 11 (the monthly-bucket
model at commit 275fe7d, recorded below from a run of this catalog).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import planner  # noqa: E402
from planner.cost.spot import hazard_bands  # noqa: E402

# (workload, options, max_nodes) -> spot share of the top 10 and the best option with the monthly-bucket model
# (commit 275fe7d, bundled catalog, default settings): share, best option, its time (h), cost (USD), interruptions.
BEFORE: dict[tuple[str, str, int], tuple[float, str, float, float, float]] = {
    ("llama-3-8b", "tokens=2e9", 1): (1.0, "p6-b200.48xlarge spot", 3.6, 41, 0.0005),
    ("llama-3-8b", "tokens=2e10", 1): (1.0, "p6-b200.48xlarge spot", 33.7, 384, 0.0049),
    ("llama-3-8b", "tokens=2e10", 4): (1.0, "p6-b200.48xlarge spot", 33.7, 384, 0.0049),
    ("llama-3-70b", "", 4): (1.0, "p6-b200.48xlarge spot", 10_703.8, 243_904, 3.09),
    ("resnet50", "", 1): (1.0, "Standard_NC4as_T4_v3 spot", 111.5, 6, 0.016),
    ("bert-large", "", 1): (1.0, "Standard_NC4as_T4_v3 spot", 823.1, 48, 0.12),
}
JOBS: list[tuple[str, dict[str, Any], int]] = [
    ("llama-3-8b", {"tokens": 2e9}, 1),
    ("llama-3-8b", {"tokens": 2e10}, 1),
    ("llama-3-8b", {"tokens": 2e10}, 4),
    ("llama-3-70b", {}, 4),
    ("resnet50", {}, 1),
    ("bert-large", {}, 1),
]


def _label(options: dict[str, Any]) -> str:
    return ",".join(f"{k}={v:.0e}".replace("e+0", "e").replace("e+", "e") for k, v in options.items())


def main() -> None:
    os.environ["GPUPLAN_HOME"] = tempfile.mkdtemp()
    catalog = planner.load_catalog()
    bands = hazard_bands()
    print(f"bundled catalog: {len(catalog):,} offerings; hazard bands per node-hour: "
          + ", ".join(f"{b.name} {b.expected:g}" for b in bands.values()))  # fmt: skip
    for workload, options, max_nodes in JOBS:
        result = planner.rank(workload, catalog=catalog, max_nodes=max_nodes, **options)
        top = result.table.head(10)
        spot_share = float((top["pricing"] == "spot").mean())
        risky = int(top["spot_risky"].sum())
        long_runs = int(top["notes"].str.contains("on spot: needs checkpoints").sum())
        before = BEFORE[(workload, _label(options), max_nodes)]
        print(f"\n{workload} {_label(options) or '(preset work)'} --max-nodes {max_nodes}")
        print(f"  before: best {before[1]}, {before[2]:,.1f} h, ${before[3]:,.0f}, {before[4]:.2g} interruptions; "
              f"spot share of top 10 {before[0]:.0%}")  # fmt: skip
        print(f"  after:  spot share of top 10 {spot_share:.0%} ({risky} flagged risky, {long_runs} over 72 h on spot)")
        for line in result.headline_lines():
            print(f"          {line}")
        _, best_spot = result.headline()
        if best_spot is None:
            continue
        where = {
            "instance_type": best_spot["instance_type"],
            "region": best_spot["region"],
            "pricing": "spot",
            "max_nodes": int(best_spot["nodes"]),
        }
        for band in bands.values():
            again = planner.rank(
                workload, catalog=catalog, interruption_rate_per_node_hour=band.expected, **where, **options
            )
            same = again.table[again.table["nodes"] == best_spot["nodes"]].iloc[0]
            flag = ", RISKY" if same["spot_risky"] else ""
            print(f"    {band.name:>4} band ({band.expected:g}/node-h): {same['expected_interruptions']:8.2f} "
                  f"interruptions, {same['time_to_solution_hours']:>10,.1f} h, ${same['cost_usd']:>12,.0f}, "
                  f"P(none) {same['p_no_interruption']:.0%}{flag}")  # fmt: skip


if __name__ == "__main__":
    main()
