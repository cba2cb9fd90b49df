"""Named cost lines and the arithmetic behind them: billing granularity, spot interruptions, overheads.

Every function here is vectorised over numpy arrays, so ranking a whole catalog costs a few array operations.
A cost is a list of `CostLine` items (name, unit, quantity, unit price); a total is always their sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

HOURS_PER_MONTH = 730.0

# Billing granularity per cloud: (increment, minimum) in seconds for a running VM.
# AWS: per-second billing for Linux instances with a 60 s minimum (EC2 On-Demand pricing page, 2024).
# Google Cloud: per-second billing after a 1 minute minimum (Compute Engine pricing docs, 2024).
# Azure: VMs are billed per minute (Azure Linux VM pricing FAQ, 2024).
BILLING_SECONDS: dict[str, tuple[float, float]] = {
    "aws": (1.0, 60.0),
    "gcp": (1.0, 60.0),
    "azure": (60.0, 60.0),
}
PROVIDER_NAMES: dict[str, str] = {"aws": "AWS", "gcp": "Google Cloud", "azure": "Azure"}
# Where a provider has no row: per second with a 60 s minimum, the most common rule.
DEFAULT_BILLING_SECONDS = (1.0, 60.0)


def billing_note(provider: str) -> str:
    """One provider's billing rule in words ("per second, 60 s minimum"), from BILLING_SECONDS."""
    increment, minimum = BILLING_SECONDS.get(provider, DEFAULT_BILLING_SECONDS)
    unit = {1.0: "per second", 60.0: "per minute", 3600.0: "per hour"}.get(increment, f"per {increment:g} s")
    return unit if minimum <= increment else f"{unit}, {minimum:g} s minimum"


def billing_text() -> str:
    """Every provider's billing rule in one line, providers with the same rule together."""
    by_rule: dict[str, list[str]] = {}
    for provider in BILLING_SECONDS:
        by_rule.setdefault(billing_note(provider), []).append(PROVIDER_NAMES.get(provider, provider))
    return "; ".join(f"{' and '.join(names)} {rule}" for rule, names in by_rule.items())


# AWS Spot Advisor buckets ("frequency of interruption": share of instances reclaimed over the trailing
# month) -> (low, expected, high) monthly probability. Edges from the bucket labels; the expected value is
# the bucket's middle, and the open ">20%" bucket is assumed to span 20-50%. Assumption, not an AWS figure.
SPOT_BUCKET_MONTHLY: dict[str, tuple[float, float, float]] = {
    "<5%": (0.0, 0.025, 0.05),
    "5-10%": (0.05, 0.075, 0.10),
    "10-15%": (0.10, 0.125, 0.15),
    "15-20%": (0.15, 0.175, 0.20),
    ">20%": (0.20, 0.30, 0.50),
}
# Where no Spot Advisor bucket exists (Google Cloud, Azure, new AWS types): AWS's published global
# average is "<10%" a month (spot advisor data file, global_rate, 2025-06); we assume 10% (5-30% range).
DEFAULT_SPOT_MONTHLY: tuple[float, float, float] = (0.05, 0.10, 0.30)
SPOT_BUCKETS: tuple[str, ...] = tuple(SPOT_BUCKET_MONTHLY)


def monthly_to_hourly(probability: float) -> float:
    """Poisson rate per instance-hour that gives ``probability`` of at least one interruption in a month."""
    if probability <= 0:
        return 0.0
    if probability >= 1:
        raise ValueError("a monthly interruption probability must be below 1")
    return -math.log1p(-probability) / HOURS_PER_MONTH


DEFAULT_INTERRUPTION_RATE = monthly_to_hourly(DEFAULT_SPOT_MONTHLY[1])


@dataclass(frozen=True)
class CostLine:
    """One named item of a cost: ``quantity`` ``unit`` at ``unit_price_usd`` each."""

    name: str
    unit: str
    quantity: float
    unit_price_usd: float
    cost_usd: float = field(init=False)  # quantity x unit price

    def __post_init__(self) -> None:
        object.__setattr__(self, "quantity", float(self.quantity))
        object.__setattr__(self, "unit_price_usd", float(self.unit_price_usd))
        object.__setattr__(self, "cost_usd", self.quantity * self.unit_price_usd)


def total_usd(lines: list[CostLine]) -> float:
    """The total of a cost: the sum of its lines."""
    return float(sum(line.cost_usd for line in lines))


def billing_steps(providers: Sequence[str]) -> tuple[FloatArray, FloatArray]:
    """(increment, minimum) in seconds for each provider name (per second, 60 s minimum where unknown)."""
    import numpy as np

    steps = [BILLING_SECONDS.get(str(p), DEFAULT_BILLING_SECONDS) for p in providers]
    return np.array([s[0] for s in steps], dtype=float), np.array([s[1] for s in steps], dtype=float)


def billed_hours(hours: FloatArray, increment_s: FloatArray, minimum_s: FloatArray) -> FloatArray:
    """Wall-clock hours of one instance rounded up to the billing increment, and at least the minimum."""
    import numpy as np

    # Round to a millionth of an increment before ceiling so float noise (3600.0000000001 s) bills nothing extra.
    billed = np.ceil(np.round(hours * 3600.0 / increment_s, 6)) * increment_s
    result: FloatArray = np.maximum(billed, minimum_s) / 3600.0
    return result


def spot_rate_table(default_rate: float) -> FloatArray:
    """Interruption rates per instance-hour, shape (len(SPOT_BUCKETS) + 1, 3): (low, expected, high) per bucket.

    The last row is the default for offerings without a Spot Advisor bucket, scaled to ``default_rate``.
    """
    import numpy as np

    scale = default_rate / DEFAULT_INTERRUPTION_RATE
    table = [[monthly_to_hourly(p) for p in SPOT_BUCKET_MONTHLY[bucket]] for bucket in SPOT_BUCKETS]
    table.append([monthly_to_hourly(DEFAULT_SPOT_MONTHLY[0]) * scale, default_rate])
    table[-1].append(monthly_to_hourly(DEFAULT_SPOT_MONTHLY[2]) * scale)
    return np.array(table, dtype=float)


def spot_wall_hours(
    work_hours: FloatArray,
    rate_per_instance_hour: FloatArray,
    nodes: FloatArray,
    checkpoint_interval_hours: float,
    restart_overhead_hours: float,
) -> tuple[FloatArray, FloatArray]:
    """Expected wall-clock hours and interruptions of ``work_hours`` of work on spot capacity.

    The job stops when any of its ``nodes`` is reclaimed (rate x nodes). Each interruption loses on average half
    a checkpoint interval of work plus the restart overhead, and interruptions keep arriving during the rework:
    wall = work / (1 - rate x nodes x loss). Where that loss reaches the whole run, the result is infinite.
    """
    import numpy as np

    loss = np.minimum(checkpoint_interval_hours, work_hours) / 2.0 + restart_overhead_hours
    pressure = rate_per_instance_hour * nodes * loss
    with np.errstate(divide="ignore", invalid="ignore"):
        wall = np.where(pressure < 1.0, work_hours / (1.0 - pressure), np.inf)
        interruptions = np.where(rate_per_instance_hour > 0, rate_per_instance_hour * nodes * wall, 0.0)
    return wall, interruptions
