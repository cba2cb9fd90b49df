"""Rank every catalog offering for one training job: time to solution, cost per run, constraints, Pareto front.

Pipeline: select offerings -> group them into families -> ask the model once per configuration
(families.py) -> time and billed hours per (family, nodes, pricing, spot bucket) (grid.py) -> gather per
option and multiply by its price -> constraints, zones, order, Pareto -> one RankResult (result.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from planner.cost import explain
from planner.cost.families import Families, families, model_grid
from planner.cost.grid import N_BUCKETS, CostGrid, cost_grid
from planner.cost.lines import BILLING_NOTE, DEFAULT_INTERRUPTION_RATE, SPOT_BUCKETS
from planner.cost.pareto import pareto_mask
from planner.cost.result import EXCLUDED_COLUMNS, PRICING_NAMES, TABLE_COLUMNS, RankResult, empty_result
from planner.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    from planner.perf.workloads import Workload

__all__ = ["EXCLUDED_COLUMNS", "ORDERS", "PRICINGS", "TABLE_COLUMNS", "RankResult", "rank", "resolve_workload"]

PRICINGS = ("both", "on-demand", "spot")
ORDERS = ("cost", "time", "cost-time", "co2")
# Options grow with offerings x node counts; beyond this many instances the catalog's network figures say little.
MAX_NODES = 64
# Workload flags that name the amount of work; they all set Workload.work.
WORK_ALIASES = ("tokens", "images", "sequences", "samples")


def _check_number(flag: str, value: float | None, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise InputError(f"--{flag} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero) or math.isinf(value):
        raise InputError(f"--{flag} must be {'zero or more' if allow_zero else 'a positive number'}, got {value:g}")


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _check_choice(flag: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InputError(f"--{flag} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _unknown(kind: str, flag: str, value: str, known: Sequence[str]) -> InputError:
    import difflib

    close = difflib.get_close_matches(value, list(known), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    shown = ", ".join(sorted(known)[:10]) + (" ..." if len(known) > 10 else "")
    return InputError(f"--{flag}: unknown {kind} {value!r}{hint}; in the catalog: {shown or 'none'}")


def resolve_workload(workload: str | Workload, options: dict[str, Any]) -> tuple[Workload, dict[str, Any]]:
    """The workload with its overrides applied, and the options left for the performance model.

    Options naming a Workload field (or ``tokens``/``images``/``sequences`` for the amount of work) override the
    preset; the rest go to the estimator.
    """
    from planner.perf.workloads import Workload, get_workload

    fields = {f.name for f in dataclasses.fields(Workload)}
    overrides: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in options.items():
        if key in WORK_ALIASES:
            if value is not None:
                overrides["work"] = value
        elif key in fields:
            overrides[key] = value
        else:
            rest[key] = value
    return get_workload(workload, **overrides), rest


def _default_estimator() -> Callable[..., Any]:
    from planner.perf.model import estimate

    return estimate


def _check_catalog_age(frame: pd.DataFrame, max_age_hours: float | None) -> None:
    """Refuse a given catalog DataFrame whose oldest price per provider is older than allowed."""
    if max_age_hours is None or frame.empty:
        return
    from planner.api import check_age
    from planner.catalog.store import SnapshotInfo

    oldest = frame.groupby("provider", sort=True)["as_of"].min()
    snapshots = [SnapshotInfo(0, str(provider), "live", "", str(as_of), "", 0, 0) for provider, as_of in oldest.items()]
    check_age(snapshots, max_age_hours)


def _gpu_allow_list(gpus: list[str]) -> tuple[list[str], list[str]]:
    from planner.catalog.query import gpu_family

    wanted: list[str] = []
    notes: list[str] = []
    for name in gpus:
        members, note = gpu_family(name)
        wanted.extend(members)
        if note:
            notes.append(note)
    return wanted, notes


def _bucket_index(name: object) -> int:
    """Position of a Spot Advisor bucket label in SPOT_BUCKETS; unknown labels use the default (last) rate."""
    return SPOT_BUCKETS.index(str(name)) if str(name) in SPOT_BUCKETS else len(SPOT_BUCKETS)


def _cheapest_per_group(
    rows: npt.NDArray[np.int64],
    group: npt.NDArray[np.int64],
    n_groups: int,
    price: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The cheapest of ``rows`` (first on ties) in each group, and how many of ``rows`` each stands for.

    Linear time: minima and counts by direct indexing over the group codes instead of a sort.
    """
    import numpy as np

    key = group[rows]
    lowest = np.full(n_groups, np.inf)
    np.fmin.at(lowest, key, price[rows])
    cheapest = price[rows] == lowest[key]
    first = np.full(n_groups, -1, dtype=np.int64)
    first[key[cheapest][::-1]] = rows[cheapest][::-1]
    counts = np.bincount(key, minlength=n_groups)
    kept = (first >= 0).nonzero()[0]
    return first[kept], counts[kept]


def _best(feasible: npt.NDArray[np.bool_], value: npt.NDArray[np.float64]) -> int | None:
    import numpy as np

    if not feasible.any():
        return None
    candidates = feasible.nonzero()[0]
    return int(candidates[np.argmin(value[candidates])])


def _validate(
    pricing: str,
    by: str,
    precision: str,
    max_nodes: int,
    top: int | None,
    numbers: dict[str, tuple[float | None, bool]],
) -> tuple[int, int | None]:
    """One clear line naming the flag for any value out of range; returns max_nodes and top as Python ints."""
    from planner.hardware import PRECISIONS

    _check_choice("pricing", pricing, PRICINGS)
    _check_choice("by", by, ORDERS)
    _check_choice("precision", precision, PRECISIONS)
    for flag, (value, zero_ok) in numbers.items():
        _check_number(flag, value, allow_zero=zero_ok)
    return _whole("max-nodes", max_nodes, MAX_NODES), None if top is None else _whole("top", top, None)


def _whole(flag: str, value: object, most: int | None) -> int:
    """A whole number of at least 1 (and at most ``most``), from any integer type."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise InputError(f"--{flag} must be a whole number of at least 1, got {value!r}")
    if most is not None and int(value) > most:
        raise InputError(f"--{flag} must be at most {most}, got {int(value)}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class _Selection:
    """The offerings the user's filters keep, and how to describe those filters."""

    offers: pd.DataFrame
    notes: list[str]
    asked: str


def _select(
    frame: pd.DataFrame,
    provider: str | Sequence[str] | None,
    region: str | Sequence[str] | None,
    gpu: str | Sequence[str] | None,
    instance_type: str | Sequence[str] | None,
    min_gpu_memory_gib: float | None,
) -> _Selection:
    """Filters that select offerings (the user's choice, so not listed as exclusions); unknown names are errors."""
    import numpy as np

    notes: list[str] = []
    mask = np.ones(len(frame), dtype=bool)
    providers = [p.lower() for p in _as_list(provider)]
    if providers:
        from planner.catalog.schema import PROVIDERS

        for name in providers:
            if name not in PROVIDERS:
                raise _unknown("provider", "provider", name, PROVIDERS)
        mask &= frame["provider"].isin(providers).to_numpy()
    regions = _as_list(region)
    if regions:
        known = frame["region"].unique().tolist()
        for name in regions:
            if name not in known:
                raise _unknown("region", "region", name, known)
        mask &= frame["region"].isin(regions).to_numpy()
    gpus = _as_list(gpu)
    if gpus:
        wanted, gpu_notes = _gpu_allow_list(gpus)
        notes.extend(gpu_notes)
        mask &= frame["gpu"].isin(wanted).to_numpy()
    instances = _as_list(instance_type)
    if instances:
        known = frame["instance_type"].unique().tolist()
        for name in instances:
            if name not in known:
                raise _unknown("instance type", "instance", name, known)
        mask &= frame["instance_type"].isin(instances).to_numpy()
    if min_gpu_memory_gib is not None:
        mask &= (frame["gpu_memory_gib"] >= min_gpu_memory_gib).to_numpy()
    offers = frame.loc[mask] if not mask.all() else frame
    asked = explain.describe_filters(providers, regions, gpus, instances, min_gpu_memory_gib)
    return _Selection(offers=offers, notes=notes, asked=asked)


def rank(
    workload: str | Workload,
    *,
    catalog: pd.DataFrame | None = None,
    estimator: Callable[..., Any] | None = None,
    deadline_hours: float | None = None,
    budget_usd: float | None = None,
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    gpu: str | Sequence[str] | None = None,
    instance_type: str | Sequence[str] | None = None,
    pricing: str = "both",
    max_nodes: int = 1,
    min_gpu_memory_gib: float | None = None,
    max_age_hours: float | None = None,
    by: str = "cost",
    top: int | None = None,
    precision: str = "bf16",
    checkpoint_interval_hours: float | None = None,
    restart_overhead_hours: float = 0.25,
    startup_overhead_hours: float = 0.25,
    default_interruption_rate: float = DEFAULT_INTERRUPTION_RATE,
    interruption_rate_per_node_hour: float | None = None,
    checkpoint_storage_gbps: float | None = None,
    spot_warning_hours: float | None = None,
    store: Any = None,
    **options: Any,
) -> RankResult:
    """Price ``workload`` on every feasible offering and configuration (1..``max_nodes`` instances) and rank them.

    ``options`` are workload overrides (``tokens=2e9``, ``seq_len=...``) and performance-model options. ``estimator``
    replaces ``planner.perf.model.estimate`` (same signature); ``catalog`` replaces the stored catalog.
    ``default_interruption_rate`` is reclaims per node-hour for spot offerings without a published interruption
    label; ``interruption_rate_per_node_hour`` (from one's own history) replaces every band.
    ``checkpoint_interval_hours`` None picks the Young/Daly interval; checkpoints are written at
    ``checkpoint_storage_gbps`` per node. Spot runs longer than ``spot_warning_hours`` (None: data/spot_model.csv)
    carry a warning.
    """
    import numpy as np
    import pandas as pd

    max_nodes, top = _validate(
        pricing,
        by,
        precision,
        max_nodes,
        top,
        {
            "deadline-hours": (deadline_hours, False),
            "budget-usd": (budget_usd, False),
            "min-gpu-memory": (min_gpu_memory_gib, True),
            "max-age": (max_age_hours, True),
            "checkpoint-interval-hours": (checkpoint_interval_hours, False),
            "restart-overhead-hours": (restart_overhead_hours, True),
            "startup-overhead-hours": (startup_overhead_hours, True),
            "default-interruption-rate": (default_interruption_rate, True),
            "interruption-rate": (interruption_rate_per_node_hour, True),
            "checkpoint-storage-gbps": (checkpoint_storage_gbps, False),
            "spot-warning-hours": (spot_warning_hours, False),
        },
    )
    if estimator is None:
        estimator = _default_estimator()
        job, estimate_options = resolve_workload(workload, options)
    elif isinstance(workload, str) or options:
        job, estimate_options = resolve_workload(workload, options)
    else:
        job, estimate_options = workload, {}

    if catalog is None:
        from planner.api import load_catalog

        frame = load_catalog(store, max_age_hours=max_age_hours)
    else:
        frame = catalog
        _check_catalog_age(frame, max_age_hours)

    selection = _select(frame, provider, region, gpu, instance_type, min_gpu_memory_gib)
    offers, notes = selection.offers, selection.notes
    assumptions = explain.assumptions_for(
        job,
        precision,
        checkpoint_interval_hours,
        restart_overhead_hours,
        startup_overhead_hours,
        default_interruption_rate,
        pricing,
        by,
        interruption_rate_per_node_hour=interruption_rate_per_node_hour,
        checkpoint_storage_gbps=checkpoint_storage_gbps,
        spot_warning_hours=spot_warning_hours,
    )
    as_of = frame["as_of"].min() if len(frame) else None
    catalog_as_of = str(as_of) if as_of is not None and as_of == as_of else None
    if offers.empty:
        message = (
            f"no offering in the catalog matches {selection.asked}"
            if selection.asked
            else "the catalog holds no offerings"
        )
        return empty_result(assumptions, catalog_as_of, message, notes, pd.DataFrame(columns=list(EXCLUDED_COLUMNS)))

    fams = families(offers)
    model = model_grid(fams, estimator, job, precision, max_nodes, estimate_options)
    grid = cost_grid(
        fams,
        model,
        startup_overhead_hours=startup_overhead_hours,
        checkpoint_interval_hours=checkpoint_interval_hours,
        restart_overhead_hours=restart_overhead_hours,
        default_interruption_rate=default_interruption_rate,
        interruption_rate_per_node_hour=interruption_rate_per_node_hour,
        params=float(getattr(job, "params", 0.0)),
        checkpoint_storage_gbps=checkpoint_storage_gbps,
    )

    # Per-row columns as arrays; text columns are compared as pandas strings (fast) and never converted.
    od_price = offers["price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    spot_price = offers["spot_price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    reserved = (offers["availability"] == "reservation-only").to_numpy(dtype=bool, na_value=False)
    spot_only = (offers["availability"] == "spot-only").to_numpy(dtype=bool, na_value=False)
    bucket_codes, bucket_names = pd.factorize(offers["spot_interruption"])
    bucket_lut = np.array([_bucket_index(name) for name in bucket_names] + [N_BUCKETS - 1], dtype=np.int64)
    bucket = bucket_lut[bucket_codes]  # factorize gives -1 for missing, which picks the last entry ("no data")
    rows = np.arange(len(offers))
    # Spot-only offerings are never priced on demand; reservation-only ones not at all.
    od_ok = ~reserved & ~spot_only & (od_price > 0)
    spot_ok = ~reserved & (spot_price > 0)
    want_od = pricing in ("both", "on-demand")
    want_spot = pricing in ("both", "spot")

    # Zones of one region with the same spot bucket differ only in price (same model answer, same billing): keep
    # the cheapest row of each (family, region, bucket) per pricing, and how many rows it stands for.
    region_codes, region_index = pd.factorize(offers["region"])
    n_regions = int(region_codes.max()) + 1
    zone_group, zone_groups = pd.factorize((fams.code * n_regions + region_codes) * N_BUCKETS + bucket)
    reps: list[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
    for spot, allowed, wanted, row_price in ((0, od_ok, want_od, od_price), (1, spot_ok, want_spot, spot_price)):
        if wanted:
            chosen, weight = _cheapest_per_group(rows[allowed], zone_group, len(zone_groups), row_price)
            reps.append((spot, chosen, weight))

    # Options: every kept row x node count x pricing, as indices into the grid.
    row_parts: list[npt.NDArray[np.int64]] = []
    cell_parts: list[npt.NDArray[np.int64]] = []
    weight_parts: list[npt.NDArray[np.int64]] = []
    for n in range(1, max_nodes + 1):
        for spot, chosen, weight in reps:
            row_parts.append(chosen)
            cell_parts.append(grid.cell(fams.code[chosen], n, spot, bucket[chosen]))
            weight_parts.append(weight)
    opt_row = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)
    opt_cell = np.concatenate(cell_parts) if cell_parts else np.zeros(0, dtype=np.int64)
    opt_weight = np.concatenate(weight_parts) if weight_parts else np.zeros(0, dtype=np.int64)
    opt_spot, opt_nodes = grid.spot_of(opt_cell), grid.nodes_of(opt_cell)

    # Exclusions as (rows, stage, nodes, pricing code, value, offerings), summarised per family at the end.
    priced = (od_ok & want_od) | (spot_ok & want_spot)
    unpriced = ~reserved & ~priced
    no_price_code = 0 if pricing == "on-demand" else 1 if pricing == "spot" else -1
    ex: list[tuple[Any, int, Any, Any, Any, Any]] = [
        (rows[reserved], explain.RESERVATION, 0, -1, np.nan, 1),
        (rows[unpriced], explain.NO_PRICE, 0, no_price_code, np.nan, 1),
    ]
    # A configuration the model rejects is rejected at any pricing: one entry per family and node count.
    family_rows = np.bincount(fams.code[priced], minlength=len(fams))
    family_first = np.full(len(fams), -1, dtype=np.int64)
    family_first[fams.code[::-1]] = rows[::-1]
    rejected = [(f, n) for (f, n) in model.reasons if family_rows[f] > 0]
    if rejected:
        f_index = np.array([f for f, _ in rejected], dtype=np.int64)
        n_index = np.array([n + 1 for _, n in rejected], dtype=np.int64)
        ex.append((family_first[f_index], explain.MODEL, n_index, -1, np.nan, family_rows[f_index]))
    modelled = grid.modelled[opt_cell]
    never = modelled & ~grid.finishes[opt_cell]
    ex.append((opt_row[never], explain.SPOT_NEVER, opt_nodes[never], opt_spot[never], np.nan, opt_weight[never]))
    keep = (modelled & ~never).nonzero()[0]
    opt_row, opt_cell, opt_spot, opt_nodes = opt_row[keep], opt_cell[keep], opt_spot[keep], opt_nodes[keep]
    opt_weight = opt_weight[keep]
    price = np.where(opt_spot == 1, spot_price[opt_row], od_price[opt_row])
    wall = grid.wall_hours[opt_cell]
    cost = opt_nodes * grid.billed_hours[opt_cell] * price

    everything = np.ones(len(opt_row), dtype=bool)
    within_deadline = wall <= deadline_hours if deadline_hours is not None else everything
    within_budget = cost <= budget_usd if budget_usd is not None else everything
    late = ~within_deadline
    over = within_deadline & ~within_budget
    ex.append((opt_row[late], explain.DEADLINE, opt_nodes[late], opt_spot[late], wall[late], opt_weight[late]))
    ex.append((opt_row[over], explain.BUDGET, opt_nodes[over], opt_spot[over], cost[over], opt_weight[over]))
    ok = within_deadline & within_budget
    excluded = explain.summarise_exclusions(
        ex,
        fams.code,
        fams.provider,
        fams.instance_type,
        fams.gpu,
        fams.gpu_count,
        model.reasons,
        deadline_hours,
        budget_usd,
        max_nodes,
    )
    if not ok.any():
        message = explain.explain_empty(
            offers,
            everything,
            within_deadline,
            within_budget,
            wall,
            cost,
            opt_row,
            opt_nodes,
            opt_spot,
            _best(everything, wall),
            _best(everything, cost),
            deadline_hours,
            budget_usd,
            excluded,
        )
        return empty_result(assumptions, catalog_as_of, message, notes, excluded)

    # One option per family, region, node count and pricing: the cheapest (then fastest) spot bucket's row.
    sel = ok.nonzero()[0]
    group = (
        (fams.code[opt_row[sel]] * n_regions + region_codes[opt_row[sel]]) * (max_nodes + 1) + opt_nodes[sel]
    ) * 2 + opt_spot[sel]
    order = np.lexsort((wall[sel], cost[sel], group))
    first_of_group = np.ones(len(order), dtype=bool)
    first_of_group[1:] = group[order][1:] != group[order][:-1]
    sel = sel[np.sort(order[first_of_group])]
    co2 = _co2_kg(fams, grid, opt_row, opt_cell, np.asarray(region_index, dtype=object), region_codes, sel)

    # Order by cost, time, cost x time or CO2; ties by time/cost, then on-demand first, fewer nodes, catalog position.
    tie = (opt_row[sel], opt_nodes[sel], opt_spot[sel])
    keys = {
        "cost": (*tie, wall[sel], cost[sel]),
        "time": (*tie, cost[sel], wall[sel]),
        "cost-time": (*tie, wall[sel], cost[sel], cost[sel] * wall[sel]),
        "co2": (*tie, wall[sel], cost[sel], co2[sel]),
    }[by]
    sel = sel[np.lexsort(keys)]
    pareto = pareto_mask(cost[sel], wall[sel])
    if top is not None:
        sel, pareto = sel[:top], pareto[:top]

    table, details = _table(
        offers,
        fams,
        grid,
        opt_row[sel],
        opt_cell[sel],
        price[sel],
        pareto,
        np.asarray(region_index, dtype=object)[region_codes[opt_row[sel]]],
        bucket[opt_row[sel]],
        co2[sel],
        spot_warning_hours,
    )
    return RankResult(
        table=table,
        excluded=excluded,
        assumptions=assumptions,
        catalog_as_of=catalog_as_of,
        details=details,
        message=None,
        notes=notes,
    )


def _co2_kg(
    fams: Families,
    grid: CostGrid,
    opt_row: npt.NDArray[np.int64],
    opt_cell: npt.NDArray[np.int64],
    region_names: npt.NDArray[np.object_],
    region_codes: npt.NDArray[np.int64],
    sel: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """kgCO2e of the options ``sel`` (NaN elsewhere): their facility energy x their region's grid intensity."""
    import numpy as np
    import pandas as pd

    from planner.cost.energy import carbon_intensities

    result = np.full(len(opt_row), np.nan)
    # Look each (provider, region) pair up once: options far outnumber the pairs.
    provider_codes, provider_names = pd.factorize(fams.provider)
    rows = opt_row[sel]
    pair = provider_codes[fams.code[rows]] * len(region_names) + region_codes[rows]
    pairs, inverse = np.unique(pair, return_inverse=True)
    grams = carbon_intensities(
        [str(provider_names[p // len(region_names)]) for p in pairs.tolist()],
        [str(region_names[p % len(region_names)]) for p in pairs.tolist()],
    )
    result[sel] = grid.energy_kwh[opt_cell[sel]] * grams[inverse.reshape(-1)] / 1000.0
    return result


def _table(
    offers: pd.DataFrame,
    fams: Families,
    grid: CostGrid,
    rows: npt.NDArray[np.int64],
    cells: npt.NDArray[np.int64],
    price: npt.NDArray[np.float64],
    pareto: npt.NDArray[np.bool_],
    regions: npt.NDArray[np.object_],
    bucket: npt.NDArray[np.int64],
    co2: npt.NDArray[np.float64],
    spot_warning_hours: float | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The options table (TABLE_COLUMNS) and, row for row, the quantities of its cost lines."""
    import numpy as np
    import pandas as pd

    family = fams.code[rows]
    spot = grid.spot_of(cells)
    nodes = grid.nodes_of(cells)

    def text(values: Any) -> pd.Series:
        # Object dtype: building pandas' string columns from Python strings costs more than the ranking.
        return pd.Series(values, dtype=object)

    def taken(column: str) -> npt.NDArray[np.object_]:
        return offers[column].take(rows).to_numpy(dtype=object, na_value="")

    pricing = text(np.array(PRICING_NAMES, dtype=object)[spot])
    notes = explain.option_notes(
        spot == 1,
        bucket,
        nodes,
        fams.network_gbps[family],
        taken("flags"),
        fams.provider[family],
        grid.spot_risky[cells],
        grid.wall_hours[cells],
        spot_warning_hours,
    )
    table = pd.DataFrame(
        {
            "rank": np.arange(1, len(rows) + 1),
            "provider": text(fams.provider[family]),
            "region": text(regions),
            "zone": text(taken("zone")),
            "instance_type": text(fams.instance_type[family]),
            "gpu": text(fams.gpu[family]),
            "gpus_per_node": fams.gpu_count[family],
            "nodes": nodes.astype(np.int64),
            "pricing": pricing,
            "price_usd_per_hour": price,
            "time_to_solution_hours": grid.wall_hours[cells],
            "time_low_hours": grid.wall_low_hours[cells],
            "time_high_hours": grid.wall_high_hours[cells],
            "cost_usd": nodes * grid.billed_hours[cells] * price,
            "cost_low_usd": nodes * grid.billed_low_hours[cells] * price,
            "cost_high_usd": nodes * grid.billed_high_hours[cells] * price,
            "expected_interruptions": grid.interruptions[cells],
            "p_no_interruption": grid.p_no_interruption[cells],
            "checkpoint_every_hours": grid.checkpoint_interval_hours[cells],
            "spot_risky": grid.spot_risky[cells],
            "energy_kwh": grid.energy_kwh[cells],
            "energy_low_kwh": grid.energy_low_kwh[cells],
            "energy_high_kwh": grid.energy_high_kwh[cells],
            "co2_kg": co2,
            "pareto": pareto,
            "price_as_of": text(taken("as_of")),
            "notes": text(notes),
        },
        columns=list(TABLE_COLUMNS),
    )
    held = grid.wall_hours[cells] - grid.wait_hours[cells]  # start-up + the hours the instances are held
    billing_notes = np.array([BILLING_NOTE.get(str(p), "per second") for p in fams.provider], dtype=object)
    details = pd.DataFrame(
        {
            "pricing": pricing,
            "nodes": nodes.astype(float),
            "price_usd_per_hour": price,
            "training_hours": grid.training_hours[cells],
            "startup_hours": grid.work_hours[cells] - grid.training_hours[cells],
            "checkpoint_hours": grid.checkpoint_write_hours[cells],
            "rework_hours": held - grid.work_hours[cells] - grid.checkpoint_write_hours[cells],
            "wait_hours": grid.wait_hours[cells],
            "held_hours": held,
            "wall_hours": grid.wall_hours[cells],
            "billed_hours": grid.billed_hours[cells],
            "billing": text(billing_notes[family]),
        }
    )
    return table, details
