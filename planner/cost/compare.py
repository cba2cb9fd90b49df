"""`compare`: the best option of each of a few GPUs or instance types for the same job, side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from planner.cost.rank import PRICINGS, rank
from planner.cost.result import TABLE_COLUMNS, RankResult
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.perf.workloads import Workload

COMPARE_COLUMNS: tuple[str, ...] = ("choice", *TABLE_COLUMNS)


def compare(
    workload: str | Workload,
    *,
    gpus: Sequence[str] = (),
    instance_types: Sequence[str] = (),
    pricing: str = "both",
    **constraints: Any,
) -> RankResult:
    """The best option of each GPU (any spelling; a family name covers its variants) or instance type, per pricing.

    ``table`` has one row per (choice, pricing) in the order given, with ``rank`` the option's place in the full
    ranking of the choices; a choice with no option gets a row of blanks and the reason in ``notes``.
    """
    import pandas as pd

    from planner.catalog.query import gpu_family

    if bool(gpus) == bool(instance_types):
        raise InputError("compare needs --gpu (repeat for each GPU) or --instance (repeat for each type), not both")
    if pricing not in PRICINGS:
        raise InputError(f"--pricing must be one of {', '.join(PRICINGS)}, got {pricing!r}")
    choices: list[tuple[str, list[str]]] = []
    if gpus:
        choices = [(name, gpu_family(name)[0]) for name in gpus]
        result = rank(workload, gpu=list(gpus), pricing=pricing, top=None, **constraints)
        key_column = "gpu"
    else:
        choices = [(name, [name]) for name in instance_types]
        result = rank(workload, instance_type=list(instance_types), pricing=pricing, top=None, **constraints)
        key_column = "instance_type"
    pricings = ["on-demand", "spot"] if pricing == "both" else [pricing]
    table, details = result.table, result.details
    rows: list[dict[str, Any]] = []
    detail_rows: list[dict[str, Any]] = []
    for name, members in choices:
        mine = table[table[key_column].isin(members)]
        for kind in pricings:
            best = mine[mine["pricing"] == kind].head(1)
            if len(best):
                position = int(best.index[0])
                rows.append({"choice": name, **{str(k): v for k, v in best.iloc[0].items()}})
                detail_rows.append({str(k): v for k, v in details.iloc[position].items()})
                continue
            rows.append({"choice": name, "pricing": kind, "notes": _why_missing(result, key_column, members, kind)})
            detail_rows.append({})
    frame = pd.DataFrame.from_records(rows, columns=list(COMPARE_COLUMNS))
    numeric = ("gpus_per_node", "expected_interruptions", "p_no_interruption", "co2_kg")
    for column in (c for c in TABLE_COLUMNS if c in numeric or c.endswith(("_usd", "_hours", "_kwh", "_per_hour"))):
        frame[column] = pd.to_numeric(frame[column])
    frame["rank"] = frame["rank"].astype("Int64")
    frame["nodes"] = frame["nodes"].astype("Int64")
    return RankResult(
        table=frame,
        excluded=result.excluded,
        assumptions=result.assumptions,
        catalog_as_of=result.catalog_as_of,
        details=pd.DataFrame.from_records(detail_rows),
        message=result.message if result.empty else None,
        notes=result.notes,
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
