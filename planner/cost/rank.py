"""Rank every catalog offering for one training job: time to solution, cost per run, constraints, Pareto front.

The performance model is called once per distinct configuration (GPU, GPUs per node, nodes, interconnect,
network); its answer is broadcast over every region and zone that sells that configuration, and all the
pricing arithmetic is done on numpy arrays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.cost.lines import (
    BILLING_NOTE,
    DEFAULT_INTERRUPTION_RATE,
    DEFAULT_SPOT_MONTHLY,
    HOURS_PER_MONTH,
    SPOT_BUCKET_MONTHLY,
    SPOT_BUCKETS,
    CostLine,
    billed_hours,
    billing_steps,
    spot_rate_table,
    spot_wall_hours,
)
from planner.cost.pareto import pareto_mask
from planner.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    from planner.perf.workloads import Workload

PRICINGS = ("both", "on-demand", "spot")
ORDERS = ("cost", "time", "cost-time")
# The columns of RankResult.table, in order; names are stable (scripts read them), units last.
TABLE_COLUMNS: tuple[str, ...] = (
    "rank",
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpus_per_node",
    "nodes",
    "pricing",
    "price_usd_per_hour",
    "time_to_solution_hours",
    "cost_usd",
    "cost_low_usd",
    "cost_high_usd",
    "expected_interruptions",
    "energy_kwh",
    "pareto",
    "price_as_of",
    "notes",
)
EXCLUDED_COLUMNS: tuple[str, ...] = (
    "provider",
    "instance_type",
    "gpu",
    "gpus_per_node",
    "nodes",
    "pricing",
    "offerings",
    "reason",
)
# Workload flags that name the amount of work; they all set Workload.work.
WORK_ALIASES = ("tokens", "images", "sequences", "samples")

# Exclusion stages, in pipeline order (an option is reported at the first one it fails).
_RESERVATION, _NO_PRICE, _MODEL, _SPOT_NEVER, _DEADLINE, _BUDGET = range(1, 7)
_PRICING_NAMES = ("on-demand", "spot")


@dataclass(frozen=True, eq=False)
class RankResult:
    """Ranked options for one workload, what was left out and why, and the assumptions behind the numbers.

    ``table`` has one row per option (offering x nodes x pricing; zones of a region collapse to the cheapest),
    ``details`` the same rows' cost-line quantities, ``message`` says why ``table`` is empty when it is.
    """

    table: pd.DataFrame
    excluded: pd.DataFrame
    assumptions: list[str]
    catalog_as_of: str | None
    details: pd.DataFrame
    message: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """No option met the constraints (``message`` says why)."""
        return len(self.table) == 0

    def cost_lines(self, rank: int) -> list[CostLine]:
        """The named cost lines of the option ranked ``rank`` (1-based); they sum to its ``cost_usd``."""
        matches = (self.table["rank"] == rank).fillna(False).to_numpy(dtype=bool).nonzero()[0]
        if len(matches) == 0:
            raise InputError(f"no option ranked {rank}; ranks run from 1 to {len(self.table)}")
        row = self.details.iloc[int(matches[0])]
        return _lines_for(row)

    def breakdown(self) -> pd.DataFrame:
        """Every option's cost lines in long form: rank, name, unit, quantity, unit_price_usd, cost_usd."""
        import pandas as pd

        records = [
            {
                "rank": int(rank),
                "name": line.name,
                "unit": line.unit,
                "quantity": line.quantity,
                "unit_price_usd": line.unit_price_usd,
                "cost_usd": line.cost_usd,
            }
            for rank, (_, row) in zip(self.table["rank"], self.details.iterrows(), strict=True)
            for line in _lines_for(row)
        ]
        return pd.DataFrame.from_records(
            records, columns=["rank", "name", "unit", "quantity", "unit_price_usd", "cost_usd"]
        )


def _lines_for(row: pd.Series) -> list[CostLine]:
    nodes = float(row["nodes"])
    price = float(row["price_usd_per_hour"])
    pricing = str(row["pricing"])
    lines = [
        CostLine(f"{pricing} compute: training", "instance-hour", nodes * float(row["training_hours"]), price),
        CostLine(f"{pricing} compute: start-up", "instance-hour", nodes * float(row["startup_hours"]), price),
    ]
    if pricing == "spot":
        lines.append(
            CostLine(
                "spot compute: expected rework after interruptions",
                "instance-hour",
                nodes * float(row["rework_hours"]),
                price,
            )
        )
    rounding = nodes * (float(row["billed_hours"]) - float(row["wall_hours"]))
    lines.append(CostLine(f"billing rounding ({row['billing']})", "instance-hour", rounding, price))
    return lines


@dataclass
class _ConfigEstimate:
    """The performance model's answer for one configuration, or why it has none."""

    hours: float = math.nan
    hours_low: float = math.nan
    hours_high: float = math.nan
    energy_kwh: float = math.nan
    reason: str | None = None


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


def _estimate_config(
    estimator: Callable[..., Any],
    workload: Any,
    gpu: str,
    gpus_per_node: float,
    nodes: int,
    interconnect: str,
    network_gbps: float,
    precision: str,
    options: dict[str, Any],
) -> _ConfigEstimate:
    total = gpus_per_node * nodes
    if not float(total).is_integer() or total < 1:
        return _ConfigEstimate(reason=f"a fraction of a GPU ({gpus_per_node:g} per instance) is not modelled")
    if nodes > 1 and not (network_gbps > 0):
        return _ConfigEstimate(reason="no network bandwidth known for joining instances")
    try:
        result = estimator(
            workload,
            gpu,
            int(total),
            precision,
            gpus_per_node=int(gpus_per_node) if float(gpus_per_node).is_integer() else gpus_per_node,
            interconnect=interconnect,
            network_gbps=None if network_gbps != network_gbps else float(network_gbps),
            **options,
        )
    except InputError as exc:
        return _ConfigEstimate(reason=str(exc))
    if not getattr(result, "fits_in_memory", True):
        why = getattr(result, "why_not_fits", None)
        needed = getattr(result, "min_gpus_to_fit", None)
        text = why or "the model does not fit in GPU memory"
        if needed and not why:
            text += f" (needs at least {needed} GPUs)"
        return _ConfigEstimate(reason=text)
    hours = float(result.time_to_solution_hours)
    if not (hours > 0 and math.isfinite(hours)):
        return _ConfigEstimate(reason="the performance model gave no time to solution")
    throughput = getattr(result, "throughput", None)
    low_tp = getattr(result, "throughput_low", None)
    high_tp = getattr(result, "throughput_high", None)
    # Time scales inversely with throughput: the optimistic throughput gives the short (cheap) end.
    hours_low = hours * throughput / high_tp if throughput and high_tp else hours
    hours_high = hours * throughput / low_tp if throughput and low_tp else hours
    energy = getattr(result, "energy_kwh", None)
    return _ConfigEstimate(
        hours=hours,
        hours_low=min(hours_low, hours),
        hours_high=max(hours_high, hours),
        energy_kwh=float(energy) if energy is not None else math.nan,
    )


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
    checkpoint_interval_hours: float = 1.0,
    restart_overhead_hours: float = 0.25,
    startup_overhead_hours: float = 0.25,
    default_interruption_rate: float = DEFAULT_INTERRUPTION_RATE,
    store: Any = None,
    **options: Any,
) -> RankResult:
    """Price ``workload`` on every feasible offering and configuration (1..``max_nodes`` instances) and rank them.

    ``options`` are workload overrides (``tokens=2e9``, ``seq_len=...``) and performance-model options. ``estimator``
    replaces ``planner.perf.model.estimate`` (same signature); ``catalog`` replaces the stored catalog.
    """
    import numpy as np
    import pandas as pd

    from planner.hardware import PRECISIONS

    _check_choice("pricing", pricing, PRICINGS)
    _check_choice("by", by, ORDERS)
    _check_choice("precision", precision, PRECISIONS)
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise InputError(f"--max-nodes must be a whole number of at least 1, got {max_nodes!r}")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise InputError(f"--top must be a whole number of at least 1, got {top!r}")
    for flag, value, zero_ok in (
        ("deadline-hours", deadline_hours, False),
        ("budget-usd", budget_usd, False),
        ("min-gpu-memory", min_gpu_memory_gib, True),
        ("max-age", max_age_hours, True),
        ("checkpoint-interval-hours", checkpoint_interval_hours, False),
        ("restart-overhead-hours", restart_overhead_hours, True),
        ("startup-overhead-hours", startup_overhead_hours, True),
        ("default-interruption-rate", default_interruption_rate, True),
    ):
        _check_number(flag, value, allow_zero=zero_ok)

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

    # Constraints that select offerings (the user's choice, so not listed as exclusions).
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

    assumptions = _assumptions(
        job,
        precision,
        checkpoint_interval_hours,
        restart_overhead_hours,
        startup_overhead_hours,
        default_interruption_rate,
        pricing,
        by,
    )
    as_of = frame["as_of"].min() if len(frame) else None
    catalog_as_of = str(as_of) if as_of is not None and as_of == as_of else None
    if offers.empty:
        asked = _describe_filters(providers, regions, gpus, instances, min_gpu_memory_gib)
        message = f"no offering in the catalog matches {asked}" if asked else "the catalog holds no offerings"
        return _empty_result(assumptions, catalog_as_of, message, notes, pd.DataFrame(columns=list(EXCLUDED_COLUMNS)))

    family, first = _family_codes(offers)
    n_families = len(first)
    fam_provider = offers["provider"].take(first).to_numpy(dtype=object)
    fam_instance = offers["instance_type"].take(first).to_numpy(dtype=object)
    fam_gpu = offers["gpu"].take(first).to_numpy(dtype=object)
    fam_count = offers["gpu_count"].take(first).to_numpy(dtype=float, na_value=np.nan)
    fam_link = offers["interconnect"].take(first).to_numpy(dtype=object)
    fam_network = offers["network_gbps"].take(first).to_numpy(dtype=float, na_value=np.nan)

    # The performance model, once per distinct configuration.
    node_counts = list(range(1, max_nodes + 1))
    cache: dict[tuple[Any, ...], _ConfigEstimate] = {}
    est_hours = np.full((n_families, max_nodes), np.nan)
    est_low = np.full((n_families, max_nodes), np.nan)
    est_high = np.full((n_families, max_nodes), np.nan)
    est_energy = np.full((n_families, max_nodes), np.nan)
    est_reason: dict[tuple[int, int], str] = {}
    for f in range(n_families):
        for n in node_counts:
            network = fam_network[f]
            key = (fam_gpu[f], fam_count[f], n, fam_link[f], None if network != network else network, precision)
            found = cache.get(key)
            if found is None:
                found = _estimate_config(
                    estimator,
                    job,
                    str(fam_gpu[f]),
                    float(fam_count[f]),
                    n,
                    str(fam_link[f]),
                    float(network),
                    precision,
                    estimate_options,
                )
                cache[key] = found
            if found.reason is not None:
                est_reason[(f, n - 1)] = found.reason
            else:
                est_hours[f, n - 1] = found.hours
                est_low[f, n - 1] = found.hours_low
                est_high[f, n - 1] = found.hours_high
                est_energy[f, n - 1] = found.energy_kwh
    reasons = set(est_reason.values())
    if len(cache) and len(est_reason) == n_families * max_nodes and len(reasons) == 1:
        only = next(iter(reasons))
        # The same complaint from every configuration is about the input (e.g. a bad option), not the offerings.
        if all(c.reason == only for c in cache.values()) and _is_input_problem(only):
            raise InputError(only)

    # Per-row columns as arrays; text columns are compared as pandas strings (fast) and never converted.
    od_price = offers["price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    spot_price = offers["spot_price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    reserved = (offers["availability"] == "reservation-only").to_numpy(dtype=bool, na_value=False)
    spot_only = (offers["availability"] == "spot-only").to_numpy(dtype=bool, na_value=False)
    bucket_codes, bucket_names = pd.factorize(offers["spot_interruption"])
    n_buckets = len(SPOT_BUCKETS) + 1  # the last one: no Spot Advisor data
    bucket_lut = np.array([_bucket_index(name) for name in bucket_names] + [n_buckets - 1], dtype=np.int64)
    bucket = bucket_lut[bucket_codes]  # factorize gives -1 for missing, which picks the last entry
    rows = np.arange(len(offers))

    od_ok = ~reserved & ~spot_only & (od_price > 0)
    spot_ok = ~reserved & (spot_price > 0)
    want_od = pricing in ("both", "on-demand")
    want_spot = pricing in ("both", "spot")

    # Everything but the price depends only on (family, nodes, pricing, spot bucket): compute it on that small
    # grid, then gather per option.
    increment_s, minimum_s = billing_steps([str(p) for p in fam_provider])
    rates = spot_rate_table(default_interruption_rate)  # (bucket, low/expected/high)
    shape = (n_families, max_nodes, 2, n_buckets)
    grid_hours = np.broadcast_to(est_hours[:, :, None, None], shape)
    grid_nodes = np.broadcast_to(np.arange(1, max_nodes + 1, dtype=float)[None, :, None, None], shape)
    spot_axis = np.array([0.0, 1.0])[None, None, :, None]
    grid_rate = [np.broadcast_to(spot_axis * rates[:, k][None, None, None, :], shape) for k in range(3)]
    grid_inc = np.broadcast_to(increment_s[:, None, None, None], shape)
    grid_min = np.broadcast_to(minimum_s[:, None, None, None], shape)
    ckpt, restart = checkpoint_interval_hours, restart_overhead_hours
    work_grid = grid_hours + startup_overhead_hours
    wall_grid, interruptions_grid = spot_wall_hours(work_grid, grid_rate[1], grid_nodes, ckpt, restart)
    low_work = np.broadcast_to(est_low[:, :, None, None], shape) + startup_overhead_hours
    high_work = np.broadcast_to(est_high[:, :, None, None], shape) + startup_overhead_hours
    wall_low_grid, _ = spot_wall_hours(low_work, grid_rate[0], grid_nodes, ckpt, restart)
    wall_high_grid, _ = spot_wall_hours(high_work, grid_rate[2], grid_nodes, ckpt, restart)
    wall_high_grid = np.where(np.isfinite(wall_high_grid), wall_high_grid, wall_grid)
    finite = np.isfinite(wall_grid)
    billed_grid = billed_hours(np.where(finite, wall_grid, 0.0), grid_inc, grid_min)
    billed_low_grid = billed_hours(np.where(finite, np.minimum(wall_low_grid, wall_grid), 0.0), grid_inc, grid_min)
    billed_high_grid = billed_hours(np.where(finite, wall_high_grid, 0.0), grid_inc, grid_min)
    # Energy of the work actually done, rework included.
    with np.errstate(invalid="ignore", divide="ignore"):
        energy_grid = np.broadcast_to(est_energy[:, :, None, None], shape) * (
            (wall_grid - startup_overhead_hours) / grid_hours
        )
    modelled_grid = ~np.isnan(grid_hours)

    # Options: every priced row x node count x pricing, as indices into the grid.
    row_parts: list[npt.NDArray[np.int64]] = []
    cell_parts: list[npt.NDArray[np.int64]] = []
    for n in range(max_nodes):
        for spot, allowed in ((0, od_ok if want_od else None), (1, spot_ok if want_spot else None)):
            if allowed is None:
                continue
            chosen = rows[allowed]
            row_parts.append(chosen)
            cell_parts.append(((family[chosen] * max_nodes + n) * 2 + spot) * n_buckets + bucket[chosen])
    opt_row = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)
    opt_cell = np.concatenate(cell_parts) if cell_parts else np.zeros(0, dtype=np.int64)
    opt_spot = (opt_cell // n_buckets) % 2
    opt_nodes = (opt_cell // (n_buckets * 2)) % max_nodes + 1

    # Row- and option-level exclusions: (row, stage, nodes, pricing code, value), summarised per family later.
    priced = (od_ok & want_od) | (spot_ok & want_spot)
    unpriced = ~reserved & ~priced
    no_price_code = 0 if pricing == "on-demand" else 1 if pricing == "spot" else -1
    ex: list[tuple[Any, int, Any, Any, Any]] = [
        (rows[reserved], _RESERVATION, 0, -1, np.nan),
        (rows[unpriced], _NO_PRICE, 0, no_price_code, np.nan),
    ]
    modelled = modelled_grid.reshape(-1)[opt_cell]
    never_finishes = modelled & ~finite.reshape(-1)[opt_cell]
    # A configuration the model rejects is rejected at any pricing: report each offering once per node count.
    seen = np.zeros(len(offers) * max_nodes, dtype=bool)
    seen[opt_row[~modelled] * max_nodes + (opt_nodes[~modelled] - 1)] = True
    unmodelled_key = seen.nonzero()[0]
    ex.append((unmodelled_key // max_nodes, _MODEL, unmodelled_key % max_nodes + 1, -1, np.nan))
    ex.append((opt_row[never_finishes], _SPOT_NEVER, opt_nodes[never_finishes], opt_spot[never_finishes], np.nan))
    feasible_idx = (modelled & ~never_finishes).nonzero()[0]
    opt_row, opt_cell = opt_row[feasible_idx], opt_cell[feasible_idx]
    opt_spot, opt_nodes = opt_spot[feasible_idx], opt_nodes[feasible_idx]
    is_spot = opt_spot == 1
    price = np.where(is_spot, spot_price[opt_row], od_price[opt_row])
    nodes_f = opt_nodes.astype(float)
    wall = wall_grid.reshape(-1)[opt_cell]
    cost = nodes_f * billed_grid.reshape(-1)[opt_cell] * price

    feasible = np.ones(len(opt_row), dtype=bool)
    fastest = _best(feasible, wall)
    cheapest = _best(feasible, cost)
    within_deadline = wall <= deadline_hours if deadline_hours is not None else feasible
    within_budget = cost <= budget_usd if budget_usd is not None else feasible
    late = ~within_deadline
    over = within_deadline & ~within_budget
    ex.append((opt_row[late], _DEADLINE, opt_nodes[late], opt_spot[late], wall[late]))
    ex.append((opt_row[over], _BUDGET, opt_nodes[over], opt_spot[over], cost[over]))
    ok = within_deadline & within_budget

    excluded = _summarise_exclusions(
        ex, family, fam_provider, fam_instance, fam_gpu, fam_count, est_reason, deadline_hours, budget_usd, max_nodes
    )

    if not ok.any():
        message = _explain_empty(
            offers,
            feasible,
            within_deadline,
            within_budget,
            wall,
            cost,
            opt_row,
            opt_nodes,
            opt_spot,
            fastest,
            cheapest,
            deadline_hours,
            budget_usd,
            excluded,
        )
        return _empty_result(assumptions, catalog_as_of, message, notes, excluded)

    sel = ok.nonzero()[0]
    # Zones of one region collapse to the cheapest (then fastest) one per offering, node count and pricing.
    region_codes, region_index = pd.factorize(offers["region"])
    region_names = np.asarray(region_index, dtype=object)
    group = (
        (family[opt_row[sel]].astype(np.int64) * (int(region_codes.max()) + 1) + region_codes[opt_row[sel]])
        * (max_nodes + 1)
        + opt_nodes[sel]
    ) * 2 + opt_spot[sel]
    order = np.lexsort((wall[sel], cost[sel], group))
    sorted_group = group[order]
    first_of_group = np.ones(len(order), dtype=bool)
    first_of_group[1:] = sorted_group[1:] != sorted_group[:-1]
    sel = sel[np.sort(order[first_of_group])]

    # Order: by cost, time or cost x time; ties by time/cost then catalog position (deterministic).
    if by == "cost":
        keys: tuple[Any, ...] = (opt_row[sel], opt_nodes[sel], opt_spot[sel], wall[sel], cost[sel])
    elif by == "time":
        keys = (opt_row[sel], opt_nodes[sel], opt_spot[sel], cost[sel], wall[sel])
    else:
        keys = (opt_row[sel], opt_nodes[sel], opt_spot[sel], wall[sel], cost[sel], cost[sel] * wall[sel])
    sel = sel[np.lexsort(keys)]
    pareto = pareto_mask(cost[sel], wall[sel])
    if top is not None:
        sel, pareto = sel[:top], pareto[:top]

    picked_rows = opt_row[sel]
    picked_family = family[picked_rows]
    cells = opt_cell[sel]
    spot_sel = is_spot[sel]
    nodes_sel = opt_nodes[sel]

    def text(values: Any) -> pd.Series:
        # Object dtype: building pandas' string columns from Python strings costs more than the ranking.
        return pd.Series(values, dtype=object)

    def taken(column: str) -> npt.NDArray[np.object_]:
        return offers[column].take(picked_rows).to_numpy(dtype=object, na_value="")

    table = pd.DataFrame(
        {
            "rank": np.arange(1, len(sel) + 1),
            "provider": text(fam_provider[picked_family]),
            "region": text(region_names[region_codes[picked_rows]]),
            "zone": text(taken("zone")),
            "instance_type": text(fam_instance[picked_family]),
            "gpu": text(fam_gpu[picked_family]),
            "gpus_per_node": fam_count[picked_family],
            "nodes": nodes_sel.astype(np.int64),
            "pricing": text(np.array(_PRICING_NAMES, dtype=object)[opt_spot[sel]]),
            "price_usd_per_hour": price[sel],
            "time_to_solution_hours": wall[sel],
            "cost_usd": cost[sel],
            "cost_low_usd": nodes_f[sel] * billed_low_grid.reshape(-1)[cells] * price[sel],
            "cost_high_usd": nodes_f[sel] * billed_high_grid.reshape(-1)[cells] * price[sel],
            "expected_interruptions": interruptions_grid.reshape(-1)[cells],
            "energy_kwh": energy_grid.reshape(-1)[cells],
            "pareto": pareto,
            "price_as_of": text(taken("as_of")),
            "notes": text(
                _option_notes(
                    spot_sel,
                    bucket[picked_rows],
                    nodes_sel,
                    fam_network[picked_family],
                    taken("flags"),
                    default_interruption_rate,
                )
            ),
        },
        columns=list(TABLE_COLUMNS),
    )
    billing_notes = np.array([BILLING_NOTE.get(str(p), "per second") for p in fam_provider], dtype=object)
    details = pd.DataFrame(
        {
            "pricing": table["pricing"],
            "nodes": nodes_sel.astype(float),
            "price_usd_per_hour": price[sel],
            "training_hours": grid_hours.reshape(-1)[cells],
            "startup_hours": np.full(len(sel), float(startup_overhead_hours)),
            "rework_hours": wall[sel] - work_grid.reshape(-1)[cells],
            "wall_hours": wall[sel],
            "billed_hours": billed_grid.reshape(-1)[cells],
            "billing": text(billing_notes[picked_family]),
        }
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


def _family_codes(offers: pd.DataFrame) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """One code per offering family (provider, instance type and its hardware), shared by its regions and zones.

    Returns the code of each row and the first row of each family. Fast path: an instance type of one provider
    and GPU has one GPU count, interconnect and network everywhere; rows that disagree on the numbers fall back
    to grouping by every hardware column.
    """
    import numpy as np
    import pandas as pd

    codes = np.zeros(len(offers), dtype=np.int64)
    for column in ("instance_type", "gpu", "provider"):
        column_codes, uniques = pd.factorize(offers[column])
        codes = codes * (len(uniques) + 1) + column_codes
    family: npt.NDArray[np.int64] = pd.factorize(codes)[0].astype(np.int64)
    first = np.zeros(int(family.max()) + 1, dtype=np.int64)
    first[family[::-1]] = np.arange(len(family))[::-1]
    for column in ("gpu_count", "network_gbps"):
        values = offers[column].to_numpy(dtype=float, na_value=np.nan)
        expected = values[first][family]
        if not np.array_equal(values, expected, equal_nan=True):
            columns = ["provider", "instance_type", "gpu", "gpu_count", "interconnect", "network_gbps"]
            family = np.asarray(offers.groupby(columns, sort=False, dropna=False).ngroup(), dtype=np.int64)
            first = np.zeros(int(family.max()) + 1, dtype=np.int64)
            first[family[::-1]] = np.arange(len(family))[::-1]
            break
    return family, first


def _bucket_index(name: object) -> int:
    """Position of a Spot Advisor bucket label in SPOT_BUCKETS; unknown labels use the default (last) rate."""
    return SPOT_BUCKETS.index(str(name)) if str(name) in SPOT_BUCKETS else len(SPOT_BUCKETS)


def _monthly(rate_per_hour: float) -> float:
    """Share of instances interrupted at least once a month at ``rate_per_hour``."""
    return 1.0 - math.exp(-rate_per_hour * HOURS_PER_MONTH)


def _is_input_problem(reason: str) -> bool:
    return reason.startswith(("unknown", "--"))


def _best(feasible: npt.NDArray[np.bool_], value: npt.NDArray[np.float64]) -> int | None:
    import numpy as np

    if not feasible.any():
        return None
    candidates = feasible.nonzero()[0]
    return int(candidates[np.argmin(value[candidates])])


def _describe(offers: pd.DataFrame, row: int, nodes: int, spot: int) -> str:
    record = offers.iloc[row]
    count = float(record["gpu_count"]) * nodes
    shape = f"{nodes} x " if nodes > 1 else ""
    return (
        f"{record['provider']} {shape}{record['instance_type']} ({count:g} x {record['gpu']}, "
        f"{_PRICING_NAMES[spot]}, {record['region']})"
    )


def _hours_text(hours: float) -> str:
    return f"{hours:.1f} h" if hours < 100 else f"{hours:,.0f} h"


def _explain_empty(
    offers: pd.DataFrame,
    feasible: npt.NDArray[np.bool_],
    within_deadline: npt.NDArray[np.bool_],
    within_budget: npt.NDArray[np.bool_],
    wall: npt.NDArray[np.float64],
    cost: npt.NDArray[np.float64],
    opt_row: npt.NDArray[np.int64],
    opt_nodes: npt.NDArray[np.int64],
    opt_spot: npt.NDArray[np.int64],
    fastest: int | None,
    cheapest: int | None,
    deadline_hours: float | None,
    budget_usd: float | None,
    excluded: pd.DataFrame,
) -> str:
    import numpy as np

    def where(i: int) -> str:
        return _describe(offers, int(opt_row[i]), int(opt_nodes[i]), int(opt_spot[i]))

    if fastest is None or cheapest is None:
        if len(excluded):
            counts = excluded.groupby("reason", sort=False)["offerings"].sum().sort_values(ascending=False)
            reason = str(counts.index[0])
            return f"no offering can run this job: {reason}"
        return "no offering has a price for the chosen --pricing"
    deadline_text = f"a {deadline_hours:g}-hour deadline" if deadline_hours is not None else ""
    budget_text = f"a ${budget_usd:,.2f} budget" if budget_usd is not None else ""
    if deadline_hours is not None and not within_deadline.any():
        return (
            f"no offering meets {deadline_text}; the fastest takes {_hours_text(float(wall[fastest]))} "
            f"on {where(fastest)}"
        )
    if budget_usd is not None and not (feasible & within_budget).any():
        return f"no offering fits {budget_text}; the cheapest costs ${float(cost[cheapest]):,.2f} on {where(cheapest)}"
    # Each constraint alone is met, but not both together.
    in_time = within_deadline.nonzero()[0]
    best = int(in_time[np.argmin(cost[in_time])])
    return (
        f"no offering meets both {deadline_text} and {budget_text}; the cheapest within the deadline costs "
        f"${float(cost[best]):,.2f} on {where(best)}"
    )


def _summarise_exclusions(
    parts: list[tuple[Any, int, Any, Any, Any]],
    family: npt.NDArray[Any],
    fam_provider: npt.NDArray[np.object_],
    fam_instance: npt.NDArray[np.object_],
    fam_gpu: npt.NDArray[np.object_],
    fam_count: npt.NDArray[np.float64],
    est_reason: dict[tuple[int, int], str],
    deadline_hours: float | None,
    budget_usd: float | None,
    max_nodes: int,
) -> pd.DataFrame:
    """One row per (offering family, nodes, pricing, reason) with how many region/zone offerings it covers.

    ``parts`` are (rows, stage, nodes, pricing code, value) with scalars or arrays as long as ``rows``.
    """
    import numpy as np
    import pandas as pd

    sizes = [len(p[0]) for p in parts]
    if sum(sizes) == 0:
        return pd.DataFrame(columns=list(EXCLUDED_COLUMNS))
    rows = np.concatenate([p[0] for p in parts])
    stage = np.concatenate([np.full(k, p[1]) for p, k in zip(parts, sizes, strict=True)])
    nodes = np.concatenate([np.broadcast_to(np.asarray(p[2]), (k,)) for p, k in zip(parts, sizes, strict=True)])
    pricing = np.concatenate([np.broadcast_to(np.asarray(p[3]), (k,)) for p, k in zip(parts, sizes, strict=True)])
    value = np.concatenate(
        [np.broadcast_to(np.asarray(p[4], dtype=float), (k,)) for p, k in zip(parts, sizes, strict=True)]
    )
    fam = family[rows].astype(np.int64)
    key = ((fam * (max_nodes + 1) + nodes) * 3 + (pricing + 1)) * 8 + stage
    # The key space (families x nodes x pricings x stages) is small: count and take minima by direct indexing.
    size = int(family.max()) + 1 if len(family) else 1
    all_counts = np.bincount(key, minlength=size * (max_nodes + 1) * 3 * 8)
    all_best = np.full(len(all_counts), np.inf)
    measured = ~np.isnan(value)
    np.fmin.at(all_best, key[measured], value[measured])
    unique = all_counts.nonzero()[0]
    counts, best = all_counts[unique], all_best[unique]
    records: list[dict[str, Any]] = []
    for k, count, extreme in zip(unique.tolist(), counts.tolist(), best.tolist(), strict=True):
        st = k % 8
        rest = k // 8
        price_code = rest % 3 - 1
        rest //= 3
        n = rest % (max_nodes + 1)
        f = rest // (max_nodes + 1)
        if st == _RESERVATION:
            reason = "sold as reservation only (no on-demand or spot price)"
        elif st == _NO_PRICE:
            reason = "no price for the chosen --pricing"
        elif st == _MODEL:
            reason = est_reason.get((f, n - 1), "not modelled")
        elif st == _SPOT_NEVER:
            reason = "spot interruptions would restart it faster than it checkpoints; it would never finish"
        elif st == _DEADLINE:
            reason = f"misses the {deadline_hours:g} h deadline (takes {_hours_text(extreme)})"
        else:
            reason = f"over the ${budget_usd:,.2f} budget (costs ${extreme:,.2f} at best)"
        records.append(
            {
                "provider": fam_provider[f],
                "instance_type": fam_instance[f],
                "gpu": fam_gpu[f],
                "gpus_per_node": float(fam_count[f]),
                "nodes": int(n) if n else None,
                "pricing": _PRICING_NAMES[price_code] if price_code >= 0 else "any",
                "offerings": int(count),
                "reason": reason,
            }
        )
    records.sort(key=lambda r: (r["provider"], r["instance_type"], r["nodes"] or 0, r["pricing"]))
    columns = {name: [r[name] for r in records] for name in EXCLUDED_COLUMNS}
    return pd.DataFrame(
        {
            **{name: pd.Series(values, dtype=object) for name, values in columns.items()},
            "gpus_per_node": pd.Series(columns["gpus_per_node"], dtype=float),
            "nodes": pd.Series(columns["nodes"], dtype="Int64"),
            "offerings": pd.Series(columns["offerings"], dtype=np.int64),
        },
        columns=list(EXCLUDED_COLUMNS),
    )


def _option_notes(
    spot: npt.NDArray[np.bool_],
    bucket: npt.NDArray[np.int64],
    nodes: npt.NDArray[np.int64],
    network: npt.NDArray[np.float64],
    flags: npt.NDArray[np.object_],
    default_rate: float,
) -> npt.NDArray[np.object_]:
    """Short per-option notes: the spot interruption source, multi-node network, catalog flags.

    Built once per distinct combination, then gathered: options outnumber the combinations by far.
    """
    import numpy as np
    import pandas as pd

    flag_codes, flag_names = pd.factorize(flags)
    network_codes, network_values = pd.factorize(network, use_na_sentinel=False)
    n_networks, n_flags = len(network_values) + 1, len(flag_names) + 1
    key = (
        ((spot.astype(np.int64) * (len(SPOT_BUCKETS) + 1) + np.where(spot, bucket, 0)) * (int(nodes.max()) + 1) + nodes)
        * n_networks
        * n_flags
        + network_codes * n_flags
        + (flag_codes + 1)
    )
    combos, inverse = np.unique(key, return_inverse=True)
    texts: list[str] = []
    for combo in combos.tolist():
        flag_code = combo % n_flags - 1
        network_code = combo // n_flags % n_networks
        rest = combo // (n_flags * n_networks)
        n = rest % (int(nodes.max()) + 1)
        bucket_index = rest // (int(nodes.max()) + 1) % (len(SPOT_BUCKETS) + 1)
        is_spot = rest // (int(nodes.max()) + 1) // (len(SPOT_BUCKETS) + 1)
        parts: list[str] = []
        if is_spot:
            if bucket_index < len(SPOT_BUCKETS):
                parts.append(f"spot interruptions {SPOT_BUCKETS[bucket_index]}/month (AWS Spot Advisor)")
            else:
                parts.append(f"spot interruptions assumed {_monthly(default_rate):.0%}/month")
        if n > 1:
            parts.append(f"{n} nodes over {float(network_values[network_code]):g} Gbit/s")
        if flag_code >= 0 and flag_names[flag_code]:
            parts.append(str(flag_names[flag_code]))
        texts.append("; ".join(parts))
    result: npt.NDArray[np.object_] = np.array(texts, dtype=object)[inverse.reshape(-1)]
    return result


def _describe_filters(
    providers: list[str], regions: list[str], gpus: list[str], instances: list[str], memory: float | None
) -> str:
    parts = [f"--provider {p}" for p in providers]
    parts += [f"--region {r}" for r in regions]
    parts += [f"--gpu {g}" for g in gpus]
    parts += [f"--instance {i}" for i in instances]
    if memory is not None:
        parts.append(f"--min-gpu-memory {memory:g}")
    return " ".join(parts)


def _empty_result(
    assumptions: list[str], catalog_as_of: str | None, message: str, notes: list[str], excluded: pd.DataFrame
) -> RankResult:
    import pandas as pd

    return RankResult(
        table=pd.DataFrame(columns=list(TABLE_COLUMNS)),
        excluded=excluded,
        assumptions=assumptions,
        catalog_as_of=catalog_as_of,
        details=pd.DataFrame(),
        message=message,
        notes=notes,
    )


def _assumptions(
    workload: Any,
    precision: str,
    checkpoint_interval_hours: float,
    restart_overhead_hours: float,
    startup_overhead_hours: float,
    default_rate: float,
    pricing: str,
    by: str,
) -> list[str]:
    name = getattr(workload, "name", str(workload))
    work = workload.default_work_text() if hasattr(workload, "default_work_text") else "as given"
    buckets = ", ".join(f"{label} -> {mid:.1%}" for label, (_, mid, _) in SPOT_BUCKET_MONTHLY.items())
    lines = [
        f"workload {name}: {work}, {precision}",
        "time to solution = performance-model training time + start-up overhead + expected spot rework",
        f"start-up overhead {startup_overhead_hours:g} h per run (boot, image pull, data staging), billed",
        "billing: AWS and Google Cloud per second with a 60 s minimum, Azure per minute",
        "cost = instances x billed hours x price per instance-hour; totals are sums of the cost lines",
        "zones of one region collapse to the cheapest; prices are catalog prices (no discounts, storage or egress)",
    ]
    if pricing != "on-demand":
        lines += [
            f"spot: AWS Spot Advisor monthly interruption bucket -> expected share of instances reclaimed a month "
            f"({buckets}, the open '>20%' bucket taken as 20-50%); bucket edges give cost_low/cost_high",
            f"spot elsewhere (no Spot Advisor data): {_monthly(default_rate):.1%} of instances reclaimed a month "
            f"(range {DEFAULT_SPOT_MONTHLY[0]:.0%}-{DEFAULT_SPOT_MONTHLY[2]:.0%}); AWS's global average is '<10%'",
            f"spot: a job on N instances stops when any is reclaimed; each interruption loses half a checkpoint "
            f"interval ({checkpoint_interval_hours:g} h) of work plus {restart_overhead_hours:g} h to restart",
            "spot-only offerings are never priced on demand; reservation-only offerings are excluded",
        ]
    lines.append(
        {
            "cost": "ordered by expected cost, then time",
            "time": "ordered by expected time to solution, then cost",
            "cost-time": "ordered by cost x time (equal weight to both), then cost",
        }[by]
    )
    return lines


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
    _check_choice("pricing", pricing, PRICINGS)
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
    for column in ("gpus_per_node", *(c for c in TABLE_COLUMNS if c.endswith(("_usd", "_hours", "_kwh")))):
        frame[column] = pd.to_numeric(frame[column])
    for column in ("price_usd_per_hour", "expected_interruptions"):
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
