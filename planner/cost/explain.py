"""Words for the numbers: why options were left out, why nothing is left, per-option notes, the assumptions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner.cost.lines import SPOT_BUCKETS, billing_text
from planner.cost.result import EXCLUDED_COLUMNS, PRICING_NAMES, RISKY_NOTE, SPOT_FLOOR_NOTE
from planner.cost.spot import RUNAWAY_FACTOR

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    from planner.cost.families import Families
    from planner.cost.options import Options
    from planner.cost.request import RankRequest
    from planner.perf.workloads import Workload

# Exclusion stages, in pipeline order (an option is reported at the first one it fails).
RESERVATION, NO_PRICE, MODEL, SPOT_NEVER, DEADLINE, BUDGET = range(1, 7)


# Where a provider's interruption label comes from, for the notes.
SPOT_SOURCE = {"aws": "AWS Spot Advisor", "azure": "Azure eviction rate"}


def describe_option(offers: pd.DataFrame, row: int, nodes: int, spot: int) -> str:
    """An option in words: "aws 2 x p5.48xlarge (16 x H100-SXM, spot, us-east-1)"."""
    record = offers.iloc[row]
    count = float(record["gpu_count"]) * nodes
    shape = f"{nodes} x " if nodes > 1 else ""
    return (
        f"{record['provider']} {shape}{record['instance_type']} ({count:g} x {record['gpu']}, "
        f"{PRICING_NAMES[spot]}, {record['region']})"
    )


def hours_text(hours: float) -> str:
    """Hours for a message: one decimal below 100 h."""
    return f"{hours:.1f} h" if hours < 100 else f"{hours:,.0f} h"


# A run past a year is no plan a buyer can act on (hardware, prices and the model itself change within one).
YEAR_HOURS = 365.25 * 24


def years_text(hours: float) -> str:
    """'192,699 h (22 years)': hours with the years they make."""
    return f"{hours:,.0f} h ({hours / YEAR_HOURS:,.1f} years)"


def beyond_a_year(
    best: pd.Series,
    options: pd.DataFrame,
    max_nodes: int,
    wider: pd.DataFrame | None,
    widest_nodes: int,
    work: float,
    work_unit: str,
) -> str | None:
    """What stops the answer finishing within a year, and what would: None when the best option does.

    ``options`` are the ranked options, ``wider`` the same job's options on up to ``widest_nodes`` instances (None
    when not asked); ``work`` in ``work_unit`` is the job's amount of work."""
    hours = float(best["time_to_solution_hours"])
    if hours <= YEAR_HOURS:
        return None
    deadline = f"a deadline of {YEAR_HOURS:,.0f} h"
    in_time = options[options["time_to_solution_hours"] <= YEAR_HOURS]
    if len(in_time):
        first = in_time.iloc[0]
        return (
            f"the best option takes {years_text(hours)}; {len(in_time)} options finish within a year, the first "
            f"#{int(first['rank'])} {first['provider']} {int(first['nodes'])} x {first['instance_type']} at "
            f"${float(first['cost_usd']):,.0f} in {float(first['time_to_solution_hours']):,.0f} h ({deadline} keeps "
            "only those)"
        )
    fastest = float(options["time_to_solution_hours"].min())
    text = f"no option finishes within a year: the fastest on {nodes_text(max_nodes)} takes {years_text(fastest)}"
    if wider is not None and len(wider):
        wider_in_time = wider[wider["time_to_solution_hours"] <= YEAR_HOURS]
        if len(wider_in_time):
            nodes = int(wider_in_time["nodes"].min())
            text += f"; on {nodes_text(nodes)} one would ({deadline} keeps only those)"
            return text + f", or {share_of_work(fastest, work, work_unit)} on {nodes_text(max_nodes)}"
        fastest_wider = float(wider["time_to_solution_hours"].min())
        text += f", and on {nodes_text(widest_nodes)} {years_text(fastest_wider)}"
        return (
            text + f"; less work would: {share_of_work(fastest_wider, work, work_unit)} on {nodes_text(widest_nodes)}"
        )
    return text + f"; less work would: {share_of_work(fastest, work, work_unit)}"


def nodes_text(max_nodes: int) -> str:
    """'1 node', 'up to 16 nodes'."""
    return "1 node" if max_nodes == 1 else f"up to {max_nodes} nodes"


def share_of_work(hours: float, work: float, work_unit: str) -> str:
    """'about 18% of the work (1.46e+12 tokens)': the work a run of ``hours`` would get through in a year."""
    share = YEAR_HOURS / hours
    return f"about {share * 100:.2g}% of the work ({share * work:.3g} of {work:.3g} {work_unit})"


def explain_empty(
    offers: pd.DataFrame,
    options: Options,
    within_deadline: npt.NDArray[np.bool_],
    within_budget: npt.NDArray[np.bool_],
    request: RankRequest,
    excluded: pd.DataFrame,
    closest_miss: str | None = None,
) -> str:
    """One line saying why no option is left, naming the option that came closest.

    ``closest_miss`` says why the offering that came closest to holding the job could not, when nothing runs."""
    import numpy as np

    wall, cost, opt_row, opt_nodes, opt_spot = options.wall, options.cost, options.row, options.nodes, options.spot
    deadline_hours, budget_usd = request.deadline_hours, request.budget_usd
    feasible = np.ones(len(wall), dtype=bool)
    fastest = int(np.argmin(wall)) if len(wall) else None
    cheapest = int(np.argmin(cost)) if len(cost) else None

    def where(i: int) -> str:
        return describe_option(offers, int(opt_row[i]), int(opt_nodes[i]), int(opt_spot[i]))

    if fastest is None or cheapest is None:
        if closest_miss:
            return f"no offering can run this job {closest_miss}"
        if len(excluded):
            counts = excluded.groupby("reason", sort=False)["offerings"].sum().sort_values(ascending=False)
            reason = str(counts.index[0])
            return f"no offering can run this job: {reason}"
        return "no offering has a price for the chosen pricing"
    deadline_text = f"a {deadline_hours:g}-hour deadline" if deadline_hours is not None else ""
    budget_text = f"a ${budget_usd:,.2f} budget" if budget_usd is not None else ""
    if deadline_hours is not None and not within_deadline.any():
        return (
            f"no offering meets {deadline_text}; the fastest takes {hours_text(float(wall[fastest]))} "
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


def summarise_exclusions(
    parts: list[tuple[Any, int, Any, Any, Any, Any]],
    fams: Families,
    est_reason: dict[tuple[int, int], str],
    request: RankRequest,
) -> pd.DataFrame:
    """One row per (offering family, nodes, pricing, reason) with how many region/zone offerings it covers.

    ``parts`` are (rows, stage, nodes, pricing code, value, offerings) with scalars or arrays as long as ``rows``;
    ``offerings`` is how many catalog rows each entry stands for; ``est_reason`` is the model's reason per
    (family, nodes - 1).
    """
    import numpy as np
    import pandas as pd

    family, max_nodes = fams.code, request.max_nodes
    deadline_hours, budget_usd = request.deadline_hours, request.budget_usd

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
    weight = np.concatenate([np.broadcast_to(np.asarray(p[5]), (k,)) for p, k in zip(parts, sizes, strict=True)])
    fam = family[rows].astype(np.int64)
    # One integer per (family, nodes 0..max, pricing -1/0/1, stage 1..6); nodes 0 means "not about a node count".
    key = ((fam * (max_nodes + 1) + nodes) * 3 + (pricing + 1)) * 8 + stage
    # The key space (families x nodes x pricings x stages) is small: count and take minima by direct indexing.
    size = int(family.max()) + 1 if len(family) else 1
    all_counts = np.bincount(key, weights=weight, minlength=size * (max_nodes + 1) * 3 * 8).astype(np.int64)
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
        if st == RESERVATION:
            reason = "sold as reservation only (no on-demand or spot price)"
        elif st == NO_PRICE:
            reason = "no price for the chosen pricing"
        elif st == MODEL:
            reason = est_reason.get((f, n - 1), "not modelled")
        elif st == SPOT_NEVER:
            reason = (
                "on spot, interruptions would stop it faster than it checkpoints: it would never finish "
                f"(expected time over {RUNAWAY_FACTOR:g}x its work)"
            )
        elif st == DEADLINE:
            reason = f"misses the {deadline_hours:g} h deadline (takes {hours_text(extreme)})"
        else:
            reason = f"over the ${budget_usd:,.2f} budget (costs ${extreme:,.2f} at best)"
        records.append(
            {
                "provider": fams.provider[f],
                "instance_type": fams.instance_type[f],
                "gpu": fams.gpu[f],
                "gpus_per_node": float(fams.gpu_count[f]),
                "nodes": int(n) if n else None,
                "pricing": PRICING_NAMES[price_code] if price_code >= 0 else "any",
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


def long_run_hours(spot_warning_hours: float | None) -> float:
    """The run length past which an option carries a long-run note: the request's, else the spot model's bound."""
    from planner.cost.spot import spot_model

    return spot_model().spot_warning_hours if spot_warning_hours is None else spot_warning_hours


def _flag_notes(flags: str, *, spot: bool) -> list[str]:
    """A catalog ``flags`` value as notes: ``spot_at_floor`` in words on a spot option, and not on an on-demand one
    (its price is not the floor's); ``tpu_slice`` as the slice's billing and spot rule; other flags as they are."""
    from planner.catalog.tpu import TPU_FLAG, TPU_NOTE, TPU_SPOT_NOTE

    notes = []
    for flag in filter(None, flags.split(";")):
        if flag == "spot_at_floor":
            if spot:
                notes.append(SPOT_FLOOR_NOTE)
        elif flag == TPU_FLAG:
            notes.extend([TPU_NOTE, TPU_SPOT_NOTE] if spot else [TPU_NOTE])
        else:
            notes.append(flag)
    return notes


def option_notes(
    spot: npt.NDArray[np.bool_],
    bucket: npt.NDArray[np.int64],
    nodes: npt.NDArray[np.int64],
    network: npt.NDArray[np.float64],
    flags: npt.NDArray[np.object_],
    providers: npt.NDArray[np.object_],
    risky: npt.NDArray[np.bool_],
    wall_hours: npt.NDArray[np.float64],
    spot_warning_hours: float | None,
) -> npt.NDArray[np.object_]:
    """Short per-option notes: spot band and its source, risk flag, long run, multi-node network, catalog flags.

    Built once per distinct combination, then gathered: options outnumber the combinations by far.
    """
    import numpy as np
    import pandas as pd

    from planner.cost.spot import band_for

    bound = long_run_hours(spot_warning_hours)
    # One bound for both pricings: a long on-demand run is not reclaimed, but its hosts still get maintenance events
    # and fail, so it needs the same checkpointing discipline (a note, not a cost: nothing here prices the stops).
    long_run = wall_hours > bound
    flag_codes, flag_names = pd.factorize(flags)
    network_codes, network_values = pd.factorize(network, use_na_sentinel=False)
    provider_codes, provider_names = pd.factorize(providers)
    columns = [
        spot.astype(np.int64),
        np.where(spot, bucket, 0),
        np.where(spot, provider_codes, 0),
        risky & spot,
        long_run,
        nodes,
        network_codes,
        flag_codes + 1,  # -1 (no flags) -> 0
    ]
    # One integer per combination (mixed radix): a 1-d unique is far faster than a unique over rows.
    digits = [np.asarray(c, dtype=np.int64) for c in columns]
    radix = [int(d.max()) + 1 if len(d) else 1 for d in digits]
    key = np.zeros(len(spot), dtype=np.int64)
    for d, r in zip(digits, radix, strict=True):
        key = key * r + d
    inverse, unique_keys = pd.factorize(key)
    combos = []
    for value in unique_keys.tolist():
        parts_of_key = []
        for r in reversed(radix):
            value, digit = divmod(value, r)
            parts_of_key.append(digit)
        combos.append(parts_of_key[::-1])
    texts: list[str] = []
    for is_spot, bucket_index, provider_code, is_risky, is_long, n, network_code, flag_plus_one in combos:
        flag_code = flag_plus_one - 1
        parts: list[str] = []
        if is_spot:
            provider = str(provider_names[provider_code])
            label = SPOT_BUCKETS[bucket_index] if bucket_index < len(SPOT_BUCKETS) else None
            band = band_for(provider, label)
            where = f"{label} on {SPOT_SOURCE.get(provider, provider)}" if label else "no published rate"
            parts.append(f"spot {band} interruption band ({where})")
            if is_risky:
                parts.append(RISKY_NOTE)
            if is_long:
                parts.append(f"over {bound:g} h on spot: needs checkpoints and automatic restarts")
        elif is_long:
            parts.append(
                f"over {bound:g} h on demand: host maintenance or a failure can stop the run; checkpoint regularly "
                "and consider splitting it"
            )
        if n > 1:
            parts.append(f"{n} nodes over {float(network_values[network_code]):g} Gbit/s")
        if flag_code >= 0 and flag_names[flag_code]:
            parts.extend(_flag_notes(str(flag_names[flag_code]), spot=bool(is_spot)))
        texts.append("; ".join(parts))
    result: npt.NDArray[np.object_] = np.array(texts, dtype=object)[np.asarray(inverse).reshape(-1)]
    return result


def assumptions_for(workload: Workload, request: RankRequest) -> list[str]:
    """Every assumption behind a ranking's numbers, in words; the tables they come from are the only source."""
    lines = [
        f"workload {workload.name}: {workload.default_work_text()}, {request.precision}",
        workload.software_text,
        *filter(None, [workload.batch_text(), workload.eval_text()]),
        "time to solution = performance-model training time + start-up overhead + expected spot checkpoints, "
        "rework, restarts and waits for capacity",
        f"start-up overhead {request.startup_overhead_hours:g} h per run (boot, image pull, data staging), billed",
        f"billing: {billing_text()}",
        "cost = instances x billed hours x price per instance-hour; totals are sums of the cost lines",
        "zones of one region collapse to the cheapest; prices are catalog list prices unless your prices file "
        "negotiates them (price_basis says which); no storage or egress",
        f"runs over {long_run_hours(request.spot_warning_hours):g} h carry a note: on demand, host maintenance or a "
        "failure can stop them (not priced); on spot they need checkpoints and automatic restarts",
    ]
    if request.pricing != "on-demand":
        lines += spot_assumptions(
            workload,
            request.checkpoint_interval_hours,
            request.restart_overhead_hours,
            request.interruption_rate,
            request.interruption_rate_per_node_hour,
            request.checkpoint_storage_gbps,
            request.spot_warning_hours,
        )
    lines += energy_assumptions()
    lines.append(ORDER_TEXT[request.by])
    return lines


ORDER_TEXT = {
    "cost": "ordered by expected cost, then time",
    "time": "ordered by expected time to solution, then cost",
    "cost-time": "ordered by cost x time (equal weight to both), then cost",
    "co2": "ordered by expected kgCO2e per run, then cost",
}


def spot_assumptions(
    workload: Workload,
    checkpoint_interval_hours: float | None,
    restart_overhead_hours: float,
    default_rate: float,
    own_rate: float | None,
    storage_gbps: float | None,
    warning_hours: float | None,
) -> list[str]:
    """The spot model in words, each figure stated once with its source."""
    from planner.cost.spot import default_band, hazard_bands, spot_model
    from planner.perf.memory import trained_params

    model = spot_model()
    bands = "; ".join(
        f"{b.name} {b.expected:g} ({b.low:g}-{b.high:g}) from {b.source}" for b in hazard_bands().values()
    )
    gbps = model.checkpoint_storage_gbps if storage_gbps is None else storage_gbps
    trained = trained_params(workload)
    size_gb = trained * model.checkpoint_bytes_per_param / 1e9
    frozen = workload.params - trained
    if frozen > 0:
        what = (
            f"{model.checkpoint_bytes_per_param:g} bytes per trained parameter: the LoRA adapters, "
            f"{trained / workload.params * 100:.3g}% of the {workload.params / 1e9:,.3g}B parameters"
        )
        reread = (
            f"reading the checkpoint back and the {frozen * model.frozen_weight_bytes_per_param / 1e9:,.3g} GB frozen "
            f"base model, {model.frozen_weight_bytes_per_param:g} bytes per parameter as published, on every node"
        )
    else:
        what = f"{model.checkpoint_bytes_per_param:g} bytes per parameter"
        reread = "reading the checkpoint back"
    if own_rate is not None:
        rate_text = f"spot: your interruption rate {own_rate:g} per node-hour replaces every band"
    else:
        rate_text = (
            f"spot: AWS Spot Advisor buckets and Azure eviction bands choose a band (data/spot_bands.csv); offerings "
            f"without one (all of Google Cloud) use the {default_band()} band at {default_rate:g} per node-hour"
        )
    interval = (
        "the Young/Daly interval sqrt(2 x checkpoint time x mean time between stops)"
        if checkpoint_interval_hours is None
        else f"every {checkpoint_interval_hours:g} h (as set)"
    )
    wait_low, wait, wait_high = model.capacity_wait_hours
    bound = long_run_hours(warning_hours)
    return [
        f"spot hazard bands, reclaims per node-hour (low-high scenario): {bands}",
        rate_text,
        f"spot: a job on N nodes is stopped at node rate x N^{model.correlation_exponent:g}, not x N: reclaims "
        f"arrive together ({model.sources['correlation_exponent']})",
        f"spot: checkpoint of {size_gb:,.3g} GB ({what}) written at {gbps:g} Gbit/s per node, {interval}; each stop "
        f"redoes the work since the last checkpoint, then {restart_overhead_hours:g} h to restart plus {reread} "
        "(Daly 2006 expected time)",
        f"spot: after a stop the job waits on average {wait:g} h for capacity ({wait_low:g}-{wait_high:g} h), unbilled "
        f"(SkyPilot spot-traces)",
        "spot: cost_low/cost_high and time_low/time_high are the low and high scenarios (hazard band ends, the "
        "model's fast and slow ends); spot_risky marks a high scenario that more than doubles the interruption-free "
        f"time or cost; spot runs over {bound:g} h warn",
        "spot-only offerings are never priced on demand; reservation-only offerings are excluded",
    ]


def energy_assumptions() -> list[str]:
    from planner.catalog.schema import PROVIDERS
    from planner.energy import FALLBACK_PUE, carbon_providers, node_factor, provider_pue

    factor = node_factor()
    published = provider_pue()
    pue = ", ".join(f"{p} {v:g}" for p, v in published.items())
    others = [p for p in PROVIDERS if p not in published]
    if others:
        pue += f"; {', '.join(others)} {FALLBACK_PUE:g}, no published figure: the highest of these"
    no_carbon = [p for p in PROVIDERS if p not in carbon_providers()]
    return [
        f"energy = GPUs x TDP x node factor {factor.expected:.2f} ({factor.low:.2f}-{factor.high:.2f}, fitted on "
        f"{factor.points} measured 8-GPU nodes, mostly MLPerf Training power results) x PUE ({pue}) x hours the "
        "nodes run the job at training load (training, checkpoint writes, rework, restarts; not the start-up "
        "overhead, when the GPUs wait idle, nor waits for spot capacity, when no node is held)",
        "co2_kg = energy x the region's grid carbon intensity (Google region-carbon-info 2024 for Google Cloud; "
        "Cloud Carbon Footprint factors for AWS and Azure; the provider's average where a region is missing)"
        + (f"; none for {', '.join(no_carbon)} (no per-region figure), so co2_kg is empty there" if no_carbon else ""),
    ]
