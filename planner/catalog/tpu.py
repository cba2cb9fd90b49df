"""Cloud TPU slices as catalog offerings: the slice table, per-chip prices turned into slice prices, the filter.

Google sells a TPU as a slice of an accelerator type (``v5p-128``: 64 chips in a 4x4x4 torus) and bills it per
chip-hour: a slice costs chips x the zone's chip-hour price, on demand or spot, and a job holds the whole slice.
One catalog row is one slice size in one zone (``gpu`` the generation id, ``gpu_count`` its chips, ``interconnect``
``ici``). The zone is kept, never collapsed: a slice is created in a zone, and the zones of a region differ.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from planner._data import data_dir
from planner.catalog.schema import RawOffer

if TYPE_CHECKING:
    from planner.catalog.validate import Rejected

# The link between the chips of a slice (inter-chip interconnect); slices join over the data-centre network.
TPU_INTERCONNECT = "ici"
# What the accelerator filter of every face accepts; "any" ranks TPU slices beside GPU offerings.
ACCELERATOR_KINDS = ("any", "gpu", "tpu")
TPU_FLAG = "tpu_slice"
# What rank says beside a TPU option (the flag in words): Google's billing rule, and how its spot stops are priced.
TPU_NOTE = "TPU slice: billed chips x chip-hour price for the whole slice"
TPU_SPOT_NOTE = (
    "spot reclaims the whole slice at once; no TPU reclaim data exists, so the slice is one node of the mid band "
    "(GPU VM traces): thin evidence"
)


@dataclass(frozen=True)
class Generation:
    """One TPU generation as the catalog names it: its id, the names Google's SKUs and types use, HBM per chip."""

    gpu: str
    type_prefix: str  # accelerator types are '<prefix>-<n>' (v5litepod-8, v5p-128)
    sku_names: tuple[str, ...]  # lower-case version words in Cloud Billing SKU descriptions
    hbm_gib: float  # per chip; the hardware table's figure wins where it has the generation
    # The number in a v5p type counts TensorCores (2 per chip); v5e and v6e types count chips.
    cores_per_chip: int = 1


# HBM per chip: Google's v5e/v6e page (16 and 32 GB) and v5p page (95 GiB), read 2026-11-28.
GENERATIONS: dict[str, Generation] = {
    g.gpu: g
    for g in (
        Generation("TPU-v5e", "v5litepod", ("v5e", "v5litepod", "v5lite"), 16.0),
        Generation("TPU-v5p", "v5p", ("v5p",), 95.0, cores_per_chip=2),
        Generation("TPU-v6e", "v6e", ("v6e",), 32.0),
    )
}


@dataclass(frozen=True)
class Slice:
    """One accelerator type: its generation, chips, topology and the VMs that host it (data/tpu_slices.csv)."""

    accelerator_type: str
    gpu: str
    chips: int
    topology: str
    vms: int
    vcpus: int  # all VMs of the slice
    ram_gib: float

    @property
    def generation(self) -> Generation:
        return GENERATIONS[self.gpu]


@cache
def slice_table() -> dict[str, Slice]:
    """Accelerator type -> slice, from data/tpu_slices.csv (each row cites Google's TPU page it comes from)."""
    with (data_dir() / "tpu_slices.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    table = {}
    for row in rows:
        vms = int(row["vms"])
        table[row["accelerator_type"]] = Slice(
            row["accelerator_type"],
            row["gpu"],
            int(row["chips"]),
            row["topology"],
            vms,
            vms * int(row["vcpus_per_vm"]),
            vms * float(row["ram_gib_per_vm"]),
        )
    return table


def is_tpu(gpu: object) -> bool:
    """Whether a catalog ``gpu`` id names a TPU generation."""
    return isinstance(gpu, str) and gpu in GENERATIONS


def hbm_gib(gpu: str) -> float:
    """HBM per chip: the hardware table's where it lists the generation, else this module's."""
    from planner.hardware import gpu_table

    spec = gpu_table().get(gpu)
    return spec.memory_gib if spec is not None else GENERATIONS[gpu].hbm_gib


def accelerator_mask(gpus: Iterable[object], kind: str) -> list[bool]:
    """Which of ``gpus`` the accelerator filter ``kind`` (any, gpu, tpu) keeps."""
    if kind == "any":
        return [True for _ in gpus]
    want_tpu = kind == "tpu"
    return [is_tpu(gpu) == want_tpu for gpu in gpus]


def slice_price(chip_price_usd_per_hour: float, chips: int) -> float:
    """Google's rule, stated once: a slice costs its chips x the chip-hour price (rounded to a millionth)."""
    return round(chip_price_usd_per_hour * chips, 6)


@dataclass(frozen=True)
class ZonePrice:
    """A generation's chip-hour prices in one zone, the slice sizes the source sells there, and where they came from.

    Either price may be None (not sold that way there, or the source's value was refused)."""

    gpu: str
    region: str
    zone: str
    on_demand: float | None
    spot: float | None
    sizes: tuple[str, ...]  # accelerator types sold in the zone
    source: str
    as_of: str


def slice_rows(prices: Iterable[ZonePrice]) -> list[RawOffer]:
    """One offering per slice size the source lists in each zone, priced per chip; never a zone it did not list."""
    table = slice_table()
    rows: list[RawOffer] = []
    for zone_price in prices:
        for name in zone_price.sizes:
            shape = table.get(name)
            if shape is None or shape.gpu != zone_price.gpu:
                continue
            rows.append(_row(shape, zone_price))
    return rows


def _row(shape: Slice, zone_price: ZonePrice) -> RawOffer:
    on_demand = None if zone_price.on_demand is None else slice_price(zone_price.on_demand, shape.chips)
    spot = None if zone_price.spot is None else slice_price(zone_price.spot, shape.chips)
    availability = "on-demand" if on_demand is not None else ("spot-only" if spot is not None else "reservation-only")
    return {
        "provider": "gcp",
        "instance_type": shape.accelerator_type,
        "region": zone_price.region,
        "zone": zone_price.zone,
        "gpu": shape.gpu,
        "gpu_count": float(shape.chips),
        "gpu_memory_gib": hbm_gib(shape.gpu),
        "vcpus": shape.vcpus,
        "ram_gib": shape.ram_gib,
        "interconnect": TPU_INTERCONNECT,
        # Slices join only over the data-centre network, whose share per slice the catalog does not record: a job
        # is priced on one slice.
        "network_gbps": None,
        "price_usd_per_hour": on_demand,
        "spot_price_usd_per_hour": spot,
        "host_price_usd_per_hour": None,
        "gpu_price_usd_per_hour": None,
        "host_spot_price_usd_per_hour": None,
        "gpu_spot_price_usd_per_hour": None,
        "spot_interruption": None,
        "availability": availability,
        "price_source": zone_price.source,
        "as_of": zone_price.as_of,
        "available_now": "unknown",
        "available_checked_at": None,
        "flags": TPU_FLAG,
        "spot_as_of": None,
    }


def chip_price(
    field: str, slice_price_usd_per_hour: float | None, chips: int, where: tuple[str, str, str, str]
) -> tuple[float | None, Rejected | None]:
    """A source's slice price turned into a chip-hour price, or refused field by field (an upstream placeholder such
    as SkyPilot's 700.0, zero, implausibly low): the placeholder is judged on the slice price it was filled in as,
    before any division could make it look like a real chip price."""
    from planner.catalog.validate import Rejected, price_problem

    if slice_price_usd_per_hour is None:
        return None, None
    problem = price_problem(field, slice_price_usd_per_hour, chips)
    if problem is not None:
        return None, Rejected(*where, reason=problem)
    return slice_price_usd_per_hour / chips, None


def bundled_zone_prices(
    rows: Iterable[Mapping[str, Any]], source: str, as_of: str
) -> tuple[list[ZonePrice], list[Rejected]]:
    """Zone prices from SkyPilot-shaped TPU rows (``tpu-<type>``, Region, AvailabilityZone, Price, SpotPrice,
    ListedSlices): each row prices the slice it names, and its ListedSlices are the sizes sold in that zone."""
    from planner.catalog.validate import Rejected

    table = slice_table()
    found: dict[tuple[str, str, str], ZonePrice] = {}
    refused: list[Rejected] = []
    for row in rows:
        name = str(row["AcceleratorName"]).removeprefix("tpu-")
        shape = table.get(name)
        if shape is None:
            refused.append(Rejected("gcp", name, row["Region"], row["AvailabilityZone"], "not a covered TPU slice"))
            continue
        where = ("gcp", name, str(row["Region"]), str(row["AvailabilityZone"]))
        prices: dict[str, float | None] = {}
        for column, field in (("Price", "price_usd_per_hour"), ("SpotPrice", "spot_price_usd_per_hour")):
            text = str(row.get(column) or "").strip()
            prices[field], why = chip_price(field, float(text) if text else None, shape.chips, where)
            if why is not None:
                refused.append(why)
        prefix = shape.generation.type_prefix
        sizes = tuple(f"{prefix}-{n}" for n in str(row["ListedSlices"]).split())
        key = (shape.gpu, where[2], where[3])
        if prices["price_usd_per_hour"] is None and prices["spot_price_usd_per_hour"] is None:
            refused.append(Rejected(*where, reason="no usable price: the zone is left out, not guessed"))
            continue
        # Upstream repeats some zones (v5p europe-west4-b, v6e us-central2-b) with the same values: kept once.
        found.setdefault(
            key,
            ZonePrice(
                shape.gpu,
                where[2],
                where[3],
                prices["price_usd_per_hour"],
                prices["spot_price_usd_per_hour"],
                sizes,
                source,
                as_of,
            ),
        )
    return [found[key] for key in sorted(found)], refused
