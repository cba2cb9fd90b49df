"""`compare`: the best option of each of a few GPUs or instance types for the same job, side by side."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from planner.catalog.owned import OWNED
from planner.cost.result import TABLE_COLUMNS, TABLE_DTYPES, RankResult

COMPARE_COLUMNS: tuple[str, ...] = ("choice", *TABLE_COLUMNS)


def best_of_each(
    result: RankResult,
    choices: Sequence[tuple[str, list[str]]],
    key_column: str,
    pricing: str,
    why: Callable[[str, list[str], str], str | None] | None = None,
) -> RankResult:
    """From a ranking of every choice, the best option of each choice (its name and the ``key_column`` values it
    covers) per pricing, in the order given; ``rank`` is the option's place in the full ranking.

    A choice with no option gets a row of blanks and, in ``notes``, why: ``why(name, members, pricing)`` when it
    knows (the conductor asks the ranking again without the deadline and budget), else the excluded list's reason.
    """
    import pandas as pd

    pricings = ["on-demand", "spot"] if pricing == "both" else [pricing]
    table, details = result.table, result.details
    rows: list[dict[str, Any]] = []
    detail_rows: list[dict[str, Any]] = []

    def add(choice: str, best: pd.DataFrame) -> None:
        rows.append({"choice": choice, **{str(k): v for k, v in best.iloc[0].items()}})
        detail_rows.append({str(k): v for k, v in details.iloc[int(best.index[0])].items()})

    for name, members in choices:
        mine = table[table[key_column].isin(members)]
        # Owned servers stand beside the clouds' best, never in its place: a choice of its own ("H100 (owned)").
        owned = mine[mine["provider"] == OWNED]
        mine = mine[mine["provider"] != OWNED]
        if len(owned) and not len(mine) and key_column == "instance_type":
            add(name, owned.head(1))  # the choice names an owned server itself
            continue
        for kind in pricings:
            best = mine[mine["pricing"] == kind].head(1)
            if len(best):
                add(name, best)
                continue
            reason = (why(name, members, kind) if why else None) or _why_missing(result, key_column, members, kind)
            rows.append({"choice": name, "pricing": kind, "notes": reason})
            detail_rows.append({})
        if len(owned):
            add(f"{name} ({OWNED})", owned.head(1))
    frame = pd.DataFrame.from_records(rows, columns=list(COMPARE_COLUMNS))
    # The ranking table's dtypes (TABLE_DTYPES), nullable: a choice's row of blanks is missing in every column.
    nullable: dict[str, Any] = {"int64": "Int64", "bool": "boolean", "float64": "float64"}
    for column, dtype in TABLE_DTYPES.items():
        frame[column] = pd.to_numeric(frame[column]).astype(nullable[dtype])
    return RankResult(
        table=frame,
        excluded=result.excluded,
        assumptions=result.assumptions,
        catalog_as_of=result.catalog_as_of,
        details=pd.DataFrame.from_records(detail_rows),
        message=result.message if result.empty else None,
        notes=result.notes,
        snapshots=result.snapshots,
        question=result.question,
        price_sources=result.price_sources,
    )


def _why_missing(result: RankResult, key_column: str, members: list[str], pricing: str) -> str:
    """The most common reason the excluded list gives for this choice and pricing, else a generic line."""
    excluded = result.excluded
    if len(excluded):
        mine = excluded[excluded[key_column].isin(members) & excluded["pricing"].isin([pricing, "any"])]
        if len(mine):
            counts = mine.groupby("reason", sort=False)["offerings"].sum().sort_values(ascending=False, kind="stable")
            return f"no option: {counts.index[0]}"
    if result.empty and result.message:
        return f"no option: {result.message}"
    return f"no {pricing} offering in the catalog"


def closest_miss(relaxed: RankResult, deadline_hours: float | None, budget_usd: float | None) -> str | None:
    """Why a choice has no option under the deadline and budget, from its ranking without them (ordered by time).

    The deadline is blamed when even its fastest option misses it; the budget when the cheapest option within the
    deadline costs more. None when the constraints are not the cause.
    """
    from planner.cost.explain import hours_text

    table = relaxed.table
    if table.empty or (deadline_hours is None and budget_usd is None):
        return None
    fastest = table.sort_values(["time_to_solution_hours", "cost_usd"], kind="stable").iloc[0]
    if deadline_hours is not None and float(fastest["time_to_solution_hours"]) > deadline_hours:
        return (
            f"no option: misses the {deadline_hours:g} h deadline; the fastest takes "
            f"{hours_text(float(fastest['time_to_solution_hours']))} on {_option_text(fastest)}"
        )
    in_time = table if deadline_hours is None else table[table["time_to_solution_hours"] <= deadline_hours]
    cheapest = in_time.sort_values(["cost_usd", "time_to_solution_hours"], kind="stable").iloc[0]
    if budget_usd is not None and float(cheapest["cost_usd"]) > budget_usd:
        within = " within the deadline" if deadline_hours is not None else ""
        return (
            f"no option: over the ${budget_usd:,.2f} budget; the cheapest{within} costs "
            f"${float(cheapest['cost_usd']):,.2f} on {_option_text(cheapest)}"
        )
    return None


def _option_text(row: Any) -> str:
    nodes = int(row["nodes"])
    shape = f"{nodes} x " if nodes > 1 else ""
    gpus = float(row["gpus_per_node"]) * nodes
    return (
        f"{row['provider']} {shape}{row['instance_type']} ({gpus:g} x {row['gpu']}, {row['pricing']}, {row['region']})"
    )
