"""What a run costs under a commitment, where a commitment breaks even, and the cheapest monthly mix (the plan view).

A commitment is paid for every hour of its term, used or not; an upfront fee is spread evenly over the term's
hours. So an hour the team actually uses costs the commitment's hourly cost divided by the share of its hours the
team fills (``utilisation``): at 50% utilisation every used hour costs twice the committed rate. The commitment
beats on demand above the utilisation where those two are equal (``break_even``), and beats spot above the one
where its cost of a run equals spot's expected cost of that run, interruptions, rework and restarts included
(planner.cost.spot, through rank's spot options).

The library, the CLI and the app all call these functions; nothing here reads files or the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner import checks
from planner.catalog.commitments import HOURS_PER_YEAR, TERMS_YEARS
from planner.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

# The share of a commitment's hours a team fills unless it says otherwise: a training cluster busy about 70% of the
# time is a common planning figure (queue gaps, data preparation, evaluation between runs). An assumption, shown.
DEFAULT_UTILISATION = 0.7
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
COMMITTED_PRICINGS = tuple(f"committed-{term}y" for term in TERMS_YEARS)


def term_of(pricing: str) -> int:
    """The term in years a committed pricing names ("committed-1y" -> 1); an InputError naming ``pricing`` else."""
    if pricing not in COMMITTED_PRICINGS:
        raise InputError(f"must be one of {', '.join(COMMITTED_PRICINGS)}, got {pricing!r:.40}", field="pricing")
    return int(pricing.removeprefix("committed-").removesuffix("y"))


def term_years(term: object) -> int:
    """A term given as 1, 3, "1y", "3y" or "committed-1y"; an InputError naming ``term`` otherwise."""
    text = str(term).removeprefix("committed-").removesuffix("y") if isinstance(term, str | int) else ""
    if isinstance(term, bool) or text not in {str(years) for years in TERMS_YEARS}:
        raise InputError(f"must be 1y or 3y, got {term!r:.40}", field="term")
    return int(text)


def basis(term: int) -> str:
    """The price basis of a committed price ("committed-1y"), as every face and export shows it."""
    return f"committed-{term}y"


def utilisation_value(value: object) -> float:
    """The utilisation checked: a share of the committed hours in (0, 1]."""
    return checks.fraction("utilisation", value, what="a share of the committed hours above 0 and at most 1")


def amortised_usd_per_hour(upfront_usd: float, hourly_usd_per_hour: float, term: int) -> float:
    """What one hour of the term costs: the hourly rate plus the upfront fee spread over every hour of the term."""
    return hourly_usd_per_hour + upfront_usd / (term * HOURS_PER_YEAR)


def per_used_hour(amortised: float, utilisation: float) -> float:
    """What an hour actually used costs when the team fills ``utilisation`` of the committed hours."""
    return amortised / utilisation_value(utilisation)


def break_even(amortised: float, alternative_usd_per_hour: float) -> float:
    """The utilisation above which the commitment costs less per used hour than ``alternative_usd_per_hour``.

    Above 1 the commitment never pays (it costs more than the alternative even when every hour is used)."""
    if alternative_usd_per_hour <= 0:
        return math.inf
    return amortised / alternative_usd_per_hour


def committed_run_cost(on_demand_cost_usd: float, on_demand_usd_per_hour: float, amortised: float, u: float) -> float:
    """A run's cost under the commitment: its instance-hours (those of the on-demand run: no interruptions) at the
    per-used-hour price."""
    return on_demand_cost_usd / on_demand_usd_per_hour * per_used_hour(amortised, u)


def best_commitments(commitments: pd.DataFrame, term: int) -> pd.DataFrame:
    """Per offering (provider, instance type, region), the commitment of ``term`` years with the lowest hourly cost
    over its term, with that cost (``amortised_usd_per_hour``) and its basis."""
    chosen = commitments[commitments["term_years"] == term].copy()
    chosen["amortised_usd_per_hour"] = [
        amortised_usd_per_hour(upfront, hourly, term)
        for upfront, hourly in zip(chosen["upfront_usd"], chosen["hourly_usd_per_hour"], strict=True)
    ]
    chosen = chosen.sort_values(["amortised_usd_per_hour", "commitment", "payment"], kind="stable")
    chosen = chosen.drop_duplicates(["provider", "instance_type", "region"], keep="first")
    chosen["price_basis"] = basis(term)
    return chosen.reset_index(drop=True)


def committed_catalog(catalog: pd.DataFrame, commitments: pd.DataFrame, term: int, utilisation: float) -> pd.DataFrame:
    """The offerings that can be bought under a ``term``-year commitment, priced per used hour at ``utilisation``.

    Each row's on-demand price becomes the commitment's (so the ranking prices runs with it) and says so: price
    basis committed-Ny, the commitment's source and date, the list price kept as ``list_price_usd_per_hour``. Spot
    prices are dropped: a committed instance is not interrupted. Offerings without such a commitment are left out.
    """
    import numpy as np

    u = utilisation_value(utilisation)
    best = best_commitments(commitments, term)
    keep = ["provider", "instance_type", "region", "commitment", "payment", "amortised_usd_per_hour"]
    merged = catalog.merge(best[[*keep, "price_source", "as_of"]], on=keep[:3], suffixes=("", "_commitment"))
    merged["list_price_usd_per_hour"] = merged["price_usd_per_hour"]
    merged["price_usd_per_hour"] = merged["amortised_usd_per_hour"] / u
    for column in ("spot_price_usd_per_hour", "host_price_usd_per_hour", "gpu_price_usd_per_hour"):
        merged[column] = np.nan
    for column in ("host_spot_price_usd_per_hour", "gpu_spot_price_usd_per_hour", "spot_interruption"):
        if column in merged.columns:
            merged[column] = None
    merged["availability"] = "on-demand"
    # The row's note says which commitment prices it; "list_price" (how the list price was found) no longer applies.
    merged["flags"] = [
        ";".join([*(f for f in str(flags or "").split(";") if f and f != "list_price"), f"{kind} {payment}"])
        for flags, kind, payment in zip(merged["flags"], merged["commitment"], merged["payment"], strict=True)
    ]
    merged["price_basis"] = merged["spot_price_basis"] = basis(term)
    merged["price_source"] = merged.pop("price_source_commitment")
    merged["as_of"] = merged.pop("as_of_commitment")
    return merged.reset_index(drop=True)


@dataclass(frozen=True)
class PlanMix:
    """The cheapest month for ``runs`` runs: instances committed for the base load, the rest on demand or spot."""

    committed_instances: int
    committed_usd_per_month: float
    flex_pricing: str  # on-demand or spot: the cheaper per run, taking the rest of the load
    flex_instance_hours_per_month: float
    flex_usd_per_month: float
    all_on_demand_usd_per_month: float
    all_spot_usd_per_month: float | None

    @property
    def total_usd_per_month(self) -> float:
        return self.committed_usd_per_month + self.flex_usd_per_month

    @property
    def total_usd_per_year(self) -> float:
        return 12 * self.total_usd_per_month


def plan_mix(
    runs_per_month: float,
    on_demand_cost_usd: float,
    on_demand_usd_per_hour: float,
    amortised: float,
    utilisation: float,
    spot_cost_usd: float | None = None,
) -> PlanMix:
    """The number of committed instances that makes ``runs_per_month`` runs cheapest, and what the month costs.

    One run takes the on-demand run's instance-hours. A committed instance gives ``utilisation`` of a month's hours
    to the runs and costs every hour of it; the load it does not cover runs on demand or on spot, whichever costs
    less per run (spot's expected cost, interruptions included). Every whole number of committed instances from
    none to enough for the whole load is tried; among equal totals the fewest commitments win.
    """
    runs = checks.number("runs_per_month", runs_per_month)
    u = utilisation_value(utilisation)
    hours_per_run = on_demand_cost_usd / on_demand_usd_per_hour
    load_hours = runs * hours_per_run
    flex_per_run, flex = on_demand_cost_usd, "on-demand"
    if spot_cost_usd is not None and math.isfinite(spot_cost_usd) and spot_cost_usd < on_demand_cost_usd:
        flex_per_run, flex = spot_cost_usd, "spot"
    usable = HOURS_PER_MONTH * u
    best = (load_hours / hours_per_run * flex_per_run, 0, load_hours)  # nothing committed
    for count in range(1, math.ceil(load_hours / usable) + 1):
        left = max(0.0, load_hours - count * usable)
        total = count * HOURS_PER_MONTH * amortised + left / hours_per_run * flex_per_run
        if total < best[0] - 1e-9:
            best = (total, count, left)
    _, count, left = best
    return PlanMix(
        committed_instances=count,
        committed_usd_per_month=count * HOURS_PER_MONTH * amortised,
        flex_pricing=flex,
        flex_instance_hours_per_month=left,
        flex_usd_per_month=left / hours_per_run * flex_per_run,
        all_on_demand_usd_per_month=runs * on_demand_cost_usd,
        all_spot_usd_per_month=None if spot_cost_usd is None else runs * spot_cost_usd,
    )
