"""Named cost lines and the arithmetic behind them: billing granularity, spot interruptions, overheads.

Every function here is vectorised over numpy arrays, so ranking a whole catalog costs a few array operations.
A cost is a list of `CostLine` items (name, unit, quantity, unit price); a total is always their sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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
BILLING_NOTE: dict[str, str] = {
    "aws": "per second, 60 s minimum",
    "gcp": "per second, 60 s minimum",
    "azure": "per minute",
}

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

    @property
    def cost_usd(self) -> float:
        """quantity x unit price."""
        return float(self.quantity * self.unit_price_usd)


def total_usd(lines: list[CostLine]) -> float:
    """The total of a cost: the sum of its lines."""
    return float(sum(line.cost_usd for line in lines))


def billed_hours(hours: FloatArray, providers: npt.NDArray[np.object_]) -> FloatArray:
    """Wall-clock hours of one instance rounded up to each cloud's billing increment and minimum."""
    import numpy as np

    increment = np.ones(len(hours))
    minimum = np.full(len(hours), 60.0)
    for provider, (step, least) in BILLING_SECONDS.items():
        mask = providers == provider
        increment[mask] = step
        minimum[mask] = least
    seconds = hours * 3600.0
    # Round to a microsecond before ceiling so float noise (3600.0000000001 s) does not bill an extra increment.
    billed = np.ceil(np.round(seconds / increment, 6)) * increment
    result: FloatArray = np.maximum(billed, minimum) / 3600.0
    return result


def spot_rates(buckets: npt.NDArray[np.object_], default_rate: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(low, expected, high) interruption rates per instance-hour for each Spot Advisor bucket (None: default)."""
    import numpy as np

    scale = default_rate / DEFAULT_INTERRUPTION_RATE if DEFAULT_INTERRUPTION_RATE else 1.0
    low = np.full(len(buckets), monthly_to_hourly(DEFAULT_SPOT_MONTHLY[0]) * scale)
    mid = np.full(len(buckets), default_rate)
    high = np.full(len(buckets), monthly_to_hourly(DEFAULT_SPOT_MONTHLY[2]) * scale)
    for bucket, (p_low, p_mid, p_high) in SPOT_BUCKET_MONTHLY.items():
        mask = buckets == bucket
        low[mask] = monthly_to_hourly(p_low)
        mid[mask] = monthly_to_hourly(p_mid)
        high[mask] = monthly_to_hourly(p_high)
    return low, mid, high


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
    interruptions = rate_per_instance_hour * nodes * wall
    return wall, interruptions
