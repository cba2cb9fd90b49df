"""Named cost lines and the arithmetic behind them: billing granularity and the spot labels of the grid.

Every function here is vectorised over numpy arrays, so ranking a whole catalog costs a few array operations;
the spot physics (hazard bands, checkpointing) lives in spot.py, energy and carbon in energy.py.
A cost is a list of `CostLine` items (name, unit, quantity, unit price); a total is always their sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from planner.cost.spot import default_band, hazard_bands, spot_labels

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

# Billing granularity per cloud: (increment, minimum) in seconds for a running VM.
# AWS: per-second billing for Linux instances with a 60 s minimum (EC2 On-Demand pricing page, 2024).
# Google Cloud: per-second billing after a 1 minute minimum (Compute Engine pricing docs, 2024).
# Azure: VMs are billed per minute (Azure Linux VM pricing FAQ, 2024).
BILLING_SECONDS: dict[str, tuple[float, float]] = {
    "aws": (1.0, 60.0),
    "gcp": (1.0, 60.0),
    "azure": (60.0, 60.0),
    # Lambda: "bills in one-minute increments" from when the instance passes health checks (docs.lambda.ai,
    # public-cloud/billing, 2026).
    "lambda": (60.0, 60.0),
    # DigitalOcean (Paperspace's GPU Droplets): since 2026-01-01 Droplets are billed per second with a 60 s minimum
    # (DigitalOcean Droplet pricing docs, validated 2026-05-28; the GPU Droplet rule is assumed to be the same).
    "paperspace": (1.0, 60.0),
}
PROVIDER_NAMES: dict[str, str] = {
    "aws": "AWS",
    "gcp": "Google Cloud",
    "azure": "Azure",
    "lambda": "Lambda",
    "paperspace": "DigitalOcean/Paperspace",
}
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

    def listed(names: list[str]) -> str:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    return "; ".join(f"{listed(names)} {rule}" for rule, names in by_rule.items())


# Interruption labels providers publish (AWS Spot Advisor buckets, Azure eviction-rate bands), from
# data/spot_bands.csv; the grid has one spot axis entry per label plus one for "no label" (the default band).
SPOT_BUCKETS: tuple[str, ...] = spot_labels()
# Reclaims per node-hour where no label is published: the default band's expected rate (data/spot_hazard.csv).
DEFAULT_INTERRUPTION_RATE = hazard_bands()[default_band()].expected


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
