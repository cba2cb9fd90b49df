"""Rank catalog offerings for one training job: time to solution, cost per run, constraints, Pareto front.

Pure and offline: ``rank(offers, workload, request, estimator)`` does no I/O; ``planner.api.rank`` loads, ages and
filters the catalog and resolves the workload before calling it. The stages, each a function below:

    families (one model call per configuration, families.py) -> cost grid (time and billed hours per family,
    nodes, pricing and spot bucket, grid.py) -> zone representatives -> options -> exclusions (why each left
    out option was) -> selection and order -> table (result.py)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from planner.catalog.owned import OWNED
from planner.catalog.query import local_zones, price_age_days, stale_prices
from planner.catalog.schema import LOCAL_ZONE_NOTE
from planner.catalog.tpu import GENERATIONS
from planner.cost import explain
from planner.cost.families import Families, ModelGrid, families, model_grid
from planner.cost.grid import N_BUCKETS, CostGrid, cost_grid
from planner.cost.lines import SPOT_BUCKETS, billing_note
from planner.cost.options import Options
from planner.cost.owned import ELECTRICITY_HOURLY, ELECTRICITY_PRICE, energy_cost_usd, owned_column
from planner.cost.pareto import pareto_mask
from planner.cost.request import ORDERS, PRICINGS, Estimator, RankRequest
from planner.cost.result import (
    EXCLUDED_COLUMNS,
    PRICING_NAMES,
    SPOT_FAR_BELOW_MIN_REGIONS,
    SPOT_FAR_BELOW_NOTE,
    SPOT_FAR_BELOW_SHARE,
    SPOT_FLOOR_NOTE,
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
    # Each row's zone as a code into the distinct zones, "" appended for a missing one (code -1).
    zone_codes: npt.NDArray[np.intp]
    zone_names: npt.NDArray[np.object_]
    # Owned servers (planner.cost.owned): the electricity part of the hourly price, and the power price their runs'
    # energy is billed at instead; 0 on cloud rows, whose price includes the electricity.
    electricity_hourly: FloatArray
    kwh_price: FloatArray


def _rows(offers: pd.DataFrame) -> _Rows:
    """Read the columns ranking needs as arrays; text columns are compared as pandas strings and never converted."""
    import numpy as np
    import pandas as pd

    from planner.catalog.schema import availability_allows

    od_price = offers["price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    spot_price = offers["spot_price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    # The availability rule per distinct value, then gathered: a handful of values over many rows.
    # A missing availability (code -1, the last entry) is on demand.
    codes, found = pd.factorize(offers["availability"])
    values = [*(str(v) for v in found), "on-demand"]
    od_allowed = np.array([availability_allows(v, spot=False) for v in values], dtype=bool)[codes]
    spot_allowed = np.array([availability_allows(v, spot=True) for v in values], dtype=bool)[codes]
    bucket_codes, bucket_names = pd.factorize(offers["spot_interruption"])
    bucket_lut = np.array([_bucket_index(name) for name in bucket_names] + [N_BUCKETS - 1], dtype=np.int64)
    region_codes, region_names = pd.factorize(offers["region"])
    zone_codes, zones = pd.factorize(offers["zone"])
    zone_names = np.array([*np.asarray(zones, dtype=object).tolist(), ""], dtype=object)
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
        # Asked once per distinct zone; the appended "" (no zone) is not a Local Zone.
        local_zone=local_zones(pd.Series(zone_names, dtype=object))[zone_codes],
        zone_codes=zone_codes,
        zone_names=zone_names,
        electricity_hourly=owned_column(offers, ELECTRICITY_HOURLY),
        kwh_price=owned_column(offers, ELECTRICITY_PRICE),
    )


def _zone_representatives(rows: _Rows, fams: Families, request: RankRequest) -> list[tuple[int, IntArray, IntArray]]:
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
        if request.pricing in ("both", PRICING_NAMES[spot_code]):
            chosen, weight = _cheapest_per_group(every[allowed], zone_group, len(zone_groups), row_price)
            reps.append((spot_code, chosen, weight))
    return reps


def _options(reps: list[tuple[int, IntArray, IntArray]], fams: Families, rows: _Rows, grid: CostGrid) -> Options:
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
    energy_cost = energy_cost_usd(grid.energy_kwh[cell], rows.kwh_price[row])
    return Options(
        row=row,
        cell=cell,
        weight=np.concatenate(weight_parts) if weight_parts else empty,
        spot=spot,
        nodes=nodes,
        price=price,
        wall=grid.wall_hours[cell],
        cost=nodes * grid.billed_hours[cell] * (price - rows.electricity_hourly[row]) + energy_cost,
    )


# An exclusion entry: (rows, stage, nodes, pricing code, value, offerings each stands for); scalars or arrays.
_Exclusion = tuple[Any, int, Any, Any, Any, Any]


def _unpriced_exclusions(rows: _Rows, fams: Families, model: ModelGrid, request: RankRequest) -> list[_Exclusion]:
    """Rows with no price for the pricing asked, reservation-only rows, and configurations the model rejects."""
    import numpy as np

    every = np.arange(len(rows.od_price))
    pricing = request.pricing
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
    rejected = [(f, n) for (f, n) in model.reasons if family_rows[f] > 0]
    if rejected:
        f_index = np.array([f for f, _ in rejected], dtype=np.int64)
        n_index = np.array([n + 1 for _, n in rejected], dtype=np.int64)
        found.append((family_first[f_index], explain.MODEL, n_index, -1, np.nan, family_rows[f_index]))
    return found


def _constraint_exclusions(
    options: Options, grid: CostGrid, request: RankRequest
) -> tuple[Options, list[_Exclusion], BoolArray, BoolArray]:
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
    options: Options, ok: BoolArray, fams: Families, rows: _Rows, grid: CostGrid, request: RankRequest
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
    sel = sel[_first_cheapest(group, o.cost[sel], o.wall[sel])]
    # Ties: on-demand first, then fewer nodes, then catalog position, as one integer.
    tie = (o.spot[sel] * (request.max_nodes + 1) + o.nodes[sel]) * len(rows.od_price) + o.row[sel]
    cost, wall = o.cost[sel], o.wall[sel]
    co2: FloatArray | None = None
    if request.by == "co2":
        co2 = _co2_kg(fams, grid, o, rows, sel)
        keys: tuple[IntArray | FloatArray, ...] = (tie, wall, cost, co2)
    else:
        keys = {"cost": (tie, wall, cost), "time": (tie, cost, wall), "cost-time": (tie, wall, cost, cost * wall)}[
            request.by
        ]
    order = np.lexsort(keys)
    sel = sel[order]
    pareto = pareto_mask(o.cost[sel], o.wall[sel], by_cost=request.by == "cost")
    if request.top is not None:
        sel, pareto = sel[: request.top], pareto[: request.top]
    # Ordered by another measure, only the options kept need their CO2.
    co2 = co2[order][: len(sel)] if co2 is not None else _co2_kg(fams, grid, o, rows, sel)
    return sel, pareto, co2


def _first_cheapest(group: IntArray, cost: FloatArray, wall: FloatArray) -> BoolArray:
    """Which entries are the first of the cheapest, then fastest, of their ``group``: linear time, by direct
    indexing over the group codes (a sort by group, cost and time cost more than the rest of the ranking)."""
    import numpy as np
    import pandas as pd

    code, groups = pd.factorize(group)
    lowest = np.full(len(groups), np.inf)
    np.minimum.at(lowest, code, cost)
    candidate = cost == lowest[code]
    fastest = np.full(len(groups), np.inf)
    np.minimum.at(fastest, code[candidate], wall[candidate])
    candidate &= wall == fastest[code]
    first = np.zeros(len(groups), dtype=np.int64)
    at = candidate.nonzero()[0]
    first[code[at][::-1]] = at[::-1]
    kept = np.zeros(len(group), dtype=bool)
    kept[first] = True
    return kept


def _co2_kg(fams: Families, grid: CostGrid, options: Options, rows: _Rows, sel: IntArray) -> FloatArray:
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
    # The pairs present and each option's, by direct indexing: providers x regions is a small space.
    present = np.zeros(len(provider_names) * len(region_names), dtype=bool)
    present[pair] = True
    pairs = present.nonzero()[0]
    position = np.zeros(len(present), dtype=np.int64)
    position[pairs] = np.arange(len(pairs))
    inverse = position[pair]
    # One vectorised take per column: indexing a pandas Index (Arrow strings) once per pair cost more than the rest
    # of this function.
    count = len(region_names)
    grams = carbon_intensities(
        np.asarray(provider_names, dtype=object)[pairs // count].tolist(),
        np.asarray(region_names, dtype=object)[pairs % count].tolist(),
    )
    result: FloatArray = grid.energy_kwh[options.cell[sel]] * grams[inverse] / 1000.0
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


def rank(
    offers: pd.DataFrame, workload: Workload, request: RankRequest, estimator: Estimator, *, now: datetime | None = None
) -> RankResult:
    """Price ``workload`` on every offering of ``offers`` and configuration (1..``request.max_nodes`` instances).

    ``now``: the moment prices' ages are judged at (default: now; a report pinned to snapshots passes theirs).

    ``offers`` is already filtered (every zone, catalog order); the result carries no catalog date or filter
    notes, which the caller adds. Raises InputError only when every configuration fails on the same bad input.
    """
    from planner.perf.model import trained_params

    assumptions = explain.assumptions_for(workload, request)
    # isin, not a Python call per row: on 100,000 offerings the per-row check cost a third of the ranking.
    if not offers.empty and offers["gpu"].isin(list(GENERATIONS)).any():
        # Slices are estimated for Google's own trainer, the GPUs for the stack above: the comparison says so.
        from planner.perf.tpu import STACK_TEXT  # only when slices are ranked: the station is slow to import

        stack = STACK_TEXT.removeprefix("software: ")
        assumptions.insert(2, f"TPU slices: {stack}; fitted on few published runs (docs/tpu.md)")
    if offers.empty:
        return empty_result(assumptions, None, "the catalog holds no offerings", [], _no_exclusions())

    fams = families(offers)
    trained = trained_params(workload)
    model = model_grid(fams, estimator, workload, request)
    grid = cost_grid(fams, model, request, trained_params=trained, frozen_params=workload.params - trained)
    rows = _rows(offers)
    options = _options(_zone_representatives(rows, fams, request), fams, rows, grid)
    found = _unpriced_exclusions(rows, fams, model, request)
    options, more, within_deadline, within_budget = _constraint_exclusions(options, grid, request)
    found += more
    excluded = explain.summarise_exclusions(found, fams, model.reasons, request)
    ok = within_deadline & within_budget
    if not ok.any():
        closest = _closest_miss(fams, model, request.max_nodes) if not len(options) else None
        message = explain.explain_empty(offers, options, within_deadline, within_budget, request, excluded, closest)
        return empty_result(assumptions, None, message, [], excluded)

    sel, pareto, co2 = _select_and_order(options, ok, fams, rows, grid, request)
    table, details = _table(offers, fams, model, grid, rows, options.take(sel), pareto, co2, request, now)
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
    catalog: _Rows,
    chosen: Options,
    pareto: BoolArray,
    co2: FloatArray,
    request: RankRequest,
    now: datetime | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The options table (TABLE_COLUMNS) of the ``chosen`` options, in order, and, row for row, the quantities of
    their cost lines."""
    import numpy as np
    import pandas as pd

    rows, cells, price = chosen.row, chosen.cell, chosen.price
    regions = np.asarray(catalog.region_names, dtype=object)[catalog.region_codes[rows]]
    bucket, local = catalog.bucket[rows], catalog.local_zone[rows]

    family = fams.code[rows]
    spot = grid.spot_of(cells)
    nodes = grid.nodes_of(cells)

    def text(values: Any) -> pd.Series:
        # Object dtype: building pandas' string columns from Python strings costs more than the ranking. Every
        # column is built here: no copy.
        return pd.Series(values, dtype=object, copy=False)

    pricing = text(np.array(PRICING_NAMES, dtype=object)[spot])
    # The date of the price each option used: a spot option's own spot date where the catalog has one (schema 3).
    used_as_of = offers["as_of"].take(rows)
    if "spot_as_of" in offers:
        spot_as_of = offers["spot_as_of"].take(rows)
        use_spot = (spot == 1) & spot_as_of.notna().to_numpy()
        used_as_of = used_as_of.where(~use_spot, spot_as_of)
    as_of_codes, as_of_names = _codes_at(used_as_of.reset_index(drop=True), np.arange(len(rows)))
    # Everything a note says follows from the option's grid cell (family, nodes, pricing, spot label), its catalog
    # flags and whether it is in a Local Zone: worded once per distinct combination, then gathered.
    flag_codes, flag_names = _codes_at(offers["flags"], rows)
    key = (cells * (len(flag_names) + 1) + flag_codes + 1) * 2 + local
    inverse, distinct = pd.factorize(key)
    one = np.zeros(len(distinct), dtype=np.int64)
    one[inverse[::-1]] = np.arange(len(key))[::-1]
    words = explain.option_notes(
        spot[one] == 1,
        bucket[one],
        nodes[one],
        fams.network_gbps[family[one]],
        np.append(flag_names, "")[flag_codes[one]],
        fams.provider[family[one]],
        grid.spot_risky[cells[one]],
        grid.wall_hours[cells[one]],
        request.spot_warning_hours,
    )
    distinct_notes = _joined(
        words, [(local[one].astype(np.int64) - 1, [LOCAL_ZONE_NOTE]), *_model_notes(model, family[one], nodes[one])]
    )
    notes = distinct_notes[inverse]
    at_floor = np.array([SPOT_FLOOR_NOTE in note for note in distinct_notes], dtype=bool)[inverse]
    # Owned servers: held hours at the capital and operations rate, energy at the power price (planner.cost.owned).
    hourly = price - catalog.electricity_hourly[rows]
    kwh_price = catalog.kwh_price[rows]
    basis = text(_basis_at(offers, rows, spot))

    def energy_cost(kwh: FloatArray) -> FloatArray:
        return energy_cost_usd(kwh, kwh_price)

    low = spot == 1
    if low.any():  # only spot options can be far below: an on-demand ranking skips the per-type medians
        low &= _far_below_other_regions(offers, fams, catalog, rows)
    if low.any():  # a floor price is far below by definition, and its note already says what it is
        low &= ~at_floor
    if low.any():
        notes = notes.copy()
        notes[low] = [f"{note}; {SPOT_FAR_BELOW_NOTE}" if note else SPOT_FAR_BELOW_NOTE for note in notes[low]]
    table = pd.DataFrame(
        {
            "rank": np.arange(1, len(rows) + 1),
            "provider": text(fams.provider[family]),
            "region": text(regions),
            "zone": text(catalog.zone_names[catalog.zone_codes[rows]]),
            "instance_type": text(fams.instance_type[family]),
            "gpu": text(fams.gpu[family]),
            # Whole GPUs: a fractional-GPU offering never reaches the table (the model does not estimate it).
            "gpus_per_node": fams.gpu_count[family].astype(np.int64),
            "nodes": nodes.astype(np.int64),
            "pricing": pricing,
            "price_usd_per_hour": price,
            # The unit clouds quote and people compare: the instance price over its GPUs.
            "price_per_gpu_usd_per_hour": price / fams.gpu_count[family],
            # "list" or "negotiated" (the user's prices file): the basis of the price this option used.
            "price_basis": basis,
            "time_to_solution_hours": grid.wall_hours[cells],
            "time_low_hours": grid.wall_low_hours[cells],
            "time_high_hours": grid.wall_high_hours[cells],
            "cost_usd": nodes * grid.billed_hours[cells] * hourly + energy_cost(grid.energy_kwh[cells]),
            "cost_low_usd": nodes * grid.billed_low_hours[cells] * hourly + energy_cost(grid.energy_low_kwh[cells]),
            "cost_high_usd": nodes * grid.billed_high_hours[cells] * hourly + energy_cost(grid.energy_high_kwh[cells]),
            "expected_interruptions": grid.interruptions[cells],
            "p_no_interruption": grid.p_no_interruption[cells],
            "checkpoint_every_hours": grid.checkpoint_interval_hours[cells],
            "spot_risky": grid.spot_risky[cells],
            "energy_kwh": grid.energy_kwh[cells],
            "energy_low_kwh": grid.energy_low_kwh[cells],
            "energy_high_kwh": grid.energy_high_kwh[cells],
            "co2_kg": co2,
            "pareto": pareto,
            "price_as_of": text(np.append(as_of_names, "")[as_of_codes]),
            "price_age_days": np.append(price_age_days(pd.Series(as_of_names, dtype=object), now), np.nan)[as_of_codes],
            # Prices older than STALE_AFTER_DAYS, and the cloud's capacity reading (true, false or unknown).
            "price_stale": np.append(stale_prices(pd.Series(as_of_names, dtype=object), now), False)[as_of_codes],
            "available_now": text(_text_at(offers["available_now"], rows)),
            "notes": text(notes),
        },
        columns=list(TABLE_COLUMNS),
        copy=False,  # every column is built here
    )
    held = grid.wall_hours[cells] - grid.wait_hours[cells]  # start-up + the hours the instances are held
    billing_notes = np.array([billing_note(str(p)) for p in fams.provider], dtype=object)
    details = pd.DataFrame(
        {
            "pricing": pricing,
            "nodes": nodes.astype(float),
            "price_usd_per_hour": hourly,
            "electricity_kwh": np.where((basis == OWNED).to_numpy(), grid.energy_kwh[cells], 0.0),
            "electricity_usd_per_kwh": kwh_price,
            "price_basis": basis,
            "training_hours": grid.training_hours[cells],
            "startup_hours": grid.work_hours[cells] - grid.training_hours[cells],
            "checkpoint_hours": grid.checkpoint_write_hours[cells],
            "rework_hours": held - grid.work_hours[cells] - grid.checkpoint_write_hours[cells],
            "wait_hours": grid.wait_hours[cells],
            "held_hours": held,
            "wall_hours": grid.wall_hours[cells],
            "billed_hours": grid.billed_hours[cells],
            "billing": text(billing_notes[family]),
        },
        copy=False,
    )
    return table, details


def _basis_at(offers: pd.DataFrame, rows: IntArray, spot: IntArray) -> npt.NDArray[np.object_]:
    """Per option, the basis of the price it used: its offering's on-demand or spot price basis ("list" when the
    catalog does not say)."""
    import numpy as np

    if "price_basis" not in offers.columns:
        return np.full(len(rows), "list", dtype=object)
    on_demand = _text_at(offers["price_basis"], rows)
    spot_basis = _text_at(offers["spot_price_basis"], rows) if "spot_price_basis" in offers.columns else on_demand
    result: npt.NDArray[np.object_] = np.where(spot == 1, spot_basis, on_demand).astype(object)
    return result


def _far_below_other_regions(offers: pd.DataFrame, fams: Families, catalog: _Rows, rows: IntArray) -> BoolArray:
    """Which of ``rows`` have a spot price under SPOT_FAR_BELOW_SHARE of their instance type's median spot price
    across the other regions that sell it (three or more regions): a price no second source confirms."""
    import numpy as np
    import pandas as pd

    spot = offers["spot_price_usd_per_hour"].to_numpy(dtype=np.float64, na_value=np.nan)
    # Instance types and regions from the codes already made: factorising the catalog's text again costs more.
    codes = pd.factorize(fams.instance_type)[0][fams.code]
    region_codes = catalog.region_codes
    priced = ~np.isnan(spot)
    # One price per type and region (a region's cheapest zone), so a region with many zones does not weigh more.
    # Minima by direct indexing over one integer key: a groupby on two keys cost a tenth of the ranking.
    regions = catalog.n_regions + 1  # a missing region (-1) is a region of its own
    pair, pairs = pd.factorize(codes[priced] * regions + region_codes[priced] + 1)
    cheapest = np.full(len(pairs), np.inf)
    np.minimum.at(cheapest, pair, spot[priced])
    grouped = pd.Series(cheapest).groupby(np.floor_divide(pairs, regions))
    medians = grouped.median()[grouped.count() >= SPOT_FAR_BELOW_MIN_REGIONS]
    median = np.full(int(codes.max()) + 1 if len(codes) else 0, np.nan)
    median[medians.index.to_numpy()] = medians.to_numpy()
    at = codes[rows]
    result: BoolArray = spot[rows] < SPOT_FAR_BELOW_SHARE * median[at]
    return result


def _codes_at(column: pd.Series, rows: IntArray) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.object_]]:
    """The distinct texts of ``column`` at ``rows`` and each row's code (-1: missing)."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(column.take(rows))
    return codes, np.asarray(uniques, dtype=object)


def _text_at(column: pd.Series, rows: IntArray) -> npt.NDArray[np.object_]:
    """The text of ``column`` at ``rows``, "" where missing; each distinct value is made a Python string once
    (converting Arrow strings row by row costs more than the ranking)."""
    import numpy as np

    codes, names = _codes_at(column, rows)
    result: npt.NDArray[np.object_] = np.append(names, "")[codes]
    return result


# A note added to some options: per option the code of its text (-1: none), and the texts.
_Note = tuple["IntArray", list[str]]


def _model_notes(model: ModelGrid, family: IntArray, nodes: IntArray) -> list[_Note]:
    """What the model says beside an option's time: an uncalibrated GPU (with what its held-out runs found), short
    steps across many instances (what NVIDIA's held-out MLPerf runs in that regime found). Worded per family or
    (family, nodes), then gathered."""
    import numpy as np

    notes: list[_Note] = []
    if model.uncalibrated is not None and model.uncalibrated.any():
        # An uncalibrated GPU's time is the model's extrapolation: say so where the number stands.
        held = model.held_out_pct if model.held_out_pct is not None else np.full(len(model.uncalibrated), np.nan)
        figures = np.unique(held[model.uncalibrated & ~np.isnan(held)])
        texts = [
            UNCALIBRATED_NOTE,
            *(f"{UNCALIBRATED_NOTE}; held-out runs on this GPU: {held_out_verdict(value)}" for value in figures),
        ]
        known = ~np.isnan(held)
        code = np.where(known, np.searchsorted(figures, np.where(known, held, 0.0)) + 1, 0)
        notes.append((np.where(model.uncalibrated, code, -1)[family], texts))
    if model.slower_at_scale is not None:
        ratio = model.slower_at_scale
        scaled = ~np.isnan(ratio)
        if scaled.any():
            figures = np.unique(ratio[scaled])
            code = np.where(scaled, np.searchsorted(figures, np.where(scaled, ratio, 0.0)), -1)
            notes.append((code[family, nodes - 1], [scale_out_verdict(value) for value in figures]))
    return notes


def _joined(notes: npt.NDArray[np.object_], more: list[_Note]) -> npt.NDArray[np.object_]:
    """Each option's ``notes`` followed by the ``more`` notes it has, joined by "; ", worded once per distinct
    combination."""
    import numpy as np
    import pandas as pd

    base_codes, base_texts = pd.factorize(notes)
    key = base_codes.astype(np.int64)
    for codes, texts in more:
        key = key * (len(texts) + 1) + (codes + 1)
    inverse, combos = pd.factorize(key)
    words = []
    for value in combos.tolist():
        parts: list[str] = []
        for _codes, texts in reversed(more):
            value, code = divmod(value, len(texts) + 1)
            if code:
                parts.append(texts[code - 1])
        words.append("; ".join([text for text in (str(base_texts[value]),) if text] + parts[::-1]))
    result: npt.NDArray[np.object_] = np.array(words, dtype=object)[inverse]
    return result
