"""Google Cloud with only an API key: list prices from the Cloud Billing Catalog's REST API, shapes from the catalog.

The Catalog API accepts a plain API key (no project, no OAuth). Machine types and accelerators need a project, so
this path prices the shapes and regions of the current catalog (seeded from the bundled table), with each shape's
accelerator from the family table, and says so on every row. Prices are summed exactly as the full adapter does.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from planner._data import data_dir
from planner.catalog.schema import Offer, RawOffer
from planner.catalog.validate import Rejected
from planner.errors import MissingCredentials, ProviderError
from planner.providers.base import (
    DEFAULT_TIMEOUT_S,
    FetchResult,
    ProgressHook,
    Provider,
    add_flag,
    family_facts,
    require,
)
from planner.providers.gcp import COMPUTE_SERVICE, CREDENTIALS_HINT, PriceBook, Shape, price_book, shape_row
from planner.providers.gcp_tpu import SoldIn, chip_prices, tpu_offers, tpu_regions, tpu_zones
from planner.providers.http import HTTP_OPTIONS, JsonApi, token_from_environment

BILLING_URL = "https://cloudbilling.googleapis.com"
BILLING_URL_ENV = "GPUPLAN_GCP_BILLING_URL"
API_KEY_ENVS = ("GPUPLAN_GCP_API_KEY", "GOOGLE_API_KEY")
KEY_HINT = f"set {API_KEY_ENVS[0]} (or {API_KEY_ENVS[1]}) to an API key allowed to call the Cloud Billing API"
HINT = f"gcp: no credentials; {CREDENTIALS_HINT}, or {KEY_HINT} for list prices only"
PAGE_SIZE = "5000"  # the API's largest page: Compute Engine's SKUs are a few pages
MAX_PAGES = 200  # a nextPageToken loop guard


def api_key(getenv: Callable[[str], str | None] = os.environ.get) -> str | None:
    """The Cloud Billing API key from the environment, or None."""
    return token_from_environment(API_KEY_ENVS, getenv)


def sku_from_json(entry: Mapping[str, Any]) -> SimpleNamespace:
    """A REST SKU as the attributes the SDK's Sku message has (what ``price_book`` reads), missing ones empty."""

    def rate(tier: Mapping[str, Any]) -> SimpleNamespace:
        price = tier.get("unitPrice") or {}
        money = SimpleNamespace(
            currency_code=price.get("currencyCode", ""), units=price.get("units") or 0, nanos=price.get("nanos") or 0
        )
        return SimpleNamespace(start_usage_amount=float(tier.get("startUsageAmount") or 0), unit_price=money)

    def pricing(info: Mapping[str, Any]) -> SimpleNamespace:
        expression = info.get("pricingExpression") or {}
        tiers = [rate(t) for t in expression.get("tieredRates") or []]
        return SimpleNamespace(
            pricing_expression=SimpleNamespace(usage_unit=expression.get("usageUnit", ""), tiered_rates=tiers)
        )

    category = entry.get("category") or {}
    return SimpleNamespace(
        sku_id=str(entry.get("skuId", "")),
        description=str(entry.get("description", "")),
        category=SimpleNamespace(
            usage_type=category.get("usageType", ""), resource_group=category.get("resourceGroup", "")
        ),
        service_regions=list(entry.get("serviceRegions") or []),
        pricing_info=[pricing(info) for info in entry.get("pricingInfo") or []],
    )


def shapes_of(rows: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Shape], dict[str, set[str]]]:
    """The shapes of catalog rows (N1 rows are '<host>+<count>x<GPU>') and the regions each is listed in."""
    shapes: dict[str, Shape] = {}
    regions: dict[str, set[str]] = {}
    for row in rows:
        name = str(row["instance_type"])
        facts = family_facts("gcp", name)
        if facts is None or not facts.accelerator:
            continue
        shapes[name] = Shape(
            name,
            name.split("+", 1)[0],
            int(float(row["vcpus"])),
            float(row["ram_gib"]),
            facts.accelerator,
            int(float(row["gpu_count"])),
        )
        regions.setdefault(name, set()).add(str(row["region"]))
    return shapes, regions


def _bundled_rows() -> list[dict[str, str]]:
    path = data_dir() / "catalog" / "gcp.csv"
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def bundled_shapes() -> tuple[dict[str, Shape], dict[str, set[str]]]:
    """The shapes and regions of the bundled Google Cloud table (data/catalog/gcp.csv)."""
    return shapes_of(_bundled_rows())


def bundled_tpu_zones() -> SoldIn:
    """The zones of each TPU slice in the bundled Google Cloud table."""
    return tpu_zones(_bundled_rows())


class GcpPublicProvider(Provider):
    """Compute Engine GPU shapes of the current catalog, priced from the Billing Catalog with an API key."""

    name = "gcp"
    extra = "gcp"
    credentials_hint = HINT

    def __init__(
        self,
        api: JsonApi,
        key: str,
        *,
        base_url: str | None = None,
        note: str | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._api = api
        self._key = key
        self._base_url = (base_url or os.environ.get(BILLING_URL_ENV) or BILLING_URL).rstrip("/")
        self._note = note
        self._now = now or (lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls, **options: Any) -> GcpPublicProvider:
        """A client over ``requests`` with the API key of the environment; MissingCredentials without one."""
        requests = require("requests", "gcp")
        key = api_key()
        if key is None:
            raise MissingCredentials(HINT)
        http = {k: options.pop(k) for k in HTTP_OPTIONS if k in options}
        http.setdefault("timeout_s", DEFAULT_TIMEOUT_S)
        return cls(JsonApi("gcp", "gcp", requests.Session(), None, HINT, **http), key, **options)

    @property
    def source(self) -> str:
        return f"Cloud Billing Catalog services/{COMPUTE_SERVICE} (API key) with shapes from the catalog"

    def _skus(self) -> Iterator[Mapping[str, Any]]:
        """Every Compute Engine SKU, page by page (``nextPageToken``)."""
        url = f"{self._base_url}/v1/services/{COMPUTE_SERVICE}/skus"
        token = ""
        for page_number in range(MAX_PAGES):
            params = {"key": self._key, "pageSize": PAGE_SIZE, **({"pageToken": token} if token else {})}
            try:
                page = self._api.get(url, params)
            except ProviderError as exc:
                # An invalid key is HTTP 400 (API_KEY_INVALID), not 401: say it is the key.
                if page_number == 0 and "HTTP 400" in str(exc):
                    raise MissingCredentials(
                        f"gcp: the Cloud Billing API refused the API key (HTTP 400); {KEY_HINT}"
                    ) from None
                raise
            skus = page.get("skus", [])
            if not isinstance(skus, list):
                raise ProviderError("gcp: the Billing Catalog answer has no 'skus' list")
            yield from (s for s in skus if isinstance(s, Mapping))
            token = str(page.get("nextPageToken") or "")
            if not token:
                return
        raise ProviderError(f"gcp: more than {MAX_PAGES} pages of SKUs")

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
        skus = [sku_from_json(entry) for entry in self._skus()]
        shapes, sold_in = shapes_of(previous)
        if not shapes:
            shapes, sold_in = bundled_shapes()
        sold_tpu = tpu_zones(previous) or bundled_tpu_zones()
        everywhere = sorted(set().union(*sold_in.values(), tpu_regions(sold_tpu)))
        wanted = list(regions) if regions else everywhere
        result.regions = wanted
        book = price_book(skus, set(wanted))
        result.notes.extend(f"gcp: skipped SKU {s}" for s in book.skipped[:5])
        hook = progress or ProgressHook()
        hook.start(self.name, len(wanted))
        as_of = self._now().isoformat(timespec="seconds")
        for region in wanted:
            rows, bad = self._region_rows(region, shapes, sold_in, book, as_of)
            result.rows.extend(rows)
            result.rejected.extend(bad)
            hook.advance(self.name, region, True)
        # TPU slices: the zones the catalog lists them in, priced per chip-hour from the same SKU list.
        prices, skipped = chip_prices(skus, set(wanted))
        result.notes.extend(f"gcp: skipped SKU {s}" for s in skipped[:5])
        tpu_rows, unpriced = tpu_offers(sold_tpu, prices, wanted, self.source, as_of)
        for row in tpu_rows:
            add_flag(row, "specs_from_bundled")
        result.rows.extend(tpu_rows)
        result.rejected.extend(unpriced)
        from planner.providers.gcp_commitments import commitments_of

        in_region = [(r, [shapes[name] for name in sorted(shapes) if r in sold_in[name]]) for r in wanted]
        committed, bad, notes = commitments_of(self.name, skus, in_region, self.source, as_of)
        result.commitments.extend(committed)
        result.rejected.extend(bad)
        result.notes.extend(notes)
        return result

    def _region_rows(
        self,
        region: str,
        shapes: Mapping[str, Shape],
        sold_in: Mapping[str, set[str]],
        book: PriceBook,
        as_of: str,
    ) -> tuple[list[RawOffer], list[Rejected]]:
        rows: list[RawOffer] = []
        bad: list[Rejected] = []
        for name in sorted(n for n in shapes if region in sold_in[n]):
            row, why = shape_row(self.name, shapes[name], region, book, self.source, as_of)
            if row is not None:
                add_flag(row, "specs_from_bundled")
                rows.append(row)
            if why is not None:
                bad.append(why)
        return rows, bad
