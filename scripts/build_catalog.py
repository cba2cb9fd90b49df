"""Build the bundled offering catalog (``data/catalog/``) from the reference price snapshots.

Reads the reference CSVs (SkyPilot catalog snapshots and the AWS Spot Advisor feed; see their SOURCES.md) and
the second sources in ``data/catalog/sources/`` (Google Cloud list prices, AWS all-region rows, Azure sizes),
maps them to the project's schema, resolves every GPU through ``planner.hardware.lookup``, adds the family
facts and applies the corrections table, validates, refuses prices that cannot be list prices,
and writes one CSV per provider plus ``manifest.json``. Every row keeps its own source and date. The output
is deterministic: rerunning on the same inputs gives identical files.

    .venv/bin/python scripts/build_catalog.py [--reference ../shared/reference/catalog] [--out data/catalog]
        [--azure-dump pages.json --azure-as-of 2026-11-23T00:00:00+00:00]
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.catalog.corrections import apply_corrections  # noqa: E402
from planner.catalog.families import family_facts  # noqa: E402
from planner.catalog.schema import BUNDLE_COLUMN_NAMES, PROVIDERS, SCHEMA_VERSION, RawOffer  # noqa: E402
from planner.catalog.tpu import bundled_zone_prices, slice_rows  # noqa: E402
from planner.catalog.validate import Rejected, offering_price, price_outliers, validate_rows  # noqa: E402
from planner.errors import UnknownGpuError  # noqa: E402
from planner.hardware import lookup  # noqa: E402

MIB_PER_GIB = 1024.0
SOURCES = REPO / "data" / "catalog" / "sources"
# Google Cloud list prices from a second source, in order of preference (data/catalog/README.md):
# whole-VM prices summed from the OnDemand/Spot SKUs, then single SKUs recorded by hand with their source.
GCP_LIST_PRICE_FILES = ("gcp_list_prices.csv", "gcp_sku_prices.csv")
PRICE_PART_COLUMNS = (
    "host_price_usd_per_hour",
    "gpu_price_usd_per_hour",
    "host_spot_price_usd_per_hour",
    "gpu_spot_price_usd_per_hour",
)


class BuildError(Exception):
    """The reference data would produce a bundle with prices a buyer cannot trust; each row is named."""


@dataclass(frozen=True)
class Upstream:
    """Where one provider's reference prices come from, and when they were taken."""

    files: tuple[str, ...]
    origin: str  # upstream repository, path and commit, for the manifest
    price_source: str  # stored on every row
    as_of: str  # ISO 8601 UTC


# The reference commit dates are unknown (SOURCES.md). Lower bounds, documented in data/catalog/README.md:
# the v9 catalog schema was created on 2026-07-09 (skypilot-org/skypilot-catalog#185), so its prices are no
# older; v6 was copied to v7 on 2025-04-28 (skypilot-catalog#116) and the v6 Azure file has not changed since.
AZURE_ALL_REGIONS_FILE = "azure_gpu_vms_all_regions.csv"
UPSTREAMS: dict[str, Upstream] = {
    "aws": Upstream(
        files=("aws_gpu_vms.csv", "aws_gpu_vms_extra.csv", "aws_spot_advisor_gpu.csv"),
        origin="skypilot-catalog catalogs/v9/aws/vms.csv @2c3d7ea7; spotinfo spot-advisor-data.json @5eedf20a",
        price_source=(
            "skypilot-catalog v9 aws/vms.csv @2c3d7ea7 (AWS price list + DescribeSpotPriceHistory; "
            "as_of approximate); interruption: AWS Spot Advisor 2025-06-28"
        ),
        as_of="2026-07-09T00:00:00+00:00",
    ),
    "gcp": Upstream(
        files=("gcp_gpu_vms.csv", "gcp_n1_host_rows.csv", "gcp_n1_gpu_attach_limits.csv"),
        # Most rows are priced from the list-price table (Cyclenerd pricing.yml @fd66b26f, 2026-07-30) and a few from
        # single SKUs (sources/gcp_sku_prices.csv); the origin names all three, as each row's price_source does.
        origin=(
            "skypilot-catalog catalogs/v9/gcp/vms.csv @2c3d7ea7; Cyclenerd google-cloud-pricing-cost-calculator "
            "pricing.yml @fd66b26f (list prices); sources/gcp_sku_prices.csv (A4 SKUs); sources/gcp_tpu_prices.csv "
            "(TPU rows of the same skypilot-catalog file)"
        ),
        price_source="skypilot-catalog v9 gcp/vms.csv @2c3d7ea7 (Cloud Billing SKUs; as_of approximate)",
        as_of="2026-07-09T00:00:00+00:00",
    ),
    # Every region, from data/catalog/sources/azure_gpu_vms_all_regions.csv (scripts/import_azure_catalog.py);
    # the date is that of the upstream commit, which rewrote the file from the API that day.
    "azure": Upstream(
        files=(AZURE_ALL_REGIONS_FILE,),
        origin=(
            "anycloud-sh/catalog azure/vms.csv @62ff0a98 (2026-05-20); Azure Retail Prices API items "
            "(andy-diericks/azure-pricing-radar @cf741f25, 2026-08-22) for 59 EU rows"
        ),
        price_source=(
            "anycloud-sh/catalog azure/vms.csv @62ff0a98 (SkyPilot-format copy of the Azure Retail Prices API, "
            "Linux pay-as-you-go and Spot meters)"
        ),
        as_of="2026-05-20T04:50:10+00:00",
    ),
}

# SkyPilot's GPU names in the GCP reference -> Google Cloud accelerator types (instance_families.csv).
GCP_ACCELERATOR_TYPES = {
    "T4": "nvidia-tesla-t4",
    "V100": "nvidia-tesla-v100",
    "P100": "nvidia-tesla-p100",
    "P4": "nvidia-tesla-p4",
    "L4": "nvidia-l4",
    "A100": "nvidia-tesla-a100",
    "A100-80GB": "nvidia-a100-80gb",
    "H100": "nvidia-h100-80gb",
    "H100-MEGA": "nvidia-h100-mega-80gb",
    "H200": "nvidia-h200-141gb",
    "B200": "nvidia-b200",
}
# N1 hosts with attachable GPUs: only the GPUs of the covered families (T4, V100) are paired.
N1_GPUS = ("T4", "V100")
SPOT_ADVISOR_OS = "Linux"


@dataclass
class BuildResult:
    """Rows per provider and everything that was left out, with reasons."""

    rows: dict[str, list[dict[str, Any]]]
    left_out: list[Rejected]
    notes: list[str]
    upstreams: dict[str, Upstream] | None = None  # where each provider's prices came from in this build


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _price(text: str) -> float | None:
    return float(text) if text.strip() else None


def _base_row(
    provider: str, instance_type: str, region: str, zone: str, upstream: Upstream | None = None
) -> dict[str, Any]:
    upstream = upstream or UPSTREAMS[provider]
    return {
        "provider": provider,
        "instance_type": instance_type,
        "region": region,
        "zone": zone,
        "availability": "on-demand",
        "price_source": upstream.price_source,
        "as_of": upstream.as_of,
        "flags": "",
    }


# -- AWS ------------------------------------------------------------------------------------------------
# g4dn, g5g and g6 in every region the same upstream snapshot lists (the reference copied 7 regions only):
# rows read from catalogs/v9/aws/vms.csv @2c3d7ea7 through the public code index and checked against the
# reference's own copy of the 7 regions (311 rows, all equal) (data/catalog/README.md).
AWS_ALL_REGIONS_FILE = "aws_gpu_vms_all_regions.csv"


def _aws_all_region_rows(folder: Path, advisor: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    rows = []
    for ref in _read_csv(folder / AWS_ALL_REGIONS_FILE):
        row = _base_row("aws", ref["instance_type"], ref["region"], ref["zone_id"])
        row.update(
            gpu=ref["gpu"],
            gpu_count=float(ref["gpu_count"]),
            gpu_memory_gib=float(ref["gpu_memory_mib"]) / MIB_PER_GIB,
            vcpus=int(ref["vcpus"]),
            ram_gib=float(ref["ram_gib"]),
            price_usd_per_hour=_price(ref["price_usd_per_hour"]),
            spot_price_usd_per_hour=_price(ref["spot_price_usd_per_hour"]),
            spot_interruption=advisor.get((ref["region"], ref["instance_type"])),
        )
        rows.append(row)
    return rows


def _aws_rows(reference: Path) -> list[dict[str, Any]]:
    """One row per instance type x AZ ID (collapsed per region later where AZs agree)."""
    advisor = {
        (r["Region"], r["InstanceType"]): r["InterruptionFrequencyLabel"]
        for r in _read_csv(reference / "aws_spot_advisor_gpu.csv")
        if r["OS"] == SPOT_ADVISOR_OS
    }
    rows = []
    for name in ("aws_gpu_vms.csv", "aws_gpu_vms_extra.csv"):
        for ref in _read_csv(reference / name):
            # GpuInfo is DescribeInstanceTypes' dict as a Python repr (SOURCES.md), not JSON.
            gpu = ast.literal_eval(ref["GpuInfo"])["Gpus"][0]
            row = _base_row("aws", ref["InstanceType"], ref["Region"], ref["AvailabilityZone"])
            row.update(
                gpu=gpu["Name"],
                gpu_count=float(gpu["Count"]),
                gpu_memory_gib=gpu["MemoryInfo"]["SizeInMiB"] / MIB_PER_GIB,
                vcpus=int(float(ref["vCPUs"])),
                ram_gib=float(ref["MemoryGiB"]),
                price_usd_per_hour=_price(ref["Price"]),
                spot_price_usd_per_hour=_price(ref["SpotPrice"]),
                spot_interruption=advisor.get((ref["Region"], ref["InstanceType"])),
            )
            rows.append(row)
    extra = _aws_all_region_rows(SOURCES, advisor)
    covered = {row["instance_type"] for row in extra}
    # The all-region rows replace the 7-region copy of the same types (identical where both have a row).
    return [row for row in rows if row["instance_type"] not in covered] + extra


# -- Google Cloud ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _GcpGpuPrice:
    name: str  # SkyPilot's name, resolved later
    memory_gib: float
    price: float | None
    spot: float | None


def _gcp_row(host: dict[str, str], instance_type: str, gpu: _GcpGpuPrice | None, count: float) -> dict[str, Any]:
    row = _base_row("gcp", instance_type, host["Region"], host["AvailabilityZone"])
    host_price, host_spot = _price(host["Price"]), _price(host["SpotPrice"])
    gpu_price = gpu.price if gpu else None
    gpu_spot = gpu.spot if gpu else None
    row.update(
        gpu=gpu.name if gpu else "",
        gpu_count=count,
        gpu_memory_gib=gpu.memory_gib if gpu else None,
        vcpus=int(float(host["vCPUs"])),
        ram_gib=float(host["MemoryGiB"]),
        host_price_usd_per_hour=host_price,
        gpu_price_usd_per_hour=gpu_price,
        host_spot_price_usd_per_hour=host_spot,
        gpu_spot_price_usd_per_hour=gpu_spot,
        # The offering price is the sum of both parts or missing; corrections re-derive it after fixes.
        price_usd_per_hour=offering_price(host_price, gpu_price),
        spot_price_usd_per_hour=offering_price(host_spot, gpu_spot),
    )
    return row


def _gcp_rows(
    reference: Path, left_out: list[Rejected], list_prices: dict[tuple[str, str], ListPrice]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Host VM + the GPUs of the shape in the same zone; N1 hosts x attachable T4/V100.

    A shape without GPU price rows upstream (G4) is kept where the list-price table prices it.
    """
    vms = _read_csv(reference / "gcp_gpu_vms.csv")
    gpu_prices: dict[tuple[str, float, str], _GcpGpuPrice] = {}
    for ref in vms:
        if ref["InstanceType"]:
            continue
        memory = ast.literal_eval(ref["GpuInfo"])["Gpus"][0]["MemoryInfo"]["SizeInMiB"] / MIB_PER_GIB
        accelerator = GCP_ACCELERATOR_TYPES[ref["AcceleratorName"]]
        key = (accelerator, float(ref["AcceleratorCount"]), ref["AvailabilityZone"])
        gpu_prices[key] = _GcpGpuPrice(ref["AcceleratorName"], memory, _price(ref["Price"]), _price(ref["SpotPrice"]))
    rows: list[dict[str, Any]] = []
    used: set[tuple[str, float, str]] = set()
    for host in vms:
        if not host["InstanceType"]:
            continue
        facts = family_facts("gcp", host["InstanceType"])
        if facts is None or facts.accelerator is None or facts.gpu_count is None:
            # Not a covered shape: the row still goes through the corrections, which say why it is left out.
            rows.append(_gcp_row(host, host["InstanceType"], None, 0.0))
            continue
        key = (facts.accelerator, facts.gpu_count, host["AvailabilityZone"])
        gpu = gpu_prices.get(key)
        if gpu is None and (host["InstanceType"], host["Region"]) in list_prices:
            gpu = _GcpGpuPrice(facts.gpu, lookup(facts.gpu).spec.memory_gib, None, None)
        if gpu is None:
            left_out.append(
                Rejected("gcp", host["InstanceType"], host["Region"], host["AvailabilityZone"], "no GPU price in zone")
            )
            continue
        used.add(key)
        rows.append(_gcp_row(host, host["InstanceType"], gpu, facts.gpu_count))

    hosts = _read_csv(reference / "gcp_n1_host_rows.csv")
    shape = {h["InstanceType"]: (float(h["vCPUs"]), float(h["MemoryGiB"])) for h in hosts}
    for limit in _read_csv(reference / "gcp_n1_gpu_attach_limits.csv"):
        if limit["AcceleratorName"] not in N1_GPUS:
            continue
        count = float(limit["AcceleratorCount"])
        fitting = sorted((t for t in limit["FittingN1Types"].split() if t in shape), key=lambda t: shape[t])
        # Keep the bundle small: the smallest and the largest host that may carry this many GPUs.
        for host_type in dict.fromkeys((fitting[0], fitting[-1])):
            for host in hosts:
                if host["InstanceType"] != host_type:
                    continue
                key = (GCP_ACCELERATOR_TYPES[limit["AcceleratorName"]], count, host["AvailabilityZone"])
                gpu = gpu_prices.get(key)
                if gpu is None:
                    continue
                used.add(key)
                instance_type = f"{host_type}+{count:g}x{limit['AcceleratorName']}"
                rows.append(_gcp_row(host, instance_type, gpu, count))
    unpaired = Counter(gpu_prices[k].name for k in gpu_prices if k not in used)
    notes = [
        f"gcp: {n} {name} GPU price rows not paired with a covered host shape" for name, n in sorted(unpaired.items())
    ]
    return rows, notes


@dataclass(frozen=True)
class ListPrice:
    """One whole-VM list price from a second source, with its source and date."""

    price: float
    spot: float | None
    source: str
    source_date: str


def gcp_list_prices(folder: Path = SOURCES) -> dict[tuple[str, str], ListPrice]:
    """(machine type, region) -> list price; the first file that has a pair wins."""
    prices: dict[tuple[str, str], ListPrice] = {}
    for name in GCP_LIST_PRICE_FILES:
        for ref in _read_csv(folder / name):
            key = (ref["instance_type"], ref["region"])
            if key not in prices:
                price = _price(ref["price_usd_per_hour"])
                if price is None:
                    raise ValueError(f"{name}: {key} has no price_usd_per_hour")
                spot = _price(ref["spot_price_usd_per_hour"])
                prices[key] = ListPrice(price, spot, ref["source"], ref["source_date"])
    return prices


def _apply_list_prices(rows: list[dict[str, Any]], prices: dict[tuple[str, str], ListPrice]) -> None:
    """Whole-VM list prices replace the reference's SKU sums where a second source has the shape and region.

    The reference took DWS, reservation or commitment SKUs for on-demand in many A100/H100 regions (issue 9);
    the second source sums the OnDemand SKUs only. Its prices are whole-VM prices, so the host/GPU split is
    not kept on these rows. A list table without a spot price keeps the reference's spot parts.
    """
    for row in rows:
        listed = prices.get((row["instance_type"], row["region"]))
        if listed is None:
            continue
        row.update(
            price_usd_per_hour=listed.price,
            host_price_usd_per_hour=None,
            gpu_price_usd_per_hour=None,
            price_source=listed.source,
            as_of=f"{listed.source_date}T00:00:00+00:00",
        )
        if listed.spot is not None:
            row.update(spot_price_usd_per_hour=listed.spot, host_spot_price_usd_per_hour=None)
            row["gpu_spot_price_usd_per_hour"] = None
        else:
            row["price_source"] = f"{listed.source}; spot: {UPSTREAMS['gcp'].price_source}"
        row["flags"] = "list_price"


# -- Azure ----------------------------------------------------------------------------------------------
AZURE_RETAIL_ITEM = "Azure Retail Prices API item"


def azure_retail_items(folder: Path = SOURCES) -> dict[tuple[str, str], dict[str, dict[str, str]]]:
    """The Azure Retail Prices API items recorded in ``price_spot_checks.csv``, per (size, region) and column."""
    items: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for ref in _read_csv(folder / "price_spot_checks.csv"):
        if ref["provider"] == "azure" and ref["source"].startswith(AZURE_RETAIL_ITEM):
            items.setdefault((ref["instance_type"], ref["region"]), {})[ref["column"]] = ref
    return items


def _newer_retail_prices(row: dict[str, Any], items: dict[str, dict[str, str]]) -> None:
    """Price ``row`` from its size and region's Retail Prices API items where they are newer than the all-region
    table and give both prices: Azure moves Spot prices month to month (the items of 2026-08-22 differ from
    anycloud's 2026-05-20 copy in 24 of 56 Spot prices, by up to 2x; every pay-as-you-go price agrees), so the newer
    first-hand reading is the price, and the older copy its second source (bench/crosscheck.py)."""
    od, spot = items.get("price_usd_per_hour"), items.get("spot_price_usd_per_hour")
    if od is None or spot is None or od["source_date"] != spot["source_date"]:
        return
    as_of = f"{od['source_date']}T00:00:00+00:00"
    if as_of <= row["as_of"]:
        return
    where = od["source"].split(", as saved in ", 1)[-1]
    row.update(
        price_usd_per_hour=_price(od["usd_per_hour"]),
        spot_price_usd_per_hour=_price(spot["usd_per_hour"]),
        price_source=f"Azure Retail Prices API items (Linux pay-as-you-go and Spot meters), as saved in {where}",
        as_of=as_of,
    )


def _azure_rows(folder: Path) -> list[dict[str, Any]]:
    """One row per size x region. Azure sells one GPU per size family, so the size names the GPU.

    Prices come from ``folder``'s all-region table, or its newer Retail Prices API items where both prices were
    recorded (``_newer_retail_prices``); GPU count, vCPUs and memory from ``azure_sizes.csv``.
    """
    sizes = {ref["size"]: ref for ref in _read_csv(folder / "azure_sizes.csv")}
    items = azure_retail_items(folder)
    rows = []
    for ref in _read_csv(folder / AZURE_ALL_REGIONS_FILE):
        spec = sizes[ref["size"]]
        row = _base_row("azure", ref["size"], ref["region"], "")
        row.update(
            # Azure's bare names ('V100', 'H100') hide the variant (NCv3 is PCIe, NC H100 v5 is NVL); the
            # size name resolves exactly through data/gpu_aliases.csv.
            gpu=ref["size"],
            gpu_count=float(spec["gpu_count"]),
            gpu_memory_gib=None,
            vcpus=int(spec["vcpus"]),
            ram_gib=float(spec["ram_gib"]),
            price_usd_per_hour=_price(ref["price_usd_per_hour"]),
            spot_price_usd_per_hour=_price(ref["spot_price_usd_per_hour"]),
        )
        _newer_retail_prices(row, items.get((ref["size"], ref["region"]), {}))
        rows.append(row)
    return rows


def azure_dump_upstream(dump: Path, as_of: str) -> Upstream:
    """The Azure upstream of a build from a saved Retail Prices API dump (``--azure-dump``)."""
    digest = hashlib.sha256(dump.read_bytes()).hexdigest()[:12]
    return Upstream(
        files=(dump.name,),
        origin=f"Azure Retail Prices API dump {dump.name} sha256:{digest}",
        price_source=f"Azure Retail Prices API (saved dump {digest}, Linux pay-as-you-go and Spot meters)",
        as_of=as_of,
    )


def azure_rows_from_dump(dump: Path, upstream: Upstream) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """One row per GPU size and region priced in a saved Retail Prices API dump (all regions at once).

    The dump is what ``GET https://prices.azure.com/api/retail/prices?$filter=serviceName eq 'Virtual
    Machines' and priceType eq 'Consumption'`` returns: a JSON list of pages (each with ``Items``), or one
    page. Sizes, GPU counts, vCPUs and memory come from ``data/catalog/sources/azure_sizes.csv``.
    """
    from planner.providers.azure import price_table

    pages = json.loads(dump.read_text(encoding="utf-8"))
    items = [item for page in (pages if isinstance(pages, list) else [pages]) for item in page["Items"]]
    sizes = {ref["size"]: ref for ref in _read_csv(SOURCES / "azure_sizes.csv")}
    table, malformed = price_table(items, sizes)
    rows, bad = [], []
    for (size, region), why in sorted(malformed.items()):
        bad.append(Rejected("azure", size, region, "", why))
    for (size, region), prices in sorted(table.items()):
        if (size, region) in malformed:
            continue
        spec = sizes[size]
        row = _base_row("azure", size, region, "", upstream)
        row.update(
            gpu=size,  # the size name resolves to the GPU variant through data/gpu_aliases.csv
            gpu_count=float(spec["gpu_count"]),
            gpu_memory_gib=None,
            vcpus=int(spec["vcpus"]),
            ram_gib=float(spec["ram_gib"]),
            price_usd_per_hour=prices.get("on_demand"),
            spot_price_usd_per_hour=prices.get("spot"),
        )
        rows.append(row)
    return rows, bad


# -- Cloud TPU -------------------------------------------------------------------------------------
# SkyPilot's TPU rows of the same v9 gcp/vms.csv, one per generation and zone: the largest slice it lists there (the
# most decimals per chip), copied verbatim with the sizes it lists in that zone (data/catalog/README.md).
TPU_FILE = "gcp_tpu_prices.csv"
TPU_PRICE_SOURCE = (
    "skypilot-catalog v9 gcp/vms.csv @2c3d7ea7 TPU rows (Cloud Billing chip-hour SKUs; as_of approximate)"
)


def _tpu_rows(folder: Path, left_out: list[Rejected]) -> list[dict[str, Any]]:
    """Every TPU slice size in every zone the source lists it, priced per chip; refused upstream prices named."""
    prices, refused = bundled_zone_prices(_read_csv(folder / TPU_FILE), TPU_PRICE_SOURCE, UPSTREAMS["gcp"].as_of)
    left_out.extend(refused)
    return [dict(row) for row in slice_rows(prices)]


# -- common steps ---------------------------------------------------------------------------------------
def _add_family_facts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Interconnect, network and availability from data/instance_families.csv."""
    kept = []
    for row in rows:
        facts = family_facts(row["provider"], row["instance_type"])
        if facts is None:
            kept.append(row)  # the corrections table names the reason; else it is rejected below
            continue
        row.update(interconnect=facts.interconnect, network_gbps=facts.network_gbps)
        if facts.availability:
            row["availability"] = facts.availability
        if facts.availability in ("spot-only", "reservation-only"):
            # The cloud does not sell the shape on demand: a price computed from on-demand SKUs is not offered.
            for column in ("price_usd_per_hour", "host_price_usd_per_hour", "gpu_price_usd_per_hour"):
                row[column] = None
            row["flags"] = ";".join(f for f in (row.get("flags") or "", "not_sold_on_demand") if f)
        kept.append(row)
    return kept


def _resolve(rows: list[dict[str, Any]], left_out: list[Rejected]) -> list[dict[str, Any]]:
    """Canonical GPU for every row; the family's documented GPU and count must agree with it."""
    kept = []
    for row in rows:
        where = (row["provider"], row["instance_type"], row["region"], row["zone"])
        facts = family_facts(row["provider"], row["instance_type"])
        if facts is None:
            left_out.append(Rejected(*where, reason="instance type is in no covered family"))
            continue
        try:
            spec = lookup(str(row["gpu"]), row.get("gpu_memory_gib")).spec
        except UnknownGpuError as exc:
            left_out.append(Rejected(*where, reason=str(exc)))
            continue
        if spec.id != facts.gpu:
            left_out.append(Rejected(*where, reason=f"GPU {spec.id} disagrees with the family's {facts.gpu}"))
            continue
        if facts.gpu_count is not None and row.get("gpu_count") != facts.gpu_count:
            left_out.append(
                Rejected(*where, reason=f"GPU count {row.get('gpu_count')} is not the family's {facts.gpu_count:g}")
            )
            continue
        row["gpu"] = spec.id
        # One unit everywhere: the hardware table's GiB per GPU, not each cloud's reading of it (AWS reports
        # 22888 MiB for an L4, Google 24 GB): the same GPU shows the same memory on every cloud.
        row["gpu_memory_gib"] = spec.memory_gib
        kept.append(row)
    return kept


def _collapse_zones(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One region-wide row (zone '') where every zone of the region has the same values."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["provider"], row["instance_type"], row["region"])].append(row)
    out = []
    for members in groups.values():
        values = {tuple((k, v) for k, v in sorted(m.items()) if k != "zone") for m in members}
        if len(values) == 1:
            out.append({**members[0], "zone": ""})
        else:
            out.extend(members)
    return out


def _sort_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row["instance_type"], row["region"], row["zone"])


def build(reference: Path, azure_dump: Path | None = None, azure_as_of: str | None = None) -> BuildResult:
    """All providers' rows, validated and sorted, and what was left out.

    With ``azure_dump`` (and its ``azure_as_of``), Azure comes from that saved Retail Prices API dump instead of
    the reference snapshot.
    """
    left_out: list[Rejected] = []
    notes: list[str] = []
    upstreams = dict(UPSTREAMS)
    list_prices = gcp_list_prices()
    gcp_rows, gcp_notes = _gcp_rows(reference, left_out, list_prices)
    _apply_list_prices(gcp_rows, list_prices)
    notes.extend(gcp_notes)
    if azure_dump is not None:
        upstreams["azure"] = azure_dump_upstream(azure_dump, azure_as_of or "")
        azure_rows, bad = azure_rows_from_dump(azure_dump, upstreams["azure"])
        left_out.extend(bad)
    else:
        azure_rows = _azure_rows(SOURCES)
    raw = {"aws": _aws_rows(reference), "gcp": gcp_rows, "azure": azure_rows}
    out: dict[str, list[dict[str, Any]]] = {}
    for provider in UPSTREAMS:
        rows = _add_family_facts(raw[provider])
        corrected, excluded = apply_corrections(cast(list[RawOffer], rows), provider)
        rows = [dict(r) for r in corrected]
        left_out.extend(excluded)
        rows = _collapse_zones(_resolve(rows, left_out))
        if provider == "gcp":
            # Slices are zonal and carry no family facts or corrections: added as the TPU table builds them.
            rows += _tpu_rows(SOURCES, left_out)
        report = validate_rows(rows)
        left_out.extend(report.rejected)
        out[provider] = sorted((dict(r) for r in report.accepted), key=_sort_key)
    # Google Cloud's reference prices failed this (issue 9); every cloud's bundle must pass it.
    outliers = [o for provider in UPSTREAMS for o in price_outliers(out[provider])]
    if outliers:
        raise BuildError("\n".join(str(o) for o in outliers))
    return BuildResult(rows=out, left_out=left_out, notes=notes, upstreams=upstreams)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(value)


def render_csv(rows: Iterable[dict[str, Any]]) -> str:
    """The provider file: exactly the schema columns, in order."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(BUNDLE_COLUMN_NAMES)
    for row in rows:
        writer.writerow([_cell(row[name]) for name in BUNDLE_COLUMN_NAMES])
    return buffer.getvalue()


def bundled_manifest_entries() -> dict[str, Any]:
    """The manifest entries of the bundled catalog, so a builder can keep the providers it does not build."""
    path = REPO / "data" / "catalog" / "manifest.json"
    if not path.is_file():
        return {}
    entries: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["providers"]
    return entries


# What each provider's upstream sources allow, as docs/data-sources.md records it: no licence file was found for the
# catalogs these rows come from, so the bundle keeps their facts and citations only.
FACTS_ONLY = "unknown: facts only, no text copied"
LICENCES = {
    "aws": f"skypilot-catalog {FACTS_ONLY}; spotinfo {FACTS_ONLY}",
    "gcp": f"skypilot-catalog {FACTS_ONLY}; Cyclenerd pricing.yml {FACTS_ONLY}; Google SKU page {FACTS_ONLY}",
    "azure": f"anycloud-sh/catalog {FACTS_ONLY}; andy-diericks/azure-pricing-radar MIT",
    "lambda": f"skypilot-catalog {FACTS_ONLY}",
    "paperspace": f"DigitalOcean pricing page {FACTS_ONLY}",
}


def render_manifest(entries: dict[str, Any]) -> str:
    """manifest.json with ``entries`` in provider order, over the bundled entries of the other providers."""
    merged = {**bundled_manifest_entries(), **entries}
    ordered = {p: merged[p] for p in PROVIDERS if p in merged}
    # Entries no builder here makes (the commitment prices) are kept as they are.
    path = REPO / "data" / "catalog" / "manifest.json"
    kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    others = {key: value for key, value in kept.items() if key not in ("schema_version", "providers")}
    manifest = {"schema_version": SCHEMA_VERSION, "providers": ordered, **others}
    return json.dumps(manifest, indent=2, sort_keys=False) + "\n"


def render(result: BuildResult) -> dict[str, str]:
    """File name -> content of every output file (the manifest keeps the entries of the GPU clouds' builder)."""
    files: dict[str, str] = {}
    manifest: dict[str, Any] = {"providers": {}}
    for provider in UPSTREAMS:
        name = f"{provider}.csv"
        content = render_csv(result.rows[provider])
        files[name] = content
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:12]
        upstream = (result.upstreams or UPSTREAMS)[provider]
        manifest["providers"][provider] = {
            "file": name,
            "source": f"bundled {digest} ({upstream.origin})",
            # The oldest row decides: a provider is only as fresh as its stalest price.
            "as_of": min((r["as_of"] for r in result.rows[provider]), default=upstream.as_of),
            "rows": len(result.rows[provider]),
            "licence": LICENCES[provider],
        }
    files["manifest.json"] = render_manifest(manifest["providers"])
    return files


def summary(result: BuildResult) -> str:
    """Rows per provider, and every row left out, grouped by reason."""
    lines = []
    for provider in UPSTREAMS:
        rows = result.rows[provider]
        regions = len({r["region"] for r in rows})
        lines.append(f"{provider}: {len(rows)} rows, {regions} regions")
    grouped: dict[tuple[str, str], set[str]] = defaultdict(set)
    counts: Counter[tuple[str, str]] = Counter()
    for rejected in result.left_out:
        grouped[(rejected.provider, rejected.reason)].add(rejected.instance_type)
        counts[(rejected.provider, rejected.reason)] += 1
    lines.append(f"left out: {len(result.left_out)} reference rows")
    for key in sorted(grouped):
        lines.append(f"  {key[0]} x{counts[key]}: {key[1]} [{', '.join(sorted(grouped[key]))}]")
    lines.extend(result.notes)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reference",
        type=Path,
        default=REPO.parent / "shared" / "reference" / "catalog",
        help="folder with the reference CSVs (default: ../shared/reference/catalog from the repository root)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "data" / "catalog", help="output folder")
    parser.add_argument(
        "--azure-dump", type=Path, help="saved Azure Retail Prices API pages (JSON) to price Azure from, all regions"
    )
    parser.add_argument("--azure-as-of", help="when the Azure dump was taken, ISO 8601 UTC (needed with --azure-dump)")
    args = parser.parse_args(argv)
    if args.azure_dump is not None and not args.azure_as_of:
        print("error: --azure-as-of is needed with --azure-dump (when the dump was taken)", file=sys.stderr)
        return 2
    if not (args.reference / "SOURCES.md").is_file():
        print(f"error: no reference catalog in {args.reference}", file=sys.stderr)
        return 2
    try:
        result = build(args.reference, args.azure_dump, args.azure_as_of)
    except BuildError as exc:
        print(f"error: prices a buyer cannot trust; fix the source or data/corrections.csv:\n{exc}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in render(result).items():
        (args.out / name).write_text(content, encoding="utf-8")
    print(summary(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
