"""The stored catalog schema: an explicit, versioned list of columns, units last.

This is the contract between the providers (which produce rows), the store (which keeps them) and every
reader. It is deliberately separate from the in-memory ``Offer`` class: adding a column means bumping
``SCHEMA_VERSION`` and saying how old rows read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

# 2 added available_now and available_checked_at; rows stored under version 1 read as available_now
# "unknown" with no check time (the store migrates them in place, see store.py).
# 3 added spot_as_of; rows stored before it read as missing: their spot price is of their as_of.
# 4 added the commitments table (planner.catalog.commitments): each provider's current snapshot takes the
# commitment prices served before (the live CSV beside a SQLite store, else the bundled rows).
SCHEMA_VERSION = 4

PROVIDERS = ("aws", "gcp", "azure", "lambda", "paperspace")
AVAILABILITY = ("on-demand", "spot-only", "reservation-only")


def availability_allows(availability: str, *, spot: bool) -> bool:
    """The one availability rule: on-demand offerings sell both ways, spot-only ones only spot, reservation-only
    ones neither (they need a reservation or a DWS/calendar booking, which the catalog does not price)."""
    if availability == "reservation-only":
        return False
    return spot or availability != "spot-only"


def settled_availability(stated: str | None, on_demand: object, spot: object) -> str:
    """The availability an offering's prices leave (the one derivation): a stated reservation-only stands; without
    an on-demand price the offering is spot-only if it has a spot price, else reservation-only; otherwise what is
    stated, on-demand when nothing is. A price is missing when it is None, empty or NaN."""
    stated = stated or "on-demand"
    if stated == "reservation-only" or not _no_price(on_demand):
        return stated
    return "reservation-only" if _no_price(spot) else "spot-only"


def _no_price(value: object) -> bool:
    return value is None or value == "" or (isinstance(value, float) and value != value)


# AWS Local Zones ("usw2-lax1-az1", name "us-west-2-lax-1a": a metro extension of the region) and Wavelength Zones
# ("use1-wl1-bos-wlz1") carry a location segment after the region's and must be opted into first; a standard zone
# ("use1-az4", "us-east-1a") and other clouds' zones ("us-central1-a", Azure's "1") do not.
LOCAL_ZONE = re.compile(r"^[a-z]+\d+-[a-z]+\d+-|^[a-z]{2}(?:-gov)?-[a-z]+-\d+-[a-z]+\d*-")
LOCAL_ZONE_NOTE = "Local Zone (a metro extension of the region): opt the account in before launching there"


def is_local_zone(zone: object) -> bool:
    """Whether ``zone`` is an AWS Local or Wavelength Zone (ID or name), not one of the region's standard zones."""
    return isinstance(zone, str) and bool(LOCAL_ZONE.match(zone))


# AWS Spot Advisor buckets ("frequency of interruption" over the last month), in its own order.
SPOT_INTERRUPTION_BUCKETS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")
# Azure's Spot eviction-rate bands (portal and Resource Graph SpotResources), which a row may carry instead.
AZURE_EVICTION_BANDS = ("0-5%", "5-10%", "10-15%", "15-20%", "20+%")
# Every interruption label a row may carry; data/spot_bands.csv says which hazard band each one means.
INTERRUPTION_LABELS = tuple(dict.fromkeys((*SPOT_INTERRUPTION_BUCKETS, *AZURE_EVICTION_BANDS)))
# The region of an offering whose source does not say where it is sold (flag region_unknown): shown as such,
# never spread over every region the cloud runs.
REGION_UNKNOWN = "unknown"
# Whether the cloud said, at available_checked_at, that it can launch the offering right now.
AVAILABLE_NOW = ("true", "false", "unknown")


@dataclass(frozen=True)
class Column:
    """One stored column: its name, SQLite/pandas kind, whether it may be missing, and what it means."""

    name: str
    kind: str  # "text", "real" or "integer"
    nullable: bool
    doc: str


COLUMNS: tuple[Column, ...] = (
    Column("provider", "text", False, "aws, gcp, azure, lambda or paperspace"),
    Column("instance_type", "text", False, "the cloud's name for the shape, e.g. p5.48xlarge, a2-highgpu-8g"),
    Column("region", "text", False, "the cloud's region code; 'unknown' where the source does not say"),
    Column("zone", "text", False, "zone (AWS AZ ID, GCP zone) where prices differ by zone; '' if region-wide"),
    Column("gpu", "text", False, "canonical GPU id from data/gpus.csv"),
    Column("gpu_count", "real", False, "GPUs per instance; fractional for partitioned GPUs (AWS g6f)"),
    Column("gpu_memory_gib", "real", False, "memory of one GPU"),
    Column("vcpus", "integer", False, "vCPUs per instance"),
    Column("ram_gib", "real", False, "host memory per instance"),
    Column("interconnect", "text", False, "GPU-to-GPU link inside the instance: nvswitch, nvlink or pcie"),
    Column("network_gbps", "real", True, "instance network bandwidth between nodes, Gbit/s"),
    Column("price_usd_per_hour", "real", True, "on-demand price of the whole instance; missing if not sold so"),
    Column("spot_price_usd_per_hour", "real", True, "spot price of the whole instance; missing if no spot"),
    Column("host_price_usd_per_hour", "real", True, "Google Cloud: the host VM's part of the on-demand price"),
    Column("gpu_price_usd_per_hour", "real", True, "Google Cloud: the GPUs' part of the on-demand price"),
    Column("host_spot_price_usd_per_hour", "real", True, "Google Cloud: the host VM's part of the spot price"),
    Column("gpu_spot_price_usd_per_hour", "real", True, "Google Cloud: the GPUs' part of the spot price"),
    Column("spot_interruption", "text", True, "AWS Spot Advisor bucket (<5%, 5-10%, 10-15%, 15-20%, >20%)"),
    Column("availability", "text", False, "on-demand, spot-only or reservation-only"),
    Column("price_source", "text", False, "where the prices came from (API or bundled file, with version)"),
    Column("as_of", "text", False, "when the prices were taken, ISO 8601 UTC"),
    Column(
        "available_now",
        "text",
        False,
        "true/false: the cloud reported capacity to launch it at available_checked_at; unknown: not reported",
    ),
    Column("available_checked_at", "text", True, "when available_now was read from the cloud, ISO 8601 UTC"),
    Column("flags", "text", False, "';'-separated notes, e.g. spot_above_on_demand, corrected:gpu_count"),
    Column(
        "spot_as_of",
        "text",
        True,
        "when the spot price was taken, where not at as_of (a refresh held one of the two prices back and kept the "
        "previous one); missing: at as_of",
    ),
)

COLUMN_NAMES: tuple[str, ...] = tuple(column.name for column in COLUMNS)
# A bundled file's prices are each of their row's as_of; only a live refresh can hold one price back and keep
# an older one, so a bundled file carries every column but this.
BUNDLE_COLUMN_NAMES: tuple[str, ...] = tuple(name for name in COLUMN_NAMES if name != "spot_as_of")
PRICE_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.name.endswith("_usd_per_hour"))
NUMERIC_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.kind in ("real", "integer"))
# What identifies one offering across snapshots (its price history follows this key).
OFFERING_KEY: tuple[str, ...] = ("provider", "instance_type", "region", "zone")


class Offer(TypedDict):
    """One offering as providers produce it, validation normalises it and the store keeps it: exactly the stored
    columns (COLUMNS), with their Python types. The type of the seams between providers, catalog and store."""

    provider: str
    instance_type: str
    region: str
    zone: str
    gpu: str
    gpu_count: float
    gpu_memory_gib: float
    vcpus: int
    ram_gib: float
    interconnect: str
    network_gbps: float | None
    price_usd_per_hour: float | None
    spot_price_usd_per_hour: float | None
    host_price_usd_per_hour: float | None
    gpu_price_usd_per_hour: float | None
    host_spot_price_usd_per_hour: float | None
    gpu_spot_price_usd_per_hour: float | None
    spot_interruption: str | None
    availability: str
    price_source: str
    as_of: str
    available_now: str
    available_checked_at: str | None
    flags: str
    spot_as_of: str | None


class RawOffer(TypedDict):
    """An offering as an adapter builds it, before validation: the stored columns, any of them possibly missing
    or wrong. ``validate_rows`` turns these into ``Offer`` rows or rejects them with a reason."""

    provider: str | None
    instance_type: str | None
    region: str | None
    zone: str | None
    gpu: str | None
    gpu_count: float | None
    gpu_memory_gib: float | None
    vcpus: int | None
    ram_gib: float | None
    interconnect: str | None
    network_gbps: float | None
    price_usd_per_hour: float | None
    spot_price_usd_per_hour: float | None
    host_price_usd_per_hour: float | None
    gpu_price_usd_per_hour: float | None
    host_spot_price_usd_per_hour: float | None
    gpu_spot_price_usd_per_hour: float | None
    spot_interruption: str | None
    availability: str | None
    price_source: str | None
    as_of: str | None
    available_now: str | None
    available_checked_at: str | None
    flags: str | None
    spot_as_of: str | None
