"""Price gates of a live refresh: a fresh price that cannot be the offering's list price is held back, field by field.

A price is held back when it is no price at all (zero, implausibly low), when it is far from the offering's own
previous price, or far from what the other clouds charge per hour of the same GPU. The held-back field keeps its
previous value, with that value's own date, or is left empty; the other fields of the row stay fresh, and every
held-back field is named (provider, type, region, field, value, why).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from planner.catalog.schema import REGION_UNKNOWN, Offer, RawOffer
from planner.catalog.validate import PRICE_PARTS, SPOT_FLOOR_SHARE, Rejected, price_problem

# History: a list price of one offering moves by tens of percent in a year (AWS cut its H100/A100 on-demand prices
# by up to 45% in June 2025); a change beyond 4x either way between two refreshes is a unit or parsing error
# (cents read as dollars, a per-GPU price read as the instance's), not a price change.
HISTORY_BAND = (0.25, 4.0)
# Cross-cloud: per GPU-hour, the on-demand list prices of one GPU across the five clouds reach 7x the other clouds'
# median where a big host surrounds one GPU (AWS g4dn.16xlarge, one T4 and 64 vCPUs; Azure NV36adms_A10_v5 in
# brazilsouth; bundled catalog of July 2026). Beyond 10x above or below it is an error (a cents/dollars or per-GPU/
# per-instance mix-up, x100 or x0.01), not a premium or a bargain; smaller errors are the history band's to catch.
CROSS_CLOUD_BAND = (0.1, 10.0)
# Fewer reference rows than this make no median worth judging by.
MIN_REFERENCE_ROWS = 3
# No cloud advertises a spot discount deeper than SPOT_FLOOR_SHARE (90% off); a spot price under half of that floor
# of its own on-demand price is not a market price. Above on-demand by the history band's factor, neither.
SPOT_SHARE_BAND = (SPOT_FLOOR_SHARE / 2, HISTORY_BAND[1])
# A spot-only offering's spot price moves between the floor and on-demand (10x), so only beyond that is it wrong.
SPOT_HISTORY_BAND = (SPOT_FLOOR_SHARE, 1 / SPOT_FLOOR_SHARE)

ON_DEMAND, SPOT = (parts[0] for parts in PRICE_PARTS)


@dataclass(frozen=True)
class HeldPrice:
    """One fresh price not stored as truth, why, and what the row carries instead."""

    provider: str
    instance_type: str
    region: str
    zone: str
    field: str
    value: float
    reason: str
    kept_value: float | None = None  # the previous price the row carries instead; None: left empty
    kept_as_of: str | None = None  # when that previous price was taken

    @property
    def kept(self) -> str:
        """What the row carries instead, in words."""
        if self.kept_value is None:
            return "left empty"
        return f"kept the previous {self.kept_value:g} of {self.kept_as_of}"

    def __str__(self) -> str:
        where = f"{self.region}/{self.zone}" if self.zone else self.region
        what = f"{self.field} {self.value:g} held back ({self.reason}); {self.kept}"
        return f"{self.provider} {self.instance_type} {where}: {what}"


def _number(value: Any) -> float | None:
    """A finite float, or None for a missing or unreadable value (validation names the unreadable ones)."""
    if value is None or isinstance(value, bool) or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def reference_prices(rows: Iterable[Mapping[str, Any]], provider: str) -> dict[str, float]:
    """Per GPU id, the median on-demand price per GPU-hour of the other providers' rows (flagged outliers left out)."""
    per_gpu: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        price, gpus = _number(row.get(ON_DEMAND)), _number(row.get("gpu_count"))
        if row.get("provider") == provider or price is None or not gpus or gpus <= 0:
            continue
        if "price_outlier" in str(row.get("flags") or ""):
            continue
        per_gpu[str(row.get("gpu"))].append(price / gpus)
    return {gpu: statistics.median(prices) for gpu, prices in per_gpu.items() if len(prices) >= MIN_REFERENCE_ROWS}


def _outside(ratio: float, band: tuple[float, float]) -> bool:
    return not band[0] <= ratio <= band[1]


def _spot_date(row: Mapping[str, Any]) -> str:
    """When a row's spot price was taken: its spot_as_of, else its as_of."""
    return str(row.get("spot_as_of") or row.get("as_of"))


def _set_spot_date(row: dict[str, Any], when: str | None) -> None:
    """spot_as_of is set only where the spot price is not of the row's as_of (one of the two prices was kept)."""
    row["spot_as_of"] = when if when != row.get("as_of") and _number(row.get(SPOT)) is not None else None


def _on_demand_problem(row: Mapping[str, Any], before: Offer | None, reference: Mapping[str, float]) -> str | None:
    price, gpus = _number(row.get(ON_DEMAND)), _number(row.get("gpu_count")) or 0.0
    if price is None:
        return None
    problem = price_problem(ON_DEMAND, price, gpus)
    if problem is not None:
        return problem.removeprefix(f"{ON_DEMAND} ")
    previous = None if before is None else _number(before.get(ON_DEMAND))
    if previous:
        ratio = price / previous
        if _outside(ratio, HISTORY_BAND):
            return f"{ratio:.3g}x the offering's previous price {previous:g} of {before['as_of'] if before else ''}"
    median = reference.get(str(row.get("gpu")))
    if median and gpus > 0:
        ratio = price / gpus / median
        if _outside(ratio, CROSS_CLOUD_BAND):
            return (
                f"{price / gpus:.4g} per GPU-hour is {ratio:.3g}x the other clouds' median {median:.4g} "
                f"for {row.get('gpu')}"
            )
    return None


def _spot_problem(row: Mapping[str, Any], before: Offer | None, reference: Mapping[str, float]) -> str | None:
    spot, gpus = _number(row.get(SPOT)), _number(row.get("gpu_count")) or 0.0
    if spot is None:
        return None
    problem = price_problem(SPOT, spot, gpus)
    if problem is not None:
        return problem.removeprefix(f"{SPOT} ")
    on_demand = _number(row.get(ON_DEMAND))
    if on_demand:
        share = spot / on_demand
        if _outside(share, SPOT_SHARE_BAND):
            return f"{share:.3g}x the on-demand price {on_demand:g}"
        return None
    previous = None if before is None else _number(before.get(SPOT))
    if previous and _outside(spot / previous, SPOT_HISTORY_BAND):
        return f"{spot / previous:.3g}x the offering's previous spot price {previous:g}"
    median = reference.get(str(row.get("gpu")))
    if (
        median
        and gpus > 0
        and _outside(spot / gpus / median, (CROSS_CLOUD_BAND[0] * SPOT_FLOOR_SHARE, CROSS_CLOUD_BAND[1]))
    ):
        return f"{spot / gpus:.4g} per GPU-hour against the other clouds' on-demand median {median:.4g}"
    return None


def _key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(row.get("instance_type") or ""), str(row.get("region") or ""), str(row.get("zone") or ""))


def hold_back_prices(
    rows: Sequence[RawOffer], previous: Sequence[Offer], reference: Mapping[str, float]
) -> tuple[list[RawOffer], list[HeldPrice], list[Rejected]]:
    """The rows with every implausible fresh price held back, the held-back prices, and the rows that cannot stand
    without theirs (an on-demand offering with no on-demand price to keep; a spot-only one with no spot price)."""
    before = {_key(row): row for row in previous}
    # A type the catalog knew only in region "unknown" (Lambda's and DigitalOcean's bundled rows) is the same
    # offering once its region is known: its price there is the history of the fresh row.
    unplaced = {str(row["instance_type"]): row for row in previous if row.get("region") == REGION_UNKNOWN}
    out: list[RawOffer] = []
    held: list[HeldPrice] = []
    dropped: list[Rejected] = []
    for raw in rows:
        row: dict[str, Any] = dict(raw)
        old = before.get(_key(row)) or unplaced.get(str(row.get("instance_type") or ""))
        ident = (str(row.get("provider") or ""), *_key(row))
        standing = True
        for total, problem_of in ((ON_DEMAND, _on_demand_problem), (SPOT, _spot_problem)):
            reason = problem_of(row, old, reference)
            if reason is None:
                continue
            value = cast(float, _number(row[total]))
            parts = next(p for p in PRICE_PARTS if p[0] == total)
            kept_value = None if old is None else _number(old.get(total))
            fresh_spot_date = _spot_date(row)
            if kept_value is not None and old is not None:
                for column in parts:
                    row[column] = old.get(column)
                kept_as_of: str | None = str(old["as_of"]) if total == ON_DEMAND else _spot_date(old)
                if total == ON_DEMAND:  # as_of is the on-demand price's date; a fresh spot price keeps its own
                    row["as_of"] = old["as_of"]
                    _set_spot_date(row, fresh_spot_date)
                else:
                    _set_spot_date(row, _spot_date(old))
            else:
                for column in parts:
                    row[column] = None
                _set_spot_date(row, None if total == SPOT else fresh_spot_date)
                kept_as_of = None
                alone = (
                    row.get("availability") in (None, "", "on-demand")
                    if total == ON_DEMAND
                    else (row.get("availability") == "spot-only")
                )
                standing = standing and not alone
            held.append(HeldPrice(*ident, total, value, reason, kept_value, kept_as_of))
            if not standing:
                dropped.append(
                    Rejected(*ident, reason=f"{total} {value:g} held back ({reason}); no previous price to keep")
                )
                break
        if standing:
            out.append(cast(RawOffer, row))
    return out, held, dropped
