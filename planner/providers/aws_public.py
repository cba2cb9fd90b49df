"""AWS without an account: on-demand prices from the public Price List bulk files, spot prices from the feed behind
the EC2 Spot pricing page, interruption buckets from the public Spot Advisor data.

The region index names each region's EC2 offer file (hundreds of MB); it is streamed through ijson and filtered
to GPU list-price products as it is read, so it never sits in memory. The Price List writes ``products`` before
``terms``: a product is kept when it is a GPU type's plain Linux list price, then its ``terms.OnDemand`` entry
prices it. The public feeds give one price per region, so these rows are region-wide (no AZ), and instance specs
come from the offer file's attributes and the family table (the GPU model is not an attribute).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import urljoin

from planner.catalog.schema import Offer, RawOffer, is_local_zone
from planner.catalog.validate import Rejected
from planner.errors import ProviderError
from planner.hardware import gpu_table
from planner.providers.aws import (
    LIST_PRICE_ATTRIBUTES,
    SPOT_ADVISOR_ENV,
    SPOT_ADVISOR_URL,
    advisor_buckets,
    buckets_of,
    bundled_buckets,
    network_gbps,
)
from planner.providers.base import (
    DEFAULT_TIMEOUT_S,
    FetchResult,
    ProgressHook,
    Provider,
    RegionFailure,
    apply_family,
    blank_row,
    describe_error,
    family_facts,
    fetch_regions,
    rejected,
    require,
    settle_availability,
)
from planner.providers.http import HTTP_OPTIONS, JsonApi

# NOTE: the Price List is served from us-east-1 for every region; the index names each region's current file.
PRICE_LIST_URL = "https://pricing.us-east-1.amazonaws.com"
PRICE_LIST_ENV = "GPUPLAN_AWS_PRICE_LIST_URL"
REGION_INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
SPOT_PRICES_URL = "https://spot-price.s3.amazonaws.com/spot.js"
SPOT_PRICES_ENV = "GPUPLAN_AWS_SPOT_PRICES_URL"
HINT = "aws: the public Price List needs no credentials; check the network or GPUPLAN_AWS_PRICE_LIST_URL"
# Each offer file is a large download: a few at a time keep the bandwidth per file up and the memory flat.
DEFAULT_PUBLIC_WORKERS = 4
CHUNK_BYTES = 1 << 16
# Region names of the spot feed that are not region codes (older copies of the feed used them).
SPOT_REGION_ALIASES = {
    "us-east": "us-east-1",
    "us-west": "us-west-1",
    "eu-ireland": "eu-west-1",
    "apac-sin": "ap-southeast-1",
    "apac-syd": "ap-southeast-2",
    "apac-tokyo": "ap-northeast-1",
}
COMPUTE_FAMILIES = ("Compute Instance", "Compute Instance (bare metal)")


@dataclass(frozen=True)
class ListedType:
    """One GPU instance type as a region's offer file lists it: specs from its attributes, the hourly list price."""

    instance_type: str
    vcpus: int | None
    ram_gib: float | None
    network: str
    usage: str
    price_usd_per_hour: float


@dataclass
class OfferFile:
    """What the streaming read keeps of one region's offer file."""

    types: dict[str, ListedType] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # instance type -> why its price could not be read
    products_read: int = 0
    skus: dict[str, str] = field(default_factory=dict)  # instance type -> the SKU of its list price
    reserved: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # SKU -> its terms.Reserved entry


def is_gpu_type(instance_type: str, attributes: Mapping[str, Any]) -> bool:
    """A type of a covered GPU family, or any type whose offer says it has GPUs (rejected later if unknown)."""
    return family_facts("aws", instance_type) is not None or str(attributes.get("gpu") or "0") not in ("0", "NA")


def is_list_price_product(product: Mapping[str, Any], region: str) -> bool:
    """A GPU type's plain on-demand Linux product in ``region`` (not a Local Zone, host, reservation or licence)."""
    attributes = product.get("attributes")
    if product.get("productFamily") not in COMPUTE_FAMILIES or not isinstance(attributes, Mapping):
        return False
    if any(attributes.get(key) != value for key, value in LIST_PRICE_ATTRIBUTES.items()):
        return False
    if attributes.get("regionCode", region) != region or attributes.get("marketoption", "OnDemand") != "OnDemand":
        return False
    return is_gpu_type(str(attributes.get("instanceType") or ""), attributes)


def hourly_price(offer_terms: Mapping[str, Any]) -> float:
    """USD per hour of a SKU's OnDemand terms (``{offerTermCode: {priceDimensions: {...}}}``); ValueError if none."""
    for term in offer_terms.values():
        for dimension in (term.get("priceDimensions") or {}).values():
            if dimension.get("unit") != "Hrs":
                continue
            text = (dimension.get("pricePerUnit") or {}).get("USD")
            try:
                return float(str(text))
            except (TypeError, ValueError):
                raise ValueError(f"malformed on-demand price {text!r} in the offer file") from None
    raise ValueError("no hourly on-demand price in the offer file")


def _number(text: Any, unit: str = "") -> float | None:
    try:
        return float(str(text).replace(",", "").removesuffix(unit).strip())
    except ValueError:
        return None


def read_offer_file(
    body: IO[bytes], region: str, chunk_bytes: int = CHUNK_BYTES, *, reserved: bool = False
) -> OfferFile:
    """Stream one region's EC2 offer file, keeping only GPU list-price products and their OnDemand terms.

    Two incremental parsers read the same bytes, one yielding ``products`` entries and one ``terms.OnDemand``
    entries; each entry is dropped right after it is looked at. The first term means the products are complete:
    the products parser stops there, and reading stops once every kept product has its term (the Reserved terms
    after them are most of a real file). With ``reserved`` a third parser keeps the kept products' ``terms.Reserved``
    entries (planner.providers.aws_commitments) and the whole file is read. A file cut short before that raises
    ijson's IncompleteJSONError.
    """
    ijson = require("ijson", "aws")
    products: list[tuple[str, Any]] = ijson.sendable_list()
    terms: list[tuple[str, Any]] = ijson.sendable_list()
    product_parser = ijson.kvitems_coro(products, "products")
    term_parser = ijson.kvitems_coro(terms, "terms.OnDemand")
    commitments: list[tuple[str, Any]] = ijson.sendable_list()
    term_parsers = (term_parser, ijson.kvitems_coro(commitments, "terms.Reserved")) if reserved else (term_parser,)
    wanted: dict[str, Mapping[str, Any]] = {}  # SKU -> attributes of a kept product
    priced: set[str] = set()
    terms_started = False
    out = OfferFile()
    while True:
        chunk = body.read(chunk_bytes)
        for parser in term_parsers if terms_started else (product_parser, *term_parsers):
            if chunk:
                parser.send(chunk)
            else:
                parser.close()
        for sku, product in products:
            out.products_read += 1
            if isinstance(product, Mapping) and is_list_price_product(product, region):
                wanted[sku] = product["attributes"]
        del products[:]
        terms_started = terms_started or bool(terms)
        for sku, offer_terms in terms:
            attributes = wanted.get(sku)
            if attributes is not None and isinstance(offer_terms, Mapping):
                _keep(out, sku, attributes, offer_terms)
                priced.add(sku)
        del terms[:]
        for sku, reserved_terms in commitments:
            if sku in wanted and isinstance(reserved_terms, Mapping):
                out.reserved[sku] = reserved_terms
        del commitments[:]
        if not chunk or (not reserved and terms_started and priced >= wanted.keys()):
            return out


def _keep(out: OfferFile, sku: str, attributes: Mapping[str, Any], offer_terms: Mapping[str, Any]) -> None:
    name = str(attributes["instanceType"])
    usage = str(attributes.get("usagetype") or "")
    try:
        price = hourly_price(offer_terms)
    except ValueError as exc:
        out.unreadable.setdefault(name, str(exc))
        return
    known = out.types.get(name)
    # Several products can match (a BoxUsage and another usage type): the BoxUsage one is the list price.
    if known is not None and "BoxUsage" in known.usage:
        return
    vcpus = _number(attributes.get("vcpu"))
    out.types[name] = ListedType(
        name,
        int(vcpus) if vcpus is not None else None,
        _number(attributes.get("memory"), "GiB"),
        str(attributes.get("networkPerformance") or ""),
        usage,
        price,
    )
    out.skus[name] = sku
    out.unreadable.pop(name, None)


def region_offer_urls(index: Mapping[str, Any], base_url: str) -> dict[str, str]:
    """Region code -> absolute URL of its current EC2 offer file, from the Price List region index."""
    regions = index.get("regions")
    if not isinstance(regions, Mapping):
        raise ProviderError("aws: the Price List region index has no 'regions' object")
    urls = {}
    for code, entry in regions.items():
        path = entry.get("currentVersionUrl") if isinstance(entry, Mapping) else None
        if isinstance(path, str) and path:
            urls[str(code)] = urljoin(base_url, path)
    return urls


def parse_spot_feed(text: str) -> dict[tuple[str, str], float]:
    """(instance type, region) -> Linux spot USD/hour from the JSONP feed ``callback({...});``."""
    start, end = text.find("("), text.rfind(")")
    if start < 0 or end <= start:
        raise ProviderError("aws: the spot price feed is not a callback(...) wrapper")
    try:
        data = json.loads(text[start + 1 : end])
    except ValueError:
        raise ProviderError("aws: the spot price feed is not valid JSON (truncated?)") from None
    prices: dict[tuple[str, str], float] = {}
    for region in (data.get("config") or {}).get("regions") or []:
        code = SPOT_REGION_ALIASES.get(str(region.get("region")), str(region.get("region")))
        for group in region.get("instanceTypes") or []:
            for size in group.get("sizes") or []:
                for column in size.get("valueColumns") or []:
                    if column.get("name") != "linux":
                        continue
                    price = _number((column.get("prices") or {}).get("USD"))
                    if price is not None and price > 0:  # "N/A*" where the type has no spot market
                        prices[(str(size.get("size")), code)] = price
    return prices


class AwsPublicProvider(Provider):
    """EC2 GPU instance types priced from AWS's public files: no account, one region-wide row per type and region."""

    name = "aws"
    extra = "aws"
    credentials_hint = HINT

    def __init__(
        self,
        api: JsonApi,
        *,
        price_list_url: str | None = None,
        spot_prices_url: str | None = None,
        spot_advisor_url: str | None = None,
        workers: int = DEFAULT_PUBLIC_WORKERS,
        note: str | None = None,
        now: Callable[[], datetime] | None = None,
        commitments: bool = True,
    ) -> None:
        self._api = api
        # Reserved terms follow the on-demand ones: reading them means reading each offer file to its end.
        self._commitments = commitments
        self._base_url = price_list_url or os.environ.get(PRICE_LIST_ENV) or PRICE_LIST_URL
        self._spot_url = spot_prices_url or os.environ.get(SPOT_PRICES_ENV) or SPOT_PRICES_URL
        self._advisor_url = spot_advisor_url or os.environ.get(SPOT_ADVISOR_ENV) or SPOT_ADVISOR_URL
        self._workers = workers
        self._note = note
        self._now = now or (lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls, **options: Any) -> AwsPublicProvider:
        """A client over ``requests`` with no credentials; the HTTP options (timeout_s, attempts, ...) go to it."""
        require("ijson", "aws")
        requests = require("requests", "aws")
        http = {k: options.pop(k) for k in HTTP_OPTIONS if k in options}
        http.setdefault("timeout_s", DEFAULT_TIMEOUT_S)
        return cls(JsonApi("aws", "aws", requests.Session(), None, HINT, **http), **options)

    @property
    def source(self) -> str:
        return "AWS Price List bulk files + EC2 Spot pricing feed (public, no account)"

    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        result = FetchResult()
        if self._note:
            result.notes.append(self._note)
        urls = region_offer_urls(self._api.get(urljoin(self._base_url, REGION_INDEX_PATH)), self._base_url)
        # Local and Wavelength Zones are zones of a region, not regions: only asked for by name.
        wanted = list(regions) if regions else sorted(code for code in urls if not is_local_zone(code))
        result.regions = wanted
        as_of = self._now().isoformat(timespec="seconds")
        with ThreadPoolExecutor(max_workers=1) as pool:
            side = pool.submit(self._spot_and_buckets, previous)
            done, failures = fetch_regions(
                self.name,
                [r for r in wanted if r in urls],
                lambda region: self._api.stream(
                    urls[region], lambda body: read_offer_file(body, region, reserved=self._commitments)
                ),
                workers=self._workers,
                progress=progress,
                describe=describe_error,
            )
            spot, buckets, notes = side.result()
        result.notes.extend(notes)
        result.failures = sorted(
            [*failures, *(RegionFailure(r, "not in the Price List region index") for r in wanted if r not in urls)],
            key=lambda failure: failure.region,
        )
        for region in wanted:
            if region in done:
                rows, bad = self._region_rows(region, done[region], spot, buckets, as_of)
                result.rows.extend(rows)
                result.rejected.extend(bad)
        if self._commitments:
            self._add_commitments(result, done, as_of)
        return result

    def _add_commitments(self, result: FetchResult, done: Mapping[str, OfferFile], as_of: str) -> None:
        """Reserved Instance prices from the offer files read, Savings Plans from their own files; a Savings Plans
        file that cannot be read is a note (the offerings and reserved prices stand)."""
        from planner.providers.aws_commitments import (
            SAVINGS_PLAN_INDEX_PATH,
            read_savings_plans,
            reserved_commitments,
            savings_plan_urls,
        )

        source = "AWS Price List bulk files (public, no account)"
        priced = {r: {str(row["instance_type"]) for row in result.rows if row["region"] == r} for r in done}
        for region, offer in sorted(done.items()):
            for name in sorted(priced[region]):
                terms = offer.reserved.get(offer.skus.get(name, ""))
                if terms:
                    rows, bad = reserved_commitments(name, region, terms, source, as_of)
                    result.commitments.extend(rows)
                    result.rejected.extend(bad)
        try:
            urls = savings_plan_urls(self._api.get(urljoin(self._base_url, SAVINGS_PLAN_INDEX_PATH)), self._base_url)
        except Exception as exc:
            result.notes.append(f"aws: Savings Plans index unavailable ({describe_error(exc)}); no Savings Plan prices")
            return
        for region in sorted(r for r in done if r in urls and priced[r]):

            def read(body: IO[bytes], region: str = region) -> tuple[list[dict[str, Any]], list[Rejected]]:
                return read_savings_plans(body, region, priced[region], source, as_of)

            try:
                rows, bad = self._api.stream(urls[region], read)
            except Exception as exc:
                result.notes.append(f"aws: Savings Plans of {region} unavailable ({describe_error(exc)})")
                continue
            result.commitments.extend(rows)
            result.rejected.extend(bad)

    def _spot_and_buckets(
        self, previous: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], str], list[str]]:
        notes = []
        try:
            spot = parse_spot_feed(self._api.stream(self._spot_url, lambda body: body.read().decode("utf-8")))
        except Exception as exc:  # on-demand prices stand without spot ones
            spot = {}
            notes.append(f"aws: spot price feed unavailable ({describe_error(exc)}); rows have no spot price")
        try:
            buckets = advisor_buckets(self._api.get(self._advisor_url))
        except Exception as exc:
            buckets = {**bundled_buckets(), **buckets_of(previous)}
            notes.append(f"aws: Spot Advisor feed unavailable ({describe_error(exc)}); kept the bundled buckets")
        return spot, buckets, notes

    def _region_rows(
        self,
        region: str,
        offer: OfferFile,
        spot: Mapping[tuple[str, str], float],
        buckets: Mapping[tuple[str, str], str],
        as_of: str,
    ) -> tuple[list[RawOffer], list[Rejected]]:
        rows: list[RawOffer] = []
        bad = [rejected(self.name, name, region, why) for name, why in sorted(offer.unreadable.items())]
        for name in sorted(offer.types):
            listed = offer.types[name]
            facts = family_facts(self.name, name)
            if facts is None or facts.gpu not in gpu_table():
                why = "GPU model unknown: the type is in no family of data/instance_families.csv"
                bad.append(rejected(self.name, name, region, why))
                continue
            if facts.gpu_count is None:
                # Fractional GPUs (g6f): the offer file does not give the slice, so the previous rows are kept.
                why = "GPU count unknown: the family table gives none and the Price List has no GPU slice size"
                bad.append(rejected(self.name, name, region, why))
                continue
            row = blank_row(self.name)
            spot_price = spot.get((name, region))
            row.update(
                {
                    "instance_type": name,
                    "region": region,
                    "gpu": facts.gpu,
                    "gpu_count": facts.gpu_count,
                    "gpu_memory_gib": gpu_table()[facts.gpu].memory_gib,
                    "vcpus": listed.vcpus,
                    "ram_gib": listed.ram_gib,
                    "network_gbps": network_gbps({"NetworkInfo": {"NetworkPerformance": listed.network}}),
                    "price_usd_per_hour": listed.price_usd_per_hour,
                    "spot_price_usd_per_hour": spot_price,
                    "spot_interruption": buckets.get((name, region)) if spot_price is not None else None,
                    "price_source": self.source,
                    "as_of": as_of,
                }
            )
            apply_family(row, facts)
            settle_availability(row)
            rows.append(row)
        return rows, bad
