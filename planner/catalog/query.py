"""Filtering and sorting the catalog: pure, vectorised functions over the offerings DataFrame."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from planner.catalog.schema import PROVIDERS
from planner.errors import InputError
from planner.hardware import gpu_table, lookup

if TYPE_CHECKING:
    import pandas as pd

# --sort keys users type -> (column, ascending)
SORT_KEYS: dict[str, tuple[str, bool]] = {
    "price": ("price_usd_per_hour", True),
    "spot-price": ("spot_price_usd_per_hour", True),
    "price-per-gpu": ("price_per_gpu_usd_per_hour", True),
    "gpus": ("gpu_count", False),
    "gpu-memory": ("gpu_memory_gib", False),
    "provider": ("provider", True),
    "region": ("region", True),
    "instance": ("instance_type", True),
    "age": ("as_of", True),
}

# Columns `offers` shows, in order (the library returns these plus every stored column).
OFFER_COLUMNS: tuple[str, ...] = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "interconnect",
    "network_gbps",
    "price_usd_per_hour",
    "spot_price_usd_per_hour",
    "price_per_gpu_usd_per_hour",
    "spot_interruption",
    "availability",
    "available_now",
    "as_of",
)


@dataclass(frozen=True)
class OfferFilter:
    """What `offers` was asked for; every field is optional."""

    gpus: Sequence[str] = ()
    min_gpus: float | None = None
    max_gpus: float | None = None
    min_gpu_memory_gib: float | None = None
    providers: Sequence[str] = ()
    regions: Sequence[str] = ()
    max_price_usd_per_hour: float | None = None
    spot: bool = False
    sort: str = "price"
    by_zone: bool = False
    # Only offerings whose cloud reported capacity at the last refresh (available_now "true"); unknown is excluded.
    available_only: bool = False
    notes: list[str] = field(default_factory=list)


def gpu_family(name: str) -> tuple[list[str], str | None]:
    """Canonical ids a GPU filter matches: a bare family name (``H100``) matches every variant of it."""
    resolved = lookup(name)
    if resolved.note is None:
        return [resolved.spec.id], None
    family = resolved.spec.id.split("-")[0]
    members = [gpu_id for gpu_id in gpu_table() if gpu_id.split("-")[0] == family]
    return members, f"'{name}' matches every {family} variant ({', '.join(members)})"


def check_positive(name: str, value: float | None, *, allow_zero: bool = False) -> None:
    """One clear line for a count or amount that must be positive."""
    if value is None:
        return
    if value < 0 or (value == 0 and not allow_zero):
        allowed = "zero or more" if allow_zero else "a positive number"
        raise InputError(f"--{name} must be {allowed}, got {value:g}")


def _check_choices(field_name: str, values: Sequence[str], known: Sequence[str]) -> list[str]:
    out = []
    for value in values:
        if value in known:
            out.append(value)
            continue
        close = difflib.get_close_matches(value, list(known), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(f"unknown {field_name} {value!r}{hint}; known: {', '.join(sorted(known)[:12])}")
    return out


def with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the columns users read but the store does not keep (price per GPU)."""
    frame = frame.copy()
    frame["price_per_gpu_usd_per_hour"] = frame["price_usd_per_hour"] / frame["gpu_count"]
    frame["spot_price_per_gpu_usd_per_hour"] = frame["spot_price_usd_per_hour"] / frame["gpu_count"]
    return frame


def collapse_zones(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (provider, instance type, region): the zone with the cheapest spot price stands for it."""
    if frame.empty:
        return frame
    order = frame.sort_values(
        ["spot_price_usd_per_hour", "price_usd_per_hour"], na_position="last", kind="stable"
    ).drop_duplicates(["provider", "instance_type", "region"], keep="first")
    return order.sort_index()


def filter_offers(frame: pd.DataFrame, spec: OfferFilter) -> tuple[pd.DataFrame, list[str]]:
    """Apply ``spec`` to the catalog; returns the matching offers and notes for the user."""
    import numpy as np

    notes: list[str] = []
    for name in ("min-gpus", "max-gpus", "min-gpu-memory", "max-price"):
        value = {
            "min-gpus": spec.min_gpus,
            "max-gpus": spec.max_gpus,
            "min-gpu-memory": spec.min_gpu_memory_gib,
            "max-price": spec.max_price_usd_per_hour,
        }[name]
        check_positive(name, value)
    if spec.min_gpus is not None and spec.max_gpus is not None and spec.min_gpus > spec.max_gpus:
        raise InputError(f"--min-gpus ({spec.min_gpus:g}) is larger than --max-gpus ({spec.max_gpus:g})")
    if spec.sort not in SORT_KEYS:
        raise InputError(f"--sort must be one of {', '.join(SORT_KEYS)}, got {spec.sort!r}")
    providers = _check_choices("provider", [p.lower() for p in spec.providers], PROVIDERS)
    known_regions = sorted(set(frame["region"].unique()))
    regions = _check_choices("region", list(spec.regions), known_regions)

    mask = np.ones(len(frame), dtype=bool)
    if spec.gpus:
        wanted: list[str] = []
        for name in spec.gpus:
            members, note = gpu_family(name)
            wanted.extend(members)
            if note:
                notes.append(note)
        mask &= frame["gpu"].isin(wanted).to_numpy()
    if providers:
        mask &= frame["provider"].isin(providers).to_numpy()
    if regions:
        mask &= frame["region"].isin(regions).to_numpy()
    if spec.min_gpus is not None:
        mask &= (frame["gpu_count"] >= spec.min_gpus).to_numpy()
    if spec.max_gpus is not None:
        mask &= (frame["gpu_count"] <= spec.max_gpus).to_numpy()
    if spec.min_gpu_memory_gib is not None:
        mask &= (frame["gpu_memory_gib"] >= spec.min_gpu_memory_gib).to_numpy()
    price_column = "spot_price_usd_per_hour" if spec.spot else "price_usd_per_hour"
    if spec.spot:
        mask &= frame["spot_price_usd_per_hour"].notna().to_numpy()
    if spec.max_price_usd_per_hour is not None:
        mask &= (frame[price_column] <= spec.max_price_usd_per_hour).to_numpy()
    if spec.available_only:
        considered = frame.loc[mask]
        known = set(considered.loc[considered["available_now"] != "unknown", "provider"])
        silent = sorted(set(considered["provider"]) - known)
        if silent:
            # Say so rather than let a whole cloud vanish without a reason.
            notes.append(f"left out {', '.join(silent)}: no capacity figure (only lambda reports capacity on refresh)")
        mask &= (frame["available_now"] == "true").to_numpy()

    result = frame.loc[mask]
    if not spec.by_zone:
        result = collapse_zones(result)
    result = with_derived(result)
    column, ascending = SORT_KEYS[spec.sort]
    if spec.spot and spec.sort == "price":
        column = price_column
    elif spec.spot and spec.sort == "price-per-gpu":
        column = "spot_price_per_gpu_usd_per_hour"
    result = result.sort_values(
        [column, "provider", "region", "instance_type", "zone"],
        ascending=[ascending, True, True, True, True],
        na_position="last",
        kind="stable",
    )
    return result.reset_index(drop=True), notes
