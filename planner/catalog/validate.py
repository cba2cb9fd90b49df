"""Validation where rows enter the store. Bad rows are rejected one by one, with a reason, never dropped silently."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from planner.catalog.schema import (
    AVAILABILITY,
    AVAILABLE_NOW,
    COLUMNS,
    INTERRUPTION_LABELS,
    PRICE_COLUMNS,
    PROVIDERS,
    Offer,
)
from planner.catalog.tpu import TPU_INTERCONNECT, hbm_gib, is_tpu
from planner.hardware import INTERCONNECTS, gpu_table

# Below this per-GPU-hour price a number is a parsing or unit error, not a bargain: the cheapest GPU
# offering in any public catalog (a quarter of an L4 on spot) is about $0.05/h.
MIN_PLAUSIBLE_USD_PER_GPU_HOUR = 0.01
# A cloud's reported GPU memory may differ from the datasheet (AWS reports 22888 MiB for a 24 GB A10G).
GPU_MEMORY_TOLERANCE = 0.12
# Google Cloud: the offering price must equal host + GPUs; allow for rounding of published prices.
SUM_TOLERANCE = 0.005
# An on-demand price this far under the same shape's median across regions is a commitment, reservation or
# DWS (flex-start) price taken for a list price: regional list prices of one shape differ by +-30%, while
# Google's DWS and 3-year commitment SKUs are 45-60% off list (issue 9 audit of the GCP bundle).
MIN_SHARE_OF_SHAPE_MEDIAN = 0.6
# What upstream catalogs write where they have no price: SkyPilot's Google Cloud fetcher fills 700.0 for a TPU
# slice price it cannot find (catalogs/v9/gcp/vms.csv: every v6e size in asia-east1-c, southamerica-east1-c and
# us-central2-b, and v6e spot in southamerica-west1-a). Spread over 256 chips it would pass for a real price.
UPSTREAM_PLACEHOLDER_PRICES = (700.0,)


@dataclass(frozen=True)
class Rejected:
    """A row that did not enter the store, and why."""

    provider: str
    instance_type: str
    region: str
    zone: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.region}/{self.zone}" if self.zone else self.region
        return f"{self.provider} {self.instance_type} {where}: {self.reason}"


@dataclass
class ValidationReport:
    """Accepted rows (normalised, with flags added) and rejected ones."""

    accepted: list[Offer] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _normalise(row: Mapping[str, Any]) -> dict[str, Any]:
    """Coerce types column by column; raises ValueError naming the column on a bad value."""
    out: dict[str, Any] = {}
    for column in COLUMNS:
        value = row.get(column.name)
        if isinstance(value, bool) and column.name == "available_now":
            value = "true" if value else "false"
        if _missing(value):
            if column.name in ("zone", "flags"):
                out[column.name] = ""
                continue
            if column.name == "available_now":
                out[column.name] = "unknown"  # rows of schema 1 and providers that do not report capacity
                continue
            if not column.nullable:
                raise ValueError(f"{column.name} is missing")
            out[column.name] = None
            continue
        try:
            if column.kind == "real":
                out[column.name] = float(value)  # type: ignore[arg-type]
            elif column.kind == "integer":
                number = float(value)  # type: ignore[arg-type]
                if not number.is_integer():
                    raise ValueError
                out[column.name] = int(number)
            else:
                out[column.name] = str(value)
        except (TypeError, ValueError):
            raise ValueError(f"{column.name} is not a {column.kind}: {value!r}") from None
        if column.kind == "real" and not math.isfinite(out[column.name]):
            raise ValueError(f"{column.name} is not finite: {value!r}")
    return out


def _problems(row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reasons to reject, flags to add) for one normalised row."""
    reasons: list[str] = []
    flags: list[str] = []
    specs = gpu_table()
    if row["provider"] not in PROVIDERS:
        reasons.append(f"provider {row['provider']!r} is not one of {', '.join(PROVIDERS)}")
    spec = specs.get(row["gpu"])
    tpu = is_tpu(row["gpu"])
    if spec is None and not tpu:
        reasons.append(f"gpu {row['gpu']!r} is not a canonical GPU id")
    if row["gpu_count"] <= 0:
        reasons.append(f"gpu_count must be positive, got {row['gpu_count']:g}")
    if spec is not None and abs(row["gpu_memory_gib"] - spec.memory_gib) > GPU_MEMORY_TOLERANCE * spec.memory_gib:
        reasons.append(f"gpu_memory_gib {row['gpu_memory_gib']:g} does not match {spec.id} ({spec.memory_gib:g} GiB)")
    if row["vcpus"] <= 0 or row["ram_gib"] <= 0:
        reasons.append("vcpus and ram_gib must be positive")
    if tpu and row["interconnect"] != TPU_INTERCONNECT:
        reasons.append(f"interconnect {row['interconnect']!r} of a TPU slice is not {TPU_INTERCONNECT}")
    elif tpu and abs(row["gpu_memory_gib"] - hbm_gib(row["gpu"])) > GPU_MEMORY_TOLERANCE * hbm_gib(row["gpu"]):
        reasons.append(f"gpu_memory_gib {row['gpu_memory_gib']:g} is not {row['gpu']}'s HBM per chip")
    elif not tpu and row["interconnect"] not in INTERCONNECTS:
        reasons.append(f"interconnect {row['interconnect']!r} is not one of {', '.join(INTERCONNECTS)}")
    if row["network_gbps"] is not None and row["network_gbps"] <= 0:
        reasons.append("network_gbps must be positive or missing")
    if row["availability"] not in AVAILABILITY:
        reasons.append(f"availability {row['availability']!r} is not one of {', '.join(AVAILABILITY)}")
    if row["spot_interruption"] is not None and row["spot_interruption"] not in INTERRUPTION_LABELS:
        reasons.append(f"spot_interruption {row['spot_interruption']!r} is not a Spot Advisor bucket")
    try:
        datetime.fromisoformat(row["as_of"])
    except ValueError:
        reasons.append(f"as_of {row['as_of']!r} is not an ISO 8601 timestamp")
    if row["available_now"] not in AVAILABLE_NOW:
        reasons.append(f"available_now {row['available_now']!r} is not one of {', '.join(AVAILABLE_NOW)}")
    checked = row["available_checked_at"]
    if checked is not None:
        try:
            datetime.fromisoformat(checked)
        except ValueError:
            reasons.append(f"available_checked_at {checked!r} is not an ISO 8601 timestamp")
    elif row["available_now"] in ("true", "false"):
        # A capacity answer without its time cannot be aged, so it is not taken.
        reasons.append("available_now true or false needs available_checked_at")

    for name in PRICE_COLUMNS:
        problem = price_problem(name, row[name], row["gpu_count"])
        if problem is not None:
            reasons.append(problem)
    on_demand, spot = row["price_usd_per_hour"], row["spot_price_usd_per_hour"]
    if row["spot_as_of"] is not None:
        try:
            datetime.fromisoformat(row["spot_as_of"])
        except ValueError:
            reasons.append(f"spot_as_of {row['spot_as_of']!r} is not an ISO 8601 timestamp")
        if spot is None:
            reasons.append("spot_as_of is set without a spot price")
    if row["availability"] == "on-demand" and on_demand is None:
        reasons.append("an on-demand offering needs price_usd_per_hour")
    if row["availability"] == "spot-only" and (on_demand is not None or spot is None):
        reasons.append("a spot-only offering has a spot price and no on-demand price")
    for total, host, gpu in PRICE_PARTS:
        if row[host] is None and row[gpu] is None:
            continue
        if row[total] is None:
            continue
        if row[host] is None or row[gpu] is None:
            reasons.append(f"{total} is set but only one of {host} and {gpu} is")
        elif abs(row[host] + row[gpu] - row[total]) > SUM_TOLERANCE * row[total] + 1e-6:
            reasons.append(f"{total} is not {host} + {gpu}")
    flags.extend(spot_level_flags(row))
    return reasons, flags


def price_problem(name: str, price: float | None, gpu_count: float) -> str | None:
    """Why one price column's value cannot be a price (zero or less, or implausibly low per GPU), or None."""
    if price is None:
        return None
    if price <= 0:
        return f"{name} must be positive or missing (0 is not 'free'), got {price:g}"
    if name in ("price_usd_per_hour", "spot_price_usd_per_hour") and price in UPSTREAM_PLACEHOLDER_PRICES:
        return f"{name} {price:g} is an upstream catalog's placeholder for a missing price, not a price"
    if name in ("price_usd_per_hour", "spot_price_usd_per_hour") and price / max(gpu_count, 1e-9) < (
        MIN_PLAUSIBLE_USD_PER_GPU_HOUR
    ):
        return f"{name} {price:g} is implausibly low for {gpu_count:g} GPU(s)"
    return None


# (total, host part, GPU part) of the on-demand and the spot price; Google Cloud prices the two parts apart.
PRICE_PARTS = (
    ("price_usd_per_hour", "host_price_usd_per_hour", "gpu_price_usd_per_hour"),
    ("spot_price_usd_per_hour", "host_spot_price_usd_per_hour", "gpu_spot_price_usd_per_hour"),
)


def offering_price(host: float | None, gpu: float | None) -> float | None:
    """Google Cloud's rule, stated once: an offering's price is its host VM part plus its GPU part, and missing
    when either part is (never a host-only or GPU-only price). Rounded to a millionth of a dollar."""
    if _missing(host) or _missing(gpu):
        return None
    return round(float(host) + float(gpu), 6)  # type: ignore[arg-type]


# Relative slack of the spot-versus-on-demand comparisons: published prices are rounded.
SPOT_LEVEL_TOLERANCE = 1e-4
# The floor's slack: AWS rounds spot prices to 4 decimals, so a floor price reads 9.99-10.04% of on-demand.
SPOT_FLOOR_SLACK = 0.005


# The deepest spot discount the three clouds advertise: "up to 90% off" on-demand (AWS EC2 Spot, Azure Spot VMs;
# Google Cloud "60-91%"). A spot price exactly there is a floor, not a market price: a zone where little or no spot
# capacity trades, not a price to plan a run on. The bundle has 28 AWS offerings there (B200 in one us-east-2 zone
# among them, where the region's other zones ask 21-25% of on-demand) and Azure's T4 sizes in australiacentral2.
SPOT_FLOOR_SHARE = 0.10


def spot_level_flags(row: Mapping[str, Any]) -> list[str]:
    """The one rule for spot against on-demand: ``spot_above_on_demand`` when spot is above on-demand in the
    offering price or either part (Google Cloud H100 GPU parts in some zones), ``spot_at_on_demand`` when the
    offering's spot price equals its on-demand price (a filled-in spot price, not a discount), ``spot_at_floor``
    when it is at the deepest discount the clouds give (``SPOT_FLOOR_SHARE`` of on-demand, or below)."""
    flags: list[str] = []
    on_demand_columns, spot_columns = PRICE_PARTS
    for on_demand, spot in zip(on_demand_columns, spot_columns, strict=True):
        if _missing(row.get(on_demand)) or _missing(row.get(spot)):
            continue
        low, high = float(row[on_demand]), float(row[spot])
        if high > low * (1 + SPOT_LEVEL_TOLERANCE):
            if "spot_above_on_demand" not in flags:
                flags.append("spot_above_on_demand")
        elif on_demand == "price_usd_per_hour" and abs(high - low) <= SPOT_LEVEL_TOLERANCE * low:
            flags.append("spot_at_on_demand")
        elif on_demand == "price_usd_per_hour" and high <= low * SPOT_FLOOR_SHARE * (1 + SPOT_FLOOR_SLACK):
            flags.append("spot_at_floor")
    return flags


def validate_rows(rows: Iterable[Mapping[str, Any]]) -> ValidationReport:
    """Check every row against the schema and the hardware table; duplicates of one offering are rejected."""
    report = ValidationReport()
    seen: set[tuple[str, str, str, str]] = set()
    for raw in rows:
        ident = tuple(str(raw.get(k) or "") for k in ("provider", "instance_type", "region", "zone"))
        try:
            row = _normalise(raw)
        except ValueError as exc:
            report.rejected.append(Rejected(*ident, reason=str(exc)))  # type: ignore[misc]
            continue
        reasons, flags = _problems(row)
        key = (row["provider"], row["instance_type"], row["region"], row["zone"])
        if key in seen:
            reasons.append("duplicate offering (same provider, instance type, region and zone)")
        if reasons:
            report.rejected.append(Rejected(*key, reason="; ".join(reasons)))
            continue
        seen.add(key)
        existing = [f for f in row["flags"].split(";") if f]
        row["flags"] = ";".join(dict.fromkeys(existing + flags))
        report.accepted.append(cast(Offer, row))  # every column normalised and checked above
    return report


def price_outliers(rows: Iterable[Mapping[str, Any]]) -> list[Rejected]:
    """Rows whose prices cannot both be list prices: a spot price above on-demand, or an on-demand price under
    ``MIN_SHARE_OF_SHAPE_MEDIAN`` of the same instance type's median across regions."""
    rows = list(rows)
    by_shape: dict[str, dict[str, float]] = defaultdict(dict)
    for row in rows:
        if not _missing(row.get("price_usd_per_hour")):
            by_shape[str(row["instance_type"])].setdefault(str(row["region"]), float(row["price_usd_per_hour"]))
    medians = {shape: statistics.median(prices.values()) for shape, prices in by_shape.items()}
    found = []
    for row in rows:
        provider, shape, region, zone = (str(row.get(k) or "") for k in ("provider", "instance_type", "region", "zone"))
        if _missing(row.get("price_usd_per_hour")):
            continue
        on_demand = float(row["price_usd_per_hour"])
        spot = None if _missing(row.get("spot_price_usd_per_hour")) else float(row["spot_price_usd_per_hour"])
        if spot is not None and "spot_above_on_demand" in spot_level_flags(
            {"price_usd_per_hour": on_demand, "spot_price_usd_per_hour": spot}
        ):
            found.append(
                Rejected(provider, shape, region, zone, f"spot price {spot:g} is above on-demand {on_demand:g}")
            )
        median = medians[shape]
        if on_demand < MIN_SHARE_OF_SHAPE_MEDIAN * median:
            reason = (
                f"on-demand price {on_demand:g} is under {MIN_SHARE_OF_SHAPE_MEDIAN:.0%} of the shape's median "
                f"{median:g} across regions (a commitment, reservation or DWS price?)"
            )
            found.append(Rejected(provider, shape, region, zone, reason))
    return found
