"""Rank catalog offerings for one training job: time to solution, cost per run, constraints, Pareto front.

Pure and offline: ``rank(offers, workload, request, estimator)`` does no I/O; ``planner.api.rank`` loads, ages and
filters the catalog and resolves the workload before calling it. The stages, each a function below:

    families (one model call per configuration, families.py) -> cost grid (time and billed hours per family,
    nodes, pricing and spot bucket, grid.py) -> zone representatives -> options -> exclusions (why each left
    out option was) -> selection and order -> table (result.py)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.catalog.query import local_zones, price_age_days, stale_prices
from planner.catalog.schema import LOCAL_ZONE_NOTE
from planner.cost import explain
from planner.cost.families import Families, ModelGrid, families, model_grid
from planner.cost.grid import N_BUCKETS, CostGrid, cost_grid
from planner.cost.lines import SPOT_BUCKETS, billing_note
from planner.cost.pareto import pareto_mask
from planner.cost.request import ORDERS, PRICINGS, Estimator, RankRequest
from planner.cost.result import (
    EXCLUDED_COLUMNS,
    PRICING_NAMES,
    TABLE_COLUMNS,
    UNCALIBRATED_NOTE,
    RankResult,
    empty_result,
)
from planner.perf.evidence import held_out_verdict, scale_out_verdict

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    from planner.perf.workloads import Workload

    IntArray = npt.NDArray[np.int64]
    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

__all__ = ["EXCLUDED_COLUMNS", "ORDERS", "PRICINGS", "TABLE_COLUMNS", "RankResult", "rank"]


def _bucket_index(name: object) -> int:
    """Position of a Spot Advisor bucket label in SPOT_BUCKETS; unknown labels use the default (last) rate."""
    return SPOT_BUCKETS.index(str(name)) if str(name) in SPOT_BUCKETS else len(SPOT_BUCKETS)


def _cheapest_per_group(rows: IntArray, group: IntArray, n_groups: int, price: FloatArray) -> tuple[IntArray, IntArray]:
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


def _best(feasible: BoolArray, value: FloatArray) -> int | None:
    import numpy as np

    if not feasible.any():
        return None
    candidates = feasible.nonzero()[0]
    return int(candidates[np.argmin(value[candidates])])


@dataclass(frozen=True)
class _Rows:
    """Per-offering arrays: prices, which pricing each may be sold at, spot bucket, region code."""

    od_price: FloatArray
    spot_price: FloatArray
    reserved: BoolArray
    od_ok: BoolArray
    spot_ok: BoolArray
    bucket: IntArray
    region_codes: IntArray
    region_names: Any
    n_regions: int
    # AWS Local Zone rows: a region's option of their own (opt-in), never the region's cheapest zone.
    local_zone: BoolArray


def _rows(offers: pd.DataFrame) -> _Rows:
    """Read the columns ranking needs as arrays; text columns are compared as pandas strings and never converted."""
    import numpy as np
    import pandas as pd

    from planner.catalog.schema import availability_allows

    od_price = offers["price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    spot_price = offers["spot_price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    # The availability rule per distinct value, then gathered: a handful of values over many rows.
    codes, values = pd.factorize(offers["availability"].fillna("on-demand"))
    od_allowed = np.array([availability_allows(str(v), spot=False) for v in values] + [False], dtype=bool)[codes]
    spot_allowed = np.array([availability_allows(str(v), spot=True) for v in values] + [False], dtype=bool)[codes]
    bucket_codes, bucket_names = pd.factorize(offers["spot_interruption"])
    bucket_lut = np.array([_bucket_index(name) for name in bucket_names] + [N_BUCKETS - 1], dtype=np.int64)
    region_codes, region_names = pd.factorize(offers["region"])
    return _Rows(
        od_price=od_price,
        spot_price=spot_price,
        reserved=~od_allowed & ~spot_allowed,
        od_ok=od_allowed & (od_price > 0),
        spot_ok=spot_allowed & (spot_price > 0),
        # factorize gives -1 for a missing bucket, which picks the last entry ("no data").
        bucket=bucket_lut[bucket_codes],
        region_codes=region_codes.astype(np.int64),
        region_names=region_names,
        n_regions=int(region_codes.max()) + 1,
        local_zone=local_zones(offers["zone"]),
    )


def _zone_representatives(rows: _Rows, fams: Families, pricing: str) -> list[tuple[int, IntArray, IntArray]]:
    """Per pricing (0 on-demand, 1 spot): the cheapest row of each (family, region, spot bucket), and its weight.

    Zones of one region with the same spot bucket differ only in price (same model answer, same billing).
    """
    import numpy as np
    import pandas as pd

    every = np.arange(len(rows.od_price))
    # A Local Zone is an option of its own (it must be opted into), not a zone the region's price may come from.
    region_key = (fams.code * rows.n_regions + rows.region_codes) * 2 + rows.local_zone
    zone_group, zone_groups = pd.factorize(region_key * N_BUCKETS + rows.bucket)
    reps: list[tuple[int, IntArray, IntArray]] = []
    for spot_code, allowed, row_price in ((0, rows.od_ok, rows.od_price), (1, rows.spot_ok, rows.spot_price)):
        if pricing in ("both", PRICING_NAMES[spot_code]):
            chosen, weight = _cheapest_per_group(every[allowed], zone_group, len(zone_groups), row_price)
            reps.append((spot_code, chosen, weight))
    return reps


@dataclass
class _Options:
    """Every kept row x node count x pricing, as indices into the grid, with what each costs."""

    row: IntArray
    cell: IntArray
    weight: IntArray
    spot: IntArray
    nodes: IntArray
    price: FloatArray
    wall: FloatArray
    cost: FloatArray

    def take(self, index: IntArray | BoolArray) -> _Options:
        return _Options(*(getattr(self, name)[index] for name in self.__dataclass_fields__))


def _options(reps: list[tuple[int, IntArray, IntArray]], fams: Families, rows: _Rows, grid: CostGrid) -> _Options:
    import numpy as np

    row_parts: list[IntArray] = []
    cell_parts: list[IntArray] = []
    weight_parts: list[IntArray] = []
    for n in range(1, grid.max_nodes + 1):
        for spot_code, chosen, weight in reps:
            row_parts.append(chosen)
            cell_parts.append(grid.cell(fams.code[chosen], n, spot_code, rows.bucket[chosen]))
            weight_parts.append(weight)
    empty = np.zeros(0, dtype=np.int64)
    row = np.concatenate(row_parts) if row_parts else empty
    cell = np.concatenate(cell_parts) if cell_parts else empty
    spot, nodes = grid.spot_of(cell), grid.nodes_of(cell)
    price = np.where(spot == 1, rows.spot_price[row], rows.od_price[row])
    return _Options(
        row=row,
        cell=cell,
        weight=np.concatenate(weight_parts) if weight_parts else empty,
        spot=spot,
        nodes=nodes,
        price=price,
        wall=grid.wall_hours[cell],
        cost=nodes * grid.billed_hours[cell] * price,
    )


# An exclusion entry: (rows, stage, nodes, pricing code, value, offerings each stands for); scalars or arrays.
_Exclusion = tuple[Any, int, Any, Any, Any, Any]


def _unpriced_exclusions(
    rows: _Rows, fams: Families, model_reasons: dict[tuple[int, int], str], pricing: str
) -> list[_Exclusion]:
    """Rows with no price for the pricing asked, reservation-only rows, and configurations the model rejects."""
    import numpy as np

    every = np.arange(len(rows.od_price))
    want_od, want_spot = pricing in ("both", "on-demand"), pricing in ("both", "spot")
    priced = (rows.od_ok & want_od) | (rows.spot_ok & want_spot)
    unpriced = ~rows.reserved & ~priced
    no_price_code = 0 if pricing == "on-demand" else 1 if pricing == "spot" else -1
    found: list[_Exclusion] = [
        (every[rows.reserved], explain.RESERVATION, 0, -1, np.nan, 1),
        (every[unpriced], explain.NO_PRICE, 0, no_price_code, np.nan, 1),
    ]
    # A configuration the model rejects is rejected at any pricing: one entry per family and node count.
    family_rows = np.bincount(fams.code[priced], minlength=len(fams))
    family_first = np.full(len(fams), -1, dtype=np.int64)
    family_first[fams.code[::-1]] = every[::-1]
    rejected = [(f, n) for (f, n) in model_reasons if family_rows[f] > 0]
    if rejected:
        f_index = np.array([f for f, _ in rejected], dtype=np.int64)
        n_index = np.array([n + 1 for _, n in rejected], dtype=np.int64)
        found.append((family_first[f_index], explain.MODEL, n_index, -1, np.nan, family_rows[f_index]))
    return found


def _constraint_exclusions(
    options: _Options, grid: CostGrid, request: RankRequest
) -> tuple[_Options, list[_Exclusion], BoolArray, BoolArray]:
    """Drop options the model cannot run or spot never finishes; mark those over the deadline or the budget.

    Returns the modelled options, their exclusion entries, and the deadline and budget masks over them.
    """
    import numpy as np

    modelled = grid.modelled[options.cell]
    never = modelled & ~grid.finishes[options.cell]
    o = options
    found: list[_Exclusion] = [
        (o.row[never], explain.SPOT_NEVER, o.nodes[never], o.spot[never], np.nan, o.weight[never])
    ]
    kept = options.take((modelled & ~never).nonzero()[0])
    everything = np.ones(len(kept.row), dtype=bool)
    within_deadline = kept.wall <= request.deadline_hours if request.deadline_hours is not None else everything
    within_budget = kept.cost <= request.budget_usd if request.budget_usd is not None else everything
    late = ~within_deadline
    over = within_deadline & ~within_budget
    found.append(
        (kept.row[late], explain.DEADLINE, kept.nodes[late], kept.spot[late], kept.wall[late], kept.weight[late])
    )
    found.append(
        (kept.row[over], explain.BUDGET, kept.nodes[over], kept.spot[over], kept.cost[over], kept.weight[over])
    )
    return kept, found, within_deadline, within_budget


def _select_and_order(
    options: _Options, ok: BoolArray, fams: Families, rows: _Rows, grid: CostGrid, request: RankRequest
) -> tuple[IntArray, BoolArray, FloatArray]:
    """The options shown, in order, which are on the cost-time Pareto front, and their kgCO2e.

    One option per family, region (its Local Zones apart), node count and pricing (the cheapest, then fastest, spot
    bucket's row); ordered by cost, time, cost x time or CO2, ties by time/cost, then on-demand first, fewer nodes,
    catalog position.
    """
    import numpy as np

    o = options
    sel = ok.nonzero()[0]
    # A region's Local Zone (opt-in) stays an option beside the region's standard zones, not instead of them.
    region = (fams.code[o.row[sel]] * rows.n_regions + rows.region_codes[o.row[sel]]) * 2 + rows.local_zone[o.row[sel]]
    group = (region * (request.max_nodes + 1) + o.nodes[sel]) * 2 + o.spot[sel]
    order = np.lexsort((o.wall[sel], o.cost[sel], group))
    first_of_group = np.ones(len(order), dtype=bool)
    first_of_group[1:] = group[order][1:] != group[order][:-1]
    sel = sel[np.sort(order[first_of_group])]
    co2 = _co2_kg(fams, grid, o, rows, sel)
    tie = (o.row[sel], o.nodes[sel], o.spot[sel])
    keys = {
        "cost": (*tie, o.wall[sel], o.cost[sel]),
        "time": (*tie, o.cost[sel], o.wall[sel]),
        "cost-time": (*tie, o.wall[sel], o.cost[sel], o.cost[sel] * o.wall[sel]),
        "co2": (*tie, o.wall[sel], o.cost[sel], co2),
    }[request.by]
    order = np.lexsort(keys)
    sel, co2 = sel[order], co2[order]
    pareto = pareto_mask(o.cost[sel], o.wall[sel])
    if request.top is not None:
        sel, pareto, co2 = sel[: request.top], pareto[: request.top], co2[: request.top]
    return sel, pareto, co2


def _co2_kg(fams: Families, grid: CostGrid, options: _Options, rows: _Rows, sel: IntArray) -> FloatArray:
    """kgCO2e of the options ``sel``: their facility energy x their region's grid intensity.

    Each (provider, region) pair is looked up once: options far outnumber the pairs.
    """
    import numpy as np
    import pandas as pd

    from planner.energy import carbon_intensities

    region_names = rows.region_names
    provider_codes, provider_names = pd.factorize(fams.provider)
    chosen = options.row[sel]
    pair = provider_codes[fams.code[chosen]] * len(region_names) + rows.region_codes[chosen]
    pairs, inverse = np.unique(pair, return_inverse=True)
    # One vectorised take per column: indexing a pandas Index (Arrow strings) once per pair cost more than the rest
    # of this function.
    count = len(region_names)
    grams = carbon_intensities(
        [str(name) for name in np.asarray(provider_names, dtype=object)[pairs // count]],
        [str(name) for name in np.asarray(region_names, dtype=object)[pairs % count]],
    )
    result: FloatArray = grid.energy_kwh[options.cell[sel]] * grams[inverse.reshape(-1)] / 1000.0
    return result


def _closest_miss(fams: Families, model: ModelGrid, max_nodes: int) -> str | None:
    """Where no configuration holds the job: the offering family that needs the fewest instances to hold it (then
    the fewest GPUs), with the model's reason at the most instances allowed, or None if no family could."""
    import numpy as np

    needed = model.min_nodes
    if needed is None or not np.isfinite(needed).any():
        return None
    gpus = needed * fams.gpu_count
    order = np.lexsort((np.where(np.isfinite(gpus), gpus, np.inf), np.where(np.isfinite(needed), needed, np.inf)))
    f = int(order[0])
    nodes = int(needed[f])
    reason = model.reasons.get((f, max_nodes - 1), "it does not fit in GPU memory")
    allowed = f"{max_nodes} instance{'s' if max_nodes > 1 else ''}"
    return (
        f"on up to {allowed}; the closest, {fams.provider[f]} {fams.instance_type[f]} "
        f"({fams.gpu_count[f]:g} x {fams.gpu[f]} each), would hold it on {nodes} instances. On {allowed}: {reason}"
    )


def rank(offers: pd.DataFrame, workload: Workload, request: RankRequest, estimator: Estimator) -> RankResult:
    """Price ``workload`` on every offering of ``offers`` and configuration (1..``request.max_nodes`` instances).

    ``offers`` is already filtered (every zone, catalog order); the result carries no catalog date or filter
    notes, which the caller adds. Raises InputError only when every configuration fails on the same bad input.
    """
    from planner.perf.model import trained_params

    assumptions = explain.assumptions_for(workload, request)
    if offers.empty:
        return empty_result(assumptions, None, "the catalog holds no offerings", [], _no_exclusions())

    fams = families(offers)
    trained = trained_params(workload)
    model = model_grid(fams, estimator, workload, request.precision, request.max_nodes, request.model.as_kwargs())
    grid = cost_grid(
        fams,
        model,
        startup_overhead_hours=request.startup_overhead_hours,
        checkpoint_interval_hours=request.checkpoint_interval_hours,
        restart_overhead_hours=request.restart_overhead_hours,
        default_interruption_rate=request.interruption_rate,
        interruption_rate_per_node_hour=request.interruption_rate_per_node_hour,
        trained_params=trained,
        frozen_params=workload.params - trained,
        checkpoint_storage_gbps=request.checkpoint_storage_gbps,
    )
    rows = _rows(offers)
    options = _options(_zone_representatives(rows, fams, request.pricing), fams, rows, grid)
    found = _unpriced_exclusions(rows, fams, model.reasons, request.pricing)
    options, more, within_deadline, within_budget = _constraint_exclusions(options, grid, request)
    found += more
    excluded = explain.summarise_exclusions(
        found,
        fams.code,
        fams.provider,
        fams.instance_type,
        fams.gpu,
        fams.gpu_count,
        model.reasons,
        request.deadline_hours,
        request.budget_usd,
        request.max_nodes,
    )
    ok = within_deadline & within_budget
    if not ok.any():
        import numpy as np

        everything = np.ones(len(ok), dtype=bool)
        message = explain.explain_empty(
            offers,
            everything,
            within_deadline,
            within_budget,
            options.wall,
            options.cost,
            options.row,
            options.nodes,
            options.spot,
            _best(everything, options.wall),
            _best(everything, options.cost),
            request.deadline_hours,
            request.budget_usd,
            excluded,
            _closest_miss(fams, model, request.max_nodes) if not len(options.wall) else None,
        )
        return empty_result(assumptions, None, message, [], excluded)

    sel, pareto, co2 = _select_and_order(options, ok, fams, rows, grid, request)
    chosen = options.take(sel)
    table, details = _table(
        offers,
        fams,
        model,
        grid,
        chosen.row,
        chosen.cell,
        chosen.price,
        pareto,
        rows.region_names.to_numpy(dtype=object)[rows.region_codes[chosen.row]],
        rows.bucket[chosen.row],
        co2,
        request.spot_warning_hours,
        rows.local_zone[chosen.row],
    )
    return RankResult(
        table=table,
        excluded=excluded,
        assumptions=assumptions,
        catalog_as_of=None,
        details=details,
        message=None,
        notes=[],
    )


def _no_exclusions() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=list(EXCLUDED_COLUMNS))


def _table(
    offers: pd.DataFrame,
    fams: Families,
    model: ModelGrid,
    grid: CostGrid,
    rows: npt.NDArray[np.int64],
    cells: npt.NDArray[np.int64],
    price: npt.NDArray[np.float64],
    pareto: npt.NDArray[np.bool_],
    regions: npt.NDArray[np.object_],
    bucket: npt.NDArray[np.int64],
    co2: npt.NDArray[np.float64],
    spot_warning_hours: float | None,
    local: npt.NDArray[np.bool_],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The options table (TABLE_COLUMNS) and, row for row, the quantities of its cost lines; ``local`` marks the
    rows in AWS Local Zones."""
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
    if local.any():
        prefix = np.where(notes[local] == "", "", "; ")
        notes[local] = notes[local] + prefix.astype(object) + LOCAL_ZONE_NOTE
    if model.uncalibrated is not None and model.uncalibrated[family].any():
        # An uncalibrated GPU's time is the model's extrapolation: say so where the number stands.
        unsure = model.uncalibrated[family]
        prefix = np.where(notes[unsure] == "", "", "; ")
        said = np.full(int(unsure.sum()), UNCALIBRATED_NOTE, dtype=object)
        if model.held_out_pct is not None:
            # And what the runs kept out of the fit found on that GPU, once per distinct figure.
            found = model.held_out_pct[family][unsure]
            for value in np.unique(found[~np.isnan(found)]):
                said[found == value] = f"{UNCALIBRATED_NOTE}; held-out runs on this GPU: {held_out_verdict(value)}"
        notes[unsure] = notes[unsure] + prefix.astype(object) + said
    if model.slower_at_scale is not None:
        # Short steps across many instances: what NVIDIA's held-out MLPerf runs in that regime found.
        ratio = model.slower_at_scale[family, nodes - 1]
        scaled = ~np.isnan(ratio)
        if scaled.any():
            prefix = np.where(notes[scaled] == "", "", "; ")
            said = np.array([scale_out_verdict(value) for value in ratio[scaled]], dtype=object)
            notes[scaled] = notes[scaled] + prefix.astype(object) + said
    table = pd.DataFrame(
        {
            "rank": np.arange(1, len(rows) + 1),
            "provider": text(fams.provider[family]),
            "region": text(regions),
            "zone": text(taken("zone")),
            "instance_type": text(fams.instance_type[family]),
            "gpu": text(fams.gpu[family]),
            # Whole GPUs: a fractional-GPU offering never reaches the table (the model does not estimate it).
            "gpus_per_node": fams.gpu_count[family].astype(np.int64),
            "nodes": nodes.astype(np.int64),
            "pricing": pricing,
            "price_usd_per_hour": price,
            # The unit clouds quote and people compare: the instance price over its GPUs.
            "price_per_gpu_usd_per_hour": price / fams.gpu_count[family],
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
            "price_age_days": price_age_days(offers["as_of"].take(rows)),
            # Prices older than STALE_AFTER_DAYS, and the cloud's capacity reading (true, false or unknown).
            "price_stale": stale_prices(offers["as_of"].take(rows)),
            "available_now": text(taken("available_now")),
            "notes": text(notes),
        },
        columns=list(TABLE_COLUMNS),
    )
    held = grid.wall_hours[cells] - grid.wait_hours[cells]  # start-up + the hours the instances are held
    billing_notes = np.array([billing_note(str(p)) for p in fams.provider], dtype=object)
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
