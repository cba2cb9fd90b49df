"""Words for the numbers: why options were left out, why nothing is left, per-option notes, the assumptions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from planner.cost.lines import (
    DEFAULT_SPOT_MONTHLY,
    HOURS_PER_MONTH,
    SPOT_BUCKET_MONTHLY,
    SPOT_BUCKETS,
    billing_text,
)
from planner.cost.result import EXCLUDED_COLUMNS, PRICING_NAMES

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    from planner.cost.request import RankRequest
    from planner.perf.workloads import Workload

# Exclusion stages, in pipeline order (an option is reported at the first one it fails).
RESERVATION, NO_PRICE, MODEL, SPOT_NEVER, DEADLINE, BUDGET = range(1, 7)


def monthly_share(rate_per_hour: float) -> float:
    """Share of instances interrupted at least once a month at ``rate_per_hour``."""
    return 1.0 - math.exp(-rate_per_hour * HOURS_PER_MONTH)


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


def explain_empty(
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
    """One line saying why no option is left, naming the option that came closest."""
    import numpy as np

    def where(i: int) -> str:
        return describe_option(offers, int(opt_row[i]), int(opt_nodes[i]), int(opt_spot[i]))

    if fastest is None or cheapest is None:
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

    ``parts`` are (rows, stage, nodes, pricing code, value, offerings) with scalars or arrays as long as ``rows``;
    ``offerings`` is how many catalog rows each entry stands for.
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
            reason = "spot interruptions would restart it faster than it checkpoints; it would never finish"
        elif st == DEADLINE:
            reason = f"misses the {deadline_hours:g} h deadline (takes {hours_text(extreme)})"
        else:
            reason = f"over the ${budget_usd:,.2f} budget (costs ${extreme:,.2f} at best)"
        records.append(
            {
                "provider": fam_provider[f],
                "instance_type": fam_instance[f],
                "gpu": fam_gpu[f],
                "gpus_per_node": float(fam_count[f]),
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


def option_notes(
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
                parts.append(f"spot interruptions assumed {monthly_share(default_rate):.0%}/month")
        if n > 1:
            parts.append(f"{n} nodes over {float(network_values[network_code]):g} Gbit/s")
        if flag_code >= 0 and flag_names[flag_code]:
            parts.append(str(flag_names[flag_code]))
        texts.append("; ".join(parts))
    result: npt.NDArray[np.object_] = np.array(texts, dtype=object)[inverse.reshape(-1)]
    return result


def assumptions_for(workload: Workload, request: RankRequest) -> list[str]:
    """Every assumption behind a ranking's numbers, in words; the tables they come from are the only source."""
    buckets = ", ".join(f"{label} -> {mid:.1%}" for label, (_, mid, _) in SPOT_BUCKET_MONTHLY.items())
    rate = request.interruption_rate
    lines = [
        f"workload {workload.name}: {workload.default_work_text()}, {request.precision}",
        workload.software_text,
        "time to solution = performance-model training time + start-up overhead + expected spot rework",
        f"start-up overhead {request.startup_overhead_hours:g} h per run (boot, image pull, data staging), billed",
        f"billing: {billing_text()}",
        "cost = instances x billed hours x price per instance-hour; totals are sums of the cost lines",
        "zones of one region collapse to the cheapest; prices are catalog prices (no discounts, storage or egress)",
    ]
    if request.pricing != "on-demand":
        lines += [
            f"spot: AWS Spot Advisor monthly interruption bucket -> expected share of instances reclaimed a month "
            f"({buckets}, the open '>20%' bucket taken as 20-50%); bucket edges give cost_low/cost_high",
            f"spot elsewhere (no Spot Advisor data): {monthly_share(rate):.1%} of instances reclaimed a month "
            f"(range {DEFAULT_SPOT_MONTHLY[0]:.0%}-{DEFAULT_SPOT_MONTHLY[2]:.0%}); AWS's global average is '<10%'",
            f"spot: a job on N instances stops when any is reclaimed; each interruption loses half a checkpoint "
            f"interval ({request.checkpoint_interval_hours:g} h) of work plus {request.restart_overhead_hours:g} h "
            "to restart",
            "spot-only offerings are never priced on demand; reservation-only offerings are excluded",
        ]
    lines.append(ORDER_TEXT[request.by])
    return lines


ORDER_TEXT = {
    "cost": "ordered by expected cost, then time",
    "time": "ordered by expected time to solution, then cost",
    "cost-time": "ordered by cost x time (equal weight to both), then cost",
}
