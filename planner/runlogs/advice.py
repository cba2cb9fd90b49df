"""Right-sizing advice in plain words, each with what it costs this job.

The money is the run's cost (its paid GPU-hours at the offering's price per GPU-hour) times the share at stake:
the idle share, the share of time the SMs were not active, or, for a cheaper GPU, the difference in the run's
cost at the model's speed on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from planner.runlogs.report import UtilisationReport

# Thresholds of the advice (shares, 0-1). Below BUSY_LOW the GPUs wait for work most of the time; busy above
# BUSY_HIGH with SMs active below SM_LOW means kernels keep few SMs working (small batches, launch- or input-bound
# steps); power below POWER_LOW of TDP is a GPU far from its compute limit.
BUSY_LOW = 0.8
BUSY_HIGH = 0.8
SM_LOW = 0.5
POWER_LOW = 0.5
# Headroom kept above the observed peak memory when judging a smaller GPU (allocator fragmentation, longer batches).
MEMORY_MARGIN = 0.1


@dataclass(frozen=True)
class Advice:
    """One finding: ``kind``, the sentence for the user, and the dollars of this run at stake (None: no price)."""

    kind: str
    text: str
    cost_usd: float | None


def _money(value: float | None) -> str:
    return "" if value is None else f" (${value:,.2f} of this run)"


def advise(
    report: UtilisationReport,
    *,
    gpu: str | None,
    price_usd_per_gpu_hour: float | None,
    prices_usd_per_gpu_hour: Mapping[str, float] | None = None,
    speed_on: Callable[[str], tuple[float | None, bool]] | None = None,
    memory_margin: float = MEMORY_MARGIN,
) -> tuple[Advice, ...]:
    """The findings of ``report``; ``speed_on(gpu)`` gives the model's (throughput, fits in memory) of the job on
    another GPU (same count), used to price a smaller GPU at its own speed."""
    node = report.node
    run_cost = node.hours * price_usd_per_gpu_hour if price_usd_per_gpu_hour is not None else None

    def share_of_run(share: float) -> float | None:
        return None if run_cost is None else max(share, 0.0) * run_cost

    found: list[Advice] = []
    if node.idle_hours > 0:
        share = node.idle_hours / node.hours
        found.append(
            Advice(
                "idle",
                f"GPUs sat idle in {node.idle_stretches} stretches of a minute or more: {node.idle_hours:.2f} of "
                f"{node.hours:.2f} paid GPU-hours ({share:.0%}){_money(share_of_run(share))}; release or share the "
                "GPUs while the job prepares data, evaluates or checkpoints",
                share_of_run(share),
            )
        )
    if node.busy_share is not None and node.busy_share < BUSY_LOW:
        share = 1.0 - node.busy_share
        found.append(
            Advice(
                "underused",
                f"the GPUs ran kernels {node.busy_share:.0%} of the paid time; the other {share:.0%}"
                f"{_money(share_of_run(share))} went on waiting (input pipeline, host work, communication)",
                share_of_run(share),
            )
        )
    busy, active = node.busy_share, node.sm_active
    if busy is not None and active is not None and busy >= BUSY_HIGH and active < SM_LOW:
        share = 1.0 - active
        found.append(
            Advice(
                "input-bound",
                f"utilisation reads {busy:.0%} but the SMs were active {active:.0%}: kernels keep few SMs working, so "
                "the job waits on its input or on kernel launches; more data-loader workers, a larger per-GPU batch "
                f"or CUDA graphs would use the GPUs you pay for{_money(share_of_run(share))}",
                share_of_run(share),
            )
        )
    if node.power_share_of_tdp is not None and node.power_share_of_tdp < POWER_LOW:
        share = 1.0 - node.power_share_of_tdp
        found.append(
            Advice(
                "power",
                f"the GPUs drew {node.power_share_of_tdp:.0%} of their {report.tdp_w:.0f} W TDP on average: far from "
                f"their compute limit; at most {share:.0%} of the run's cost is that slack"
                f"{_money(share_of_run(share))}",
                share_of_run(share),
            )
        )
    smaller = _smaller_gpu(report, gpu, price_usd_per_gpu_hour, prices_usd_per_gpu_hour, speed_on, memory_margin)
    if smaller is not None:
        found.append(smaller)
    return tuple(found)


def _smaller_gpu(
    report: UtilisationReport,
    gpu: str | None,
    price: float | None,
    prices: Mapping[str, float] | None,
    speed_on: Callable[[str], tuple[float | None, bool]] | None,
    margin: float,
) -> Advice | None:
    """The cheapest GPU per run whose memory holds the observed peak with ``margin`` (and the model's fit)."""
    from planner.hardware import gpu_table

    node = report.node
    if gpu is None or price is None or not prices or node.memory_peak_gib is None:
        return None
    table = gpu_table()
    need_gib = node.memory_peak_gib * (1.0 + margin)
    here = speed_on(gpu)[0] if speed_on else None
    best: tuple[float, str, float] | None = None
    for other, other_price in prices.items():
        spec = table.get(other)
        if other == gpu or spec is None or spec.memory_gib >= table[gpu].memory_gib or spec.memory_gib < need_gib:
            continue
        slower = 1.0
        if speed_on is not None and here:
            speed, fits = speed_on(other)
            if not fits or not speed:
                continue
            slower = here / speed
        cost = node.hours * other_price * slower
        if best is None or cost < best[0]:
            best = (cost, other, slower)
    run_cost = node.hours * price
    if best is None or best[0] >= run_cost:
        return None
    cost, other, slower = best
    speed_text = f", {slower:.2f}x the time by the model" if speed_on is not None and slower != 1.0 else ""
    return Advice(
        "smaller-gpu",
        f"peak memory {node.memory_peak_gib:.1f} GiB (+{margin:.0%} margin) fits on {other} "
        f"({table[other].memory_gib:.0f} GiB, ${prices[other]:.2f}/GPU-h{speed_text}): this run would cost "
        f"${cost:,.2f} instead of ${run_cost:,.2f}",
        run_cost - cost,
    )


def advice_rows(advice: tuple[Advice, ...]) -> list[dict[str, Any]]:
    return [{"kind": item.kind, "advice": item.text, "cost_usd": item.cost_usd} for item in advice]
