"""Google Cloud committed-use prices from the Cloud Billing Catalog: the Commit1Yr and Commit3Yr SKUs.

A resource-based commitment buys vCPUs, memory and GPUs of one series in one region for 1 or 3 years, billed
monthly. Its SKUs mirror the on-demand ones ("Commitment v1: A2 Cpu in Americas for 1 Year", "... A2 Ram ...",
"Commitment v1: Nvidia Tesla A100 GPU in Americas for 1 Year"); a shape's committed price is the same sum as its
on-demand one (vCPUs x core price + GiB x RAM price + GPUs x GPU price) over the commitment SKUs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from planner.catalog.validate import Rejected
from planner.providers.base import rejected
from planner.providers.gcp import VARIANTS, PriceBook, Shape, accelerator_key, sku_price

COMMIT_USAGES = {"Commit1Yr": 1, "Commit3Yr": 3}
COMMIT_HOST = re.compile(
    r"^Commitment v\d+: (?P<series>[A-Z]\d+[A-Z]?)(?: (?P<variant>Mega|Ultra|Edge|High))?"
    r" (?P<kind>Cpu|Core|Ram) (?:running )?in .+ for \d Years?$"
)
COMMIT_GPU = re.compile(
    r"^Commitment v\d+: (?:Nvidia |NVIDIA )?(?:Tesla )?(?P<name>.+?) GPU (?:running )?in .+ for \d Years?$"
)
# The host SKU word for each kind in the on-demand book (Core, Ram), so one PriceBook holds both.
KINDS = {"Cpu": "Core", "Core": "Core", "Ram": "Ram"}


def usage_of(term: int) -> str:
    """The PriceBook usage key of a term's commitment prices."""
    return f"commit-{term}y"


def commitment_book(skus: Iterable[Any], regions: set[str] | None) -> PriceBook:
    """The Commit1Yr/Commit3Yr SKUs of host cores, host memory and GPUs, per region, as a PriceBook whose usage is
    ``usage_of(term)``; a SKU without a USD price or with another unit is skipped and named."""
    book = PriceBook()
    for sku in skus:
        term = COMMIT_USAGES.get(sku.category.usage_type)
        if term is None:
            continue
        host, gpu = COMMIT_HOST.match(sku.description), COMMIT_GPU.match(sku.description)
        if host is None and gpu is None:
            continue
        priced = sku_price(sku)
        expected = "GiBy.h" if host is not None and host["kind"] == "Ram" else "h"
        if priced is None or priced[1] != expected:
            book.skipped.append(f"{sku.sku_id} ({sku.description}): no USD price per {expected}")
            continue
        for region in sku.service_regions:
            if regions is not None and region not in regions:
                continue
            if host is not None:
                key = (host["series"], host["variant"] or "", KINDS[host["kind"]], region, usage_of(term))
                book.host[key] = priced[0]
            elif gpu is not None:
                book.gpu[(accelerator_key(gpu["name"]), region, usage_of(term))] = priced[0]
    return book


def shape_commitments(
    provider: str, shape: Shape, region: str, book: PriceBook, source: str, as_of: str
) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """The 1- and 3-year committed prices of one shape in ``region`` (planner.catalog.commitments rows).

    A term is priced only when the host's core and RAM and the GPU all have its commitment SKU there: a part
    missing is said (rejected) for that term, and the other term stands."""
    family = shape.host.split("-")
    series = family[0].upper()
    variant = VARIANTS.get(family[1], "") if len(family) > 1 else ""
    rows, bad = [], []
    for term in sorted(set(COMMIT_USAGES.values())):
        core_ram = book.core_ram(series, variant, region, usage_of(term))
        per_gpu = book.gpu.get((accelerator_key(shape.accelerator), region, usage_of(term)))
        if core_ram is None and per_gpu is None:
            continue  # no commitment of this term in the region: nothing to say
        if core_ram is None or per_gpu is None:
            missing = "host cores and RAM" if core_ram is None else shape.accelerator
            why = f"commitment term_years {term}: no {region} commitment SKU for the {missing}"
            bad.append(rejected(provider, shape.instance_type, region, why))
            continue
        hourly = core_ram[0] * shape.vcpus + core_ram[1] * shape.ram_gib + per_gpu * shape.gpu_count
        rows.append(
            {
                "provider": provider,
                "instance_type": shape.instance_type,
                "region": region,
                "commitment": "cud",
                "term_years": term,
                "payment": "no-upfront",
                "upfront_usd": 0.0,
                "hourly_usd_per_hour": round(hourly, 6),
                "price_source": source,
                "as_of": as_of,
            }
        )
    return rows, bad


def commitments_of(
    provider: str,
    skus: Iterable[Any],
    shapes_by_region: Iterable[tuple[str, Iterable[Shape]]],
    source: str,
    as_of: str,
) -> tuple[list[dict[str, Any]], list[Rejected], list[str]]:
    """Every shape's committed prices in its region, what could not be priced, and notes on skipped SKUs."""
    pairs = [(region, list(shapes)) for region, shapes in shapes_by_region]
    book = commitment_book(skus, {region for region, _ in pairs})
    rows: list[dict[str, Any]] = []
    bad: list[Rejected] = []
    for region, shapes in pairs:
        for shape in shapes:
            found, why = shape_commitments(provider, shape, region, book, source, as_of)
            rows.extend(found)
            bad.extend(why)
    notes = [f"{provider}: skipped commitment SKU {s}" for s in book.skipped[:5]]
    return rows, bad, notes
