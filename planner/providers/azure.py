"""Azure: VM sizes and GPU counts from Resource SKUs (with credentials), prices from the public Retail Prices API.

Prices need no credentials. Without them the adapter refreshes the prices of the GPU sizes the bundled table
knows, and says that the specs came from that table. ``requests`` and ``tenacity`` are imported lazily.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from planner._data import data_dir
from planner.catalog.schema import Offer, RawOffer
from planner.catalog.validate import Rejected
from planner.hardware import gpu_table
from planner.providers.azure_commitments import API_VERSION, commitment_rows
from planner.providers.base import (
    DEFAULT_TIMEOUT_S,
    DEFAULT_WORKERS,
    FetchResult,
    ProgressHook,
    Provider,
    add_flag,
    apply_family,
    blank_row,
    chunks,
    describe_error,
    family_facts,
    fetch_regions,
    rejected,
    require,
    resolve_gpu_name,
    settle_availability,
)
from planner.providers.http import read_capped, unresolvable_host

PRICES_URL = "https://prices.azure.com/api/retail/prices"
PRICES_URL_ENV = "GPUPLAN_AZURE_PRICES_URL"
CREDENTIALS_HINT = (
    "run `az login` (or set AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_CLIENT_SECRET) and AZURE_SUBSCRIPTION_ID"
)
# armSkuName values per OData filter: keeps the URL well under the API's length limit.
SIZES_PER_QUERY = 10
MAX_PAGES = 200  # a NextPageLink loop guard: one region's GPU sizes are a page or two


class TransientHttpError(Exception):
    """A 429 or 5xx answer: worth retrying."""


@dataclass(frozen=True)
class SizeSpec:
    """What the adapter knows about one VM size: its hardware and the regions where it is sold."""

    size: str
    gpu: str
    gpu_count: float
    vcpus: int
    ram_gib: float
    regions: frozenset[str]
    interconnect: str = ""
    network_gbps: float | None = None


def is_transient(exc: BaseException) -> bool:
    """Throttling, 5xx, timeouts and dropped connections are retried; anything else fails at once."""
    if isinstance(exc, TransientHttpError):
        return True
    requests = require("requests", "azure")
    return isinstance(exc, requests.Timeout | requests.ConnectionError)


def sizes_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, SizeSpec]:
    """The GPU sizes in catalog rows, with the regions they are listed in."""
    specs: dict[str, SizeSpec] = {}
    regions: dict[str, set[str]] = {}
    for row in rows:
        name = str(row["instance_type"])
        regions.setdefault(name, set()).add(str(row["region"]))
        network = row.get("network_gbps")
        specs[name] = SizeSpec(
            name,
            str(row["gpu"]),
            float(row["gpu_count"]),
            int(float(row["vcpus"])),
            float(row["ram_gib"]),
            frozenset(),
            str(row["interconnect"]),
            float(network) if network not in (None, "") else None,
        )
    return {name: replace(spec, regions=frozenset(regions[name])) for name, spec in specs.items()}


def bundled_sizes() -> dict[str, SizeSpec]:
    """The GPU sizes of the bundled Azure table (data/catalog/azure.csv)."""
    path = data_dir() / "catalog" / "azure.csv"
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        return sizes_of(csv.DictReader(handle))


def _capabilities(sku: Any) -> dict[str, str]:
    return {c.name: c.value for c in sku.capabilities or []}


def _restricted_regions(sku: Any) -> set[str]:
    blocked: set[str] = set()
    for restriction in sku.restrictions or []:
        if restriction.type == "Location" and restriction.restriction_info is not None:
            blocked.update(loc.lower() for loc in restriction.restriction_info.locations or [])
    return blocked


def sizes_from_skus(skus: Iterable[Any]) -> tuple[dict[str, SizeSpec], list[Rejected]]:
    """GPU VM sizes from Resource SKUs; the GPU model comes from the family table (the API gives only a count)."""
    specs: dict[str, SizeSpec] = {}
    bad: list[Rejected] = []
    for sku in skus:
        if sku.resource_type != "virtualMachines":
            continue
        caps = _capabilities(sku)
        try:
            gpus = float(caps.get("GPUs", "0"))
        except ValueError:
            gpus = 0.0
        if gpus <= 0 or sku.name in specs:
            continue
        facts = family_facts("azure", sku.name)
        if facts is None:
            bad.append(
                rejected(
                    "azure", sku.name, "*", "GPU model unknown: the size is in no family of data/instance_families.csv"
                )
            )
            continue
        gpu_id, reason = resolve_gpu_name(facts.gpu, None)
        if reason:
            bad.append(rejected("azure", sku.name, "*", reason))
            continue
        regions = {loc.lower() for loc in sku.locations or []} - _restricted_regions(sku)
        specs[sku.name] = SizeSpec(
            sku.name,
            gpu_id,
            gpus,
            int(float(caps.get("vCPUs", "0"))),
            float(caps.get("MemoryGB", "0")),
            frozenset(regions),
        )
    return specs, bad


def _is_windows(product: str) -> bool:
    """Windows meters: 'Virtual Machines NCadsA100v4 Series Windows' or the short '... Srs Win'."""
    return "Windows" in product or product.endswith(" Win")


def price_table(
    items: Iterable[Mapping[str, Any]], sizes: Iterable[str]
) -> tuple[dict[tuple[str, str], dict[str, float]], dict[tuple[str, str], str]]:
    """(armSkuName, armRegionName) -> {"on_demand": USD/h, "spot": USD/h} for Linux pay-as-you-go meters.

    Spot meters end in 'Spot'; 'Low Priority' meters are a different (batch) product and are skipped, as are
    Windows, Cloud Services, Dev/Test and reservation prices. Where a size has several meters of one kind in a
    region, the latest effectiveStartDate wins. Also returns, per size and region, why one of its meters could
    not be read (such an offering is rejected rather than half-priced).
    """
    wanted = set(sizes)
    malformed: dict[tuple[str, str], str] = {}
    latest: dict[tuple[str, str, str], tuple[str, float]] = {}
    for item in items:
        size = item.get("armSkuName") or ""
        region = str(item.get("armRegionName") or "")
        product = str(item.get("productName") or "")
        meter = f"{item.get('meterName') or ''} {item.get('skuName') or ''}"
        if size not in wanted or item.get("type") != "Consumption" or item.get("unitOfMeasure") != "1 Hour":
            continue
        if _is_windows(product) or "CloudServices" in product or "Low Priority" in meter:
            continue
        kind = "spot" if "Spot" in meter.split() else "on_demand"
        price = item.get("retailPrice", item.get("unitPrice"))
        if not isinstance(price, int | float) or isinstance(price, bool):
            malformed[(size, region)] = f"malformed retailPrice {price!r} on meter {item.get('meterName')!r}"
            continue
        if price <= 0:
            continue  # a zero meter is a placeholder, never a free VM
        stamp = str(item.get("effectiveStartDate") or "")
        key = (size, region, kind)
        if key not in latest or stamp >= latest[key][0]:
            latest[key] = (stamp, float(price))
    out: dict[tuple[str, str], dict[str, float]] = {}
    for (size, region, kind), (_, price) in latest.items():
        out.setdefault((size, region), {})[kind] = price
    return out, malformed


def parse_prices(
    items: Iterable[Mapping[str, Any]], sizes: Iterable[str]
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """``price_table`` for the items of one region: armSkuName -> {"on_demand": ..., "spot": ...}."""
    table, malformed = price_table(items, sizes)
    return {size: prices for (size, _), prices in table.items()}, {size: why for (size, _), why in malformed.items()}


class AzureProvider(Provider):
    """Azure GPU VM sizes per region, priced from the Retail Prices API."""

    name = "azure"
    extra = "azure"
    credentials_hint = f"azure: no credentials; {CREDENTIALS_HINT}"

    def __init__(
        self,
        session: Any,
        *,
        resource_skus: Callable[[], Iterable[Any]] | None = None,
        base_url: str | None = None,
        known_sizes: Callable[[], Mapping[str, SizeSpec]] | None = None,
        workers: int = DEFAULT_WORKERS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = 6,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        credentials_note: str | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._session = session
        self._resource_skus = resource_skus
        self._base_url = base_url or os.environ.get(PRICES_URL_ENV) or PRICES_URL
        self._known_sizes = known_sizes
        self._workers = workers
        self._timeout_s = timeout_s
        self._credentials_note = credentials_note
        self._now = now or (lambda: datetime.now(UTC))
        tenacity = require("tenacity", "azure")
        self._retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(attempts),
            wait=tenacity.wait_exponential_jitter(multiplier=backoff_s, jitter=backoff_s, max=max_backoff_s),
            retry=tenacity.retry_if_exception(is_transient),
            reraise=True,
        )

    @classmethod
    def from_environment(cls, **options: Any) -> AzureProvider:
        """Prices over ``requests``; Resource SKUs only when a subscription and a credential are configured."""
        requests = require("requests", "azure")
        session = requests.Session()
        subscription = os.environ.get("AZURE_SUBSCRIPTION_ID")
        if not subscription:
            note = f"azure: no AZURE_SUBSCRIPTION_ID, so VM specs came from the bundled table; {CREDENTIALS_HINT}"
            return cls(session, credentials_note=note, **options)
        identity = require("azure.identity", "azure")
        compute = require("azure.mgmt.compute", "azure")
        timeout_s = float(options.get("timeout_s", DEFAULT_TIMEOUT_S))
        client = compute.ComputeManagementClient(
            identity.DefaultAzureCredential(),
            subscription,
            retry_total=int(options.get("attempts", 6)),  # azure-core retries 429/5xx with backoff
            connection_timeout=timeout_s,
            read_timeout=timeout_s,
        )

        def resource_skus() -> Iterable[Any]:
            skus: Iterable[Any] = client.resource_skus.list()  # an ItemPaged: pages are fetched as it is read
            return skus

        return cls(session, resource_skus=resource_skus, **options)

    @property
    def source(self) -> str:
        return "Azure Retail Prices API (live)"

    # -- fetch ----------------------------------------------------------------------------------
    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        result = FetchResult()
        specs, from_bundle = self._sizes(result, previous)
        all_regions = sorted({r for spec in specs.values() for r in spec.regions})
        wanted = list(regions) if regions else all_regions
        result.regions = wanted
        as_of = self._now().isoformat(timespec="seconds")
        done, failures = fetch_regions(
            self.name,
            wanted,
            lambda region: self._region_rows(region, specs, as_of, from_bundle),
            workers=self._workers,
            progress=progress,
        )
        for region in wanted:
            if region in done:
                rows, bad, committed = done[region]
                result.rows.extend(rows)
                result.rejected.extend(bad)
                result.commitments.extend(committed)
        result.failures = failures
        return result

    def _sizes(self, result: FetchResult, previous: Sequence[Mapping[str, Any]]) -> tuple[dict[str, SizeSpec], bool]:
        if self._resource_skus is not None:
            try:
                specs, bad = sizes_from_skus(self._resource_skus())
            except Exception as exc:
                # Expired or refused credentials: prices still refresh, from the bundled specs.
                result.notes.append(
                    f"azure: Resource SKUs failed ({describe_error(exc)}), so VM specs came from the bundled table; "
                    f"{CREDENTIALS_HINT}"
                )
            else:
                result.rejected.extend(bad)
                return specs, False
        elif self._credentials_note:
            result.notes.append(self._credentials_note)
        if self._known_sizes is not None:
            return dict(self._known_sizes()), True
        # The sizes of the current catalog (seeded from the bundled table), else the bundled file itself.
        return sizes_of(previous) or bundled_sizes(), True

    def _get(self, url: str, params: Mapping[str, str] | None) -> dict[str, Any]:
        requests = require("requests", "azure")

        def attempt() -> dict[str, Any]:
            try:
                response = self._session.get(url, params=params, timeout=self._timeout_s, stream=True)
            except requests.ConnectionError as exc:
                unresolved = unresolvable_host(exc, url, self.name)  # offline: not worth 67 s of retries per region
                if unresolved is not None:
                    raise unresolved from None
                raise
            if response.status_code == 429 or response.status_code >= 500:
                raise TransientHttpError(f"HTTP {response.status_code} from the Retail Prices API")
            response.raise_for_status()
            payload: dict[str, Any] = json.loads(read_capped(response, self.name, url))
            return payload

        answer: dict[str, Any] = self._retrying(attempt)
        return answer

    def _items(self, region: str, sizes: Sequence[str]) -> Iterator[Mapping[str, Any]]:
        """Every price item of ``sizes`` in ``region``, following NextPageLink (filter values are case-sensitive)."""
        names = " or ".join(f"armSkuName eq '{size}'" for size in sizes)
        # Reservation items beside the pay-as-you-go ones, and the api-version whose items carry savingsPlan rates
        # (planner.providers.azure_commitments).
        query = (
            "serviceName eq 'Virtual Machines' and (priceType eq 'Consumption' or priceType eq 'Reservation')"
            f" and armRegionName eq '{region}' and ({names})"
        )
        url: str | None = self._base_url
        params: dict[str, str] | None = {"$filter": query, "api-version": API_VERSION}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            page = self._get(url, params)
            items = page.get("Items")
            if not isinstance(items, list):
                raise ValueError("Retail Prices API answer has no Items list")
            yield from items
            url, params = page.get("NextPageLink") or None, None
        raise RuntimeError(f"more than {MAX_PAGES} pages of prices for {region}")

    def _region_rows(
        self, region: str, specs: Mapping[str, SizeSpec], as_of: str, from_bundle: bool
    ) -> tuple[list[RawOffer], list[Rejected], list[dict[str, Any]]]:
        sizes = sorted(name for name, spec in specs.items() if region in spec.regions)
        items: list[Mapping[str, Any]] = []
        for group in chunks(sizes, SIZES_PER_QUERY):
            items.extend(self._items(region, group))
        prices, malformed = parse_prices(items, sizes)
        committed, bad = commitment_rows(items, sizes, region, self.source, as_of)
        rows: list[RawOffer] = []
        for size in sizes:
            spec = specs[size]
            price = prices.get(size, {})
            if size in malformed:
                bad.append(rejected(self.name, size, region, malformed[size]))
                continue
            if not price:
                bad.append(rejected(self.name, size, region, "no Linux pay-as-you-go price in the Retail Prices API"))
                continue
            row = blank_row(self.name)
            row.update(
                {
                    "instance_type": size,
                    "region": region,
                    "gpu": spec.gpu,
                    "gpu_count": spec.gpu_count,
                    "gpu_memory_gib": gpu_table()[spec.gpu].memory_gib if spec.gpu in gpu_table() else None,
                    "vcpus": spec.vcpus,
                    "ram_gib": spec.ram_gib,
                    "interconnect": spec.interconnect or None,
                    "network_gbps": spec.network_gbps,
                    "price_usd_per_hour": price.get("on_demand"),
                    "spot_price_usd_per_hour": price.get("spot"),
                    "price_source": self.source + (" with specs from the bundled table" if from_bundle else ""),
                    "as_of": as_of,
                }
            )
            apply_family(row, family_facts(self.name, size))
            if from_bundle:
                add_flag(row, "specs_from_bundled")
            settle_availability(row)
            rows.append(row)
        return rows, bad, committed
