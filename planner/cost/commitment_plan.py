"""The plan view: per offering with a commitment, a run's cost each way, the break-evens and the cheapest monthly mix.

Input is a ranking with both pricings (its on-demand and spot options, spot priced with its expected interruptions
by planner.cost.spot) and the cheapest commitment of each offering (``best_commitments``); output is one table, the
one the library returns, the CLI prints and the app shows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from planner.cost.commitment import break_even, committed_run_cost, plan_mix, utilisation_value

if TYPE_CHECKING:
    import pandas as pd

PLAN_COLUMNS: tuple[str, ...] = (
    "provider",
    "region",
    "instance_type",
    "gpu",
    "nodes",
    "commitment",
    "payment",
    "price_basis",
    "committed_usd_per_hour",
    "on_demand_usd_per_hour",
    "committed_cost_usd",
    "on_demand_cost_usd",
    "spot_cost_usd",
    "break_even_vs_on_demand",
    "break_even_vs_spot",
    "committed_instances",
    "committed_usd_per_month",
    "flex_pricing",
    "flex_instance_hours_per_month",
    "flex_usd_per_month",
    "total_usd_per_month",
    "total_usd_per_year",
    "all_on_demand_usd_per_month",
    "all_spot_usd_per_month",
    "price_source",
    "as_of",
)
_OFFERING = ["provider", "instance_type", "region"]


def commitment_plan(
    options: pd.DataFrame, commitments: pd.DataFrame, runs_per_month: float, utilisation: float, *, spot: bool = True
) -> pd.DataFrame:
    """One row per offering that has both a commitment and an on-demand option, cheapest month first.

    ``options``: a ranking's table (provider, region, instance_type, gpu, nodes, pricing, price_usd_per_hour,
    cost_usd); the on-demand option of fewest cost per run picks the node count, and the spot option of the same
    node count (if any) is the spot alternative, unless ``spot`` is False. ``commitments``: ``best_commitments`` of
    one term.
    """
    import pandas as pd

    u = utilisation_value(utilisation)
    ranked = options[options["cost_usd"].notna()]
    on_demand = ranked[ranked["pricing"] == "on-demand"].sort_values("cost_usd", kind="stable")
    on_demand = on_demand.drop_duplicates(_OFFERING, keep="first")
    on_spot = ranked[ranked["pricing"] == ("spot" if spot else "none")][[*_OFFERING, "nodes", "cost_usd"]]
    on_spot = on_spot.sort_values("cost_usd", kind="stable").drop_duplicates([*_OFFERING, "nodes"], keep="first")
    named = commitments.rename(
        columns={name: f"commitment_{name}" for name in ("price_basis", "price_source", "as_of")}
    )
    joined = on_demand.merge(named, on=_OFFERING, suffixes=("", "_commitment"))
    joined = joined.merge(on_spot, on=[*_OFFERING, "nodes"], how="left", suffixes=("", "_spot"))
    rows = [_row({str(k): v for k, v in record.items()}, runs_per_month, u) for record in joined.to_dict("records")]
    frame = pd.DataFrame(rows, columns=list(PLAN_COLUMNS))
    return frame.sort_values(["total_usd_per_month", "provider", "region"], kind="stable").reset_index(drop=True)


def _row(record: dict[str, Any], runs_per_month: float, u: float) -> dict[str, Any]:
    amortised = float(record["amortised_usd_per_hour"])
    price, cost = float(record["price_usd_per_hour"]), float(record["cost_usd"])
    spot_cost = record.get("cost_usd_spot")
    spot = None if spot_cost is None or (isinstance(spot_cost, float) and math.isnan(spot_cost)) else float(spot_cost)
    mix = plan_mix(runs_per_month, cost, price, amortised, u, spot)
    committed = committed_run_cost(cost, price, amortised, u)
    return {
        "provider": record["provider"],
        "region": record["region"],
        "instance_type": record["instance_type"],
        "gpu": record.get("gpu"),
        "nodes": int(record["nodes"]),
        "commitment": record["commitment"],
        "payment": record["payment"],
        "price_basis": record["commitment_price_basis"],
        "committed_usd_per_hour": amortised,
        "on_demand_usd_per_hour": price,
        "committed_cost_usd": committed,
        "on_demand_cost_usd": cost,
        "spot_cost_usd": spot,
        "break_even_vs_on_demand": break_even(amortised, price),
        # The commitment's run at full use costs amortised x instance-hours; spot's run costs its expected cost.
        "break_even_vs_spot": None if spot is None else break_even(committed * u, spot),
        "committed_instances": mix.committed_instances,
        "committed_usd_per_month": mix.committed_usd_per_month,
        "flex_pricing": mix.flex_pricing if mix.flex_instance_hours_per_month > 0 else None,
        "flex_instance_hours_per_month": mix.flex_instance_hours_per_month,
        "flex_usd_per_month": mix.flex_usd_per_month,
        "total_usd_per_month": mix.total_usd_per_month,
        "total_usd_per_year": mix.total_usd_per_year,
        "all_on_demand_usd_per_month": mix.all_on_demand_usd_per_month,
        "all_spot_usd_per_month": mix.all_spot_usd_per_month,
        "price_source": record["commitment_price_source"],
        "as_of": record["commitment_as_of"],
    }
