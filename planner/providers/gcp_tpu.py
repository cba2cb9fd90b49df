"""Cloud TPU in a live Google Cloud refresh: chip-hour prices from the Billing Catalog, slice types from the TPU API.

v5e, v5p and v6e are priced by Compute Engine SKUs (service 6F81-5844-456A, resource group ``TPU``) per chip-hour,
on demand and spot ("Preemptible"); gpuhunt's fetcher (providers/gcp.py @027ccf35) reads the same SKUs. Commitment,
reservation and DWS SKUs are skipped as for GPUs. Where a TPU is sold comes from the TPU API's accelerator types
per zone (``projects.locations.acceleratorTypes.list``, v2) or, without a project, from the catalog's own TPU rows:
a slice is never put in a zone no source listed it in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from planner.catalog.schema import RawOffer
from planner.catalog.tpu import GENERATIONS, ZonePrice, is_tpu, slice_rows, slice_table
from planner.catalog.validate import Rejected
from planner.errors import ProviderError
from planner.providers.gcp import NOT_LIST_PRICE, USAGE_TYPES, sku_price
from planner.providers.http import JsonApi

TPU_RESOURCE_GROUP = "TPU"
# "TpuV5p", "Tpu-v6e", "TPU v5e", "TpuV5litepod": the generation word after "Tpu" (case as the SKU writes it).
TPU_SKU = re.compile(r"\bTpu[- ]?(?P<version>v\d+[a-z]*)", re.IGNORECASE)
SPOT_WORDS = re.compile(r"\b(Preemptible|Spot)\b", re.IGNORECASE)
TPU_API_URL = "https://tpu.googleapis.com"
TPU_ENDPOINT_ENV = "GPUPLAN_GCP_TPU_ENDPOINT"
# The SKU's version word -> the catalog's generation id.
SKU_GENERATIONS = {name: g.gpu for g in GENERATIONS.values() for name in g.sku_names}

ChipPrices = dict[tuple[str, str, str], float]  # (generation id, region, usage) -> USD per chip-hour


def chip_prices(skus: Iterable[Any], regions: set[str] | None) -> tuple[ChipPrices, list[str]]:
    """The on-demand and spot chip-hour list price of each covered TPU generation per region, and the TPU SKUs
    skipped with why (no USD price, a unit other than hours, a generation the catalog does not cover)."""
    prices: ChipPrices = {}
    skipped: list[str] = []
    for sku in skus:
        if sku.category.resource_group != TPU_RESOURCE_GROUP or NOT_LIST_PRICE.search(sku.description):
            continue
        match = TPU_SKU.search(sku.description)
        usage = USAGE_TYPES.get(sku.category.usage_type)
        if match is None or usage is None:
            continue
        gpu = SKU_GENERATIONS.get(match["version"].lower())
        if gpu is None:
            skipped.append(f"{sku.sku_id} ({sku.description}): TPU generation not covered")
            continue
        priced = sku_price(sku)
        if priced is None or priced[1] != "h":
            skipped.append(f"{sku.sku_id} ({sku.description}): no USD price per chip-hour")
            continue
        # Some spot SKUs carry usage type OnDemand; their description says what they are (as for GPUs).
        usage = "spot" if SPOT_WORDS.search(sku.description) else usage
        for region in sku.service_regions:
            if regions is None or region in regions:
                prices[(gpu, region, usage)] = priced[0]
    return prices, skipped


SoldIn = dict[tuple[str, str, str], list[str]]  # (generation id, region, zone) -> accelerator types sold there


def tpu_zones(rows: Iterable[Mapping[str, Any]]) -> SoldIn:
    """Where the catalog's TPU rows say each slice is sold: the no-project path prices exactly those."""
    sold: SoldIn = {}
    for row in rows:
        if row.get("provider") == "gcp" and is_tpu(row.get("gpu")):
            key = (str(row["gpu"]), str(row["region"]), str(row.get("zone") or ""))
            sold.setdefault(key, []).append(str(row["instance_type"]))
    return sold


def accelerator_type_zones(types: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[SoldIn, list[str]]:
    """Where the TPU API lists each covered slice: (zone, acceleratorType resource) pairs -> sold-in map, and the
    types it lists that the slice table does not cover (named, not priced)."""
    table = slice_table()
    sold: SoldIn = {}
    unknown: list[str] = []
    for zone, entry in types:
        name = str(entry.get("type") or str(entry.get("name", "")).rsplit("/", 1)[-1])
        shape = table.get(name)
        if shape is None:
            unknown.append(f"{zone} {name}")
            continue
        topology = next((c.get("topology") for c in entry.get("acceleratorConfigs") or [] if c.get("topology")), None)
        if topology and topology != shape.topology:
            unknown.append(f"{zone} {name}: topology {topology}, not the table's {shape.topology}")
            continue
        sold.setdefault((shape.gpu, zone.rsplit("-", 1)[0], zone), []).append(name)
    return sold, unknown


def tpu_offers(
    sold_in: SoldIn, prices: ChipPrices, regions: Sequence[str], source: str, as_of: str
) -> tuple[list[RawOffer], list[Rejected]]:
    """Slice offerings of ``regions``: every type sold in a zone, priced chips x the region's chip-hour SKU; a zone
    with neither price is named, not guessed."""
    wanted = set(regions)
    zone_prices: list[ZonePrice] = []
    missing: list[Rejected] = []
    for (gpu, region, zone), types in sorted(sold_in.items()):
        if region not in wanted:
            continue
        on_demand, spot = prices.get((gpu, region, "on_demand")), prices.get((gpu, region, "spot"))
        if on_demand is None and spot is None:
            for name in sorted(set(types)):
                missing.append(Rejected("gcp", name, region, zone, f"no {region} chip-hour SKU for {gpu}"))
            continue
        zone_prices.append(ZonePrice(gpu, region, zone, on_demand, spot, tuple(sorted(set(types))), source, as_of))
    return slice_rows(zone_prices), missing


def tpu_regions(sold_in: SoldIn) -> set[str]:
    """The regions with a zone that sells a covered slice."""
    return {region for _, region, _ in sold_in}


MAX_PAGES = 100  # a nextPageToken loop guard


class TpuApi:
    """The TPU API v2 listings over the shared JSON client: the project's TPU zones, then each zone's accelerator
    types (``GET /v2/projects/{p}/locations`` and ``.../locations/{zone}/acceleratorTypes``, paged)."""

    def __init__(self, api: JsonApi, project: str, *, base_url: str | None = None) -> None:
        self._api = api
        self._project = project
        self._base_url = (base_url or TPU_API_URL).rstrip("/")

    def _pages(self, path: str, key: str) -> Iterator[Mapping[str, Any]]:
        url, token = f"{self._base_url}/v2/{path}", ""
        for _ in range(MAX_PAGES):
            page = self._api.get(url, {"pageToken": token} if token else {})
            items = page.get(key, [])
            if not isinstance(items, list):
                raise ProviderError(f"gcp: the TPU API answer has no '{key}' list")
            yield from (item for item in items if isinstance(item, Mapping))
            token = str(page.get("nextPageToken") or "")
            if not token:
                return
        raise ProviderError(f"gcp: more than {MAX_PAGES} pages of {key}")

    def zones(self) -> list[str]:
        """The zones the project can create TPUs in."""
        found = (
            str(loc.get("locationId") or "") for loc in self._pages(f"projects/{self._project}/locations", "locations")
        )
        return sorted(zone for zone in found if zone)

    def sold_in(self, regions: set[str] | None) -> tuple[SoldIn, list[str]]:
        """Each covered slice's zones in ``regions`` (all when None), and the listed types not covered."""
        pairs: list[tuple[str, Mapping[str, Any]]] = []
        for zone in self.zones():
            if regions is not None and zone.rsplit("-", 1)[0] not in regions:
                continue
            path = f"projects/{self._project}/locations/{zone}/acceleratorTypes"
            pairs.extend((zone, entry) for entry in self._pages(path, "acceleratorTypes"))
        return accelerator_type_zones(pairs)


def live_tpu_rows(
    tpu: TpuApi,
    skus: Iterable[Any],
    regions: set[str] | None,
    previous: Iterable[Mapping[str, Any]],
    source: str,
    as_of: str,
) -> tuple[list[RawOffer], list[Rejected], list[str], list[str]]:
    """Slices where the TPU API lists them, priced from the Compute Engine SKUs: rows, unpriced zones, notes, and the
    regions covered. A TPU API failure keeps the zones the catalog had (said in a note) and never fails the GPUs."""
    notes: list[str] = []
    try:
        sold, uncovered = tpu.sold_in(regions)
        notes.extend(f"gcp: TPU type not covered: {name}" for name in uncovered[:5])
    except ProviderError as exc:
        sold = {key: v for key, v in tpu_zones(previous).items() if regions is None or key[1] in regions}
        notes.append(f"gcp: TPU API failed ({exc}); TPU slices priced in the zones the catalog had")
    covered = sorted(tpu_regions(sold))
    prices, skipped = chip_prices(skus, set(covered))
    notes.extend(f"gcp: skipped SKU {s}" for s in skipped[:5])
    rows, missing = tpu_offers(sold, prices, covered, source, as_of)
    return rows, missing, notes, covered
