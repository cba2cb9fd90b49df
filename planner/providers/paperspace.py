"""Paperspace, now DigitalOcean's GPU Droplets: GPU sizes, hourly prices and the regions that sell them.

``GET /v2/sizes`` with a token (``DIGITALOCEAN_TOKEN``, or doctl's ``DIGITALOCEAN_ACCESS_TOKEN``) lists every
Droplet size, paginated through ``links.pages.next``; the GPU ones carry ``gpu_info``. A size slug ending in
``-spot`` is the spot price of the size without it. DigitalOcean reports where a size is sold, not spare
capacity, so ``available_now`` stays unknown. Paperspace's own machine types (Core) publish no price API and
are not covered.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner.catalog.schema import REGION_UNKNOWN, Offer, RawOffer
from planner.catalog.validate import Rejected
from planner.errors import ProviderError
from planner.hardware import gpu_table
from planner.providers.base import (
    FetchResult,
    ProgressHook,
    Provider,
    add_flag,
    apply_family,
    blank_row,
    family_facts,
    rejected,
    resolve_gpu_name,
    settle_availability,
)
from planner.providers.http import JsonApi, api_from_environment
from planner.providers.regions import UNKNOWN_FLAG, regions_by_type, sold_in

API_URL = "https://api.digitalocean.com/v2/sizes"
URL_ENV = "GPUPLAN_DIGITALOCEAN_URL"
TOKEN_ENVS = ("DIGITALOCEAN_TOKEN", "DIGITALOCEAN_ACCESS_TOKEN")
CREDENTIALS_HINT = "set DIGITALOCEAN_TOKEN to a read-scoped token from the DigitalOcean control panel (API page)"
PER_PAGE = "200"  # the API's largest page: the whole size list is one or two pages
MAX_PAGES = 50  # a links.pages.next loop guard
SPOT_SUFFIX = "-spot"
MIB_PER_GIB = 1024.0


@dataclass(frozen=True)
class GpuSize:
    """One GPU Droplet size (on-demand or spot) as the API lists it."""

    slug: str  # the size to launch, without the -spot suffix
    spot: bool
    gpu: str
    gpu_count: float
    vcpus: int
    ram_gib: float
    price_usd_per_hour: float
    regions: frozenset[str]


def _positive(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"malformed {field} {value!r}")
    return float(value)


def parse_sizes(sizes: Sequence[Mapping[str, Any]]) -> tuple[list[GpuSize], list[Rejected], list[str]]:
    """GPU sizes of a size list, the ones that could not be read, and the slugs not offered now."""
    out: list[GpuSize] = []
    bad: list[Rejected] = []
    not_offered: list[str] = []
    for size in sizes:
        info = size.get("gpu_info")
        if not isinstance(info, Mapping):
            continue  # a CPU Droplet
        slug = str(size.get("slug") or "")
        base = slug.removesuffix(SPOT_SUFFIX)
        if size.get("available") is False:
            not_offered.append(slug)
            continue
        try:
            count = _positive(info.get("count"), "gpu_info.count")
            price = _positive(size.get("price_hourly"), "price_hourly")
            vcpus = int(_positive(size.get("vcpus"), "vcpus"))
            ram = _positive(size.get("memory"), "memory") / MIB_PER_GIB
            regions = frozenset(str(r) for r in size.get("regions") or [])
        except (TypeError, ValueError) as exc:
            bad.append(rejected("paperspace", base, "*", f"unreadable size {slug!r}: {exc}"))
            continue
        facts = family_facts("paperspace", base)
        if facts is not None:
            gpu = facts.gpu  # the slug pins the variant; gpu_info.model ('nvidia_h100') does not
        else:
            model = str(info.get("model") or "")
            vram = info.get("vram") or {}
            amount = vram.get("amount") if isinstance(vram, Mapping) else None
            per_gpu = float(amount) / count if isinstance(amount, int | float) and amount > 0 else None
            gpu, reason = resolve_gpu_name(model.removeprefix("amd_").removeprefix("nvidia_"), per_gpu)
            if reason:
                bad.append(rejected("paperspace", base, "*", reason))
                continue
        out.append(GpuSize(base, slug.endswith(SPOT_SUFFIX), gpu, count, vcpus, ram, price, regions))
    return out, bad, not_offered


class PaperspaceProvider(Provider):
    """DigitalOcean GPU Droplets (Paperspace's GPU cloud), one row per size and region."""

    name = "paperspace"
    extra = "paperspace"
    credentials_hint = f"paperspace: no credentials; {CREDENTIALS_HINT}"

    def __init__(
        self,
        api: JsonApi,
        *,
        url: str | None = None,
        now: Callable[[], datetime] | None = None,
        per_page: str = PER_PAGE,
    ) -> None:
        self._api = api
        self._url = url or os.environ.get(URL_ENV) or API_URL
        self._now = now or (lambda: datetime.now(UTC))
        self._per_page = per_page

    @classmethod
    def from_environment(cls, **options: Any) -> PaperspaceProvider:
        """An API client over ``requests``; MissingCredentials when no DigitalOcean token is set."""
        api = api_from_environment("paperspace", "paperspace", TOKEN_ENVS, cls.credentials_hint, options)
        return cls(api, **options)

    @property
    def source(self) -> str:
        return "DigitalOcean Sizes API (live)"

    def _sizes(self) -> Iterator[Mapping[str, Any]]:
        """Every size, following links.pages.next (an absolute URL that carries its own query)."""
        url: str | None = self._url
        params: dict[str, str] | None = {"per_page": self._per_page}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            page = self._api.get(url, params)
            sizes = page.get("sizes")
            if not isinstance(sizes, list):
                raise ProviderError("paperspace: the sizes answer has no 'sizes' list")
            yield from sizes
            links = page.get("links") or {}
            pages = links.get("pages") if isinstance(links, Mapping) else None
            url = pages.get("next") if isinstance(pages, Mapping) else None
            params = None
        raise ProviderError(f"paperspace: more than {MAX_PAGES} pages of sizes")

    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        result = FetchResult()
        sizes, bad, not_offered = parse_sizes(list(self._sizes()))
        result.rejected.extend(bad)
        as_of = self._now().isoformat(timespec="seconds")
        by_slug: dict[str, dict[bool, GpuSize]] = {}
        for size in sizes:
            by_slug.setdefault(size.slug, {})[size.spot] = size
        # A size listed with no regions keeps the regions the catalog had for it, else its region is unknown.
        known = regions_by_type(previous)
        sold = {
            slug: set().union(*(k.regions for k in kinds.values())) or sold_in((), known.get(slug, ()))
            for slug, kinds in by_slug.items()
        }
        everywhere = sorted(set().union(*sold.values()))
        wanted = list(regions) if regions else everywhere
        result.regions = wanted
        hook = progress or ProgressHook()
        hook.start(self.name, len(wanted))
        for region in wanted:
            for slug in sorted(s for s in by_slug if region in sold[s]):
                row = self._row(by_slug[slug], region, as_of)
                if row is not None:
                    result.rows.append(row)
            hook.advance(self.name, region, True)
        if not_offered:
            result.notes.append(f"paperspace: not offered now (available=false): {', '.join(sorted(not_offered))}")
        return result

    def _row(self, kinds: Mapping[bool, GpuSize], region: str, as_of: str) -> RawOffer | None:
        on_demand, spot = kinds.get(False), kinds.get(True)
        # A kind listed with no regions is priced wherever the size is sold (the caller picked the regions).
        on_demand = on_demand if on_demand is not None and region in (on_demand.regions or {region}) else None
        spot = spot if spot is not None and region in (spot.regions or {region}) else None
        shape = on_demand or spot
        if shape is None:
            return None
        row = blank_row(self.name)
        spec = gpu_table().get(shape.gpu)
        row.update(
            {
                "instance_type": shape.slug,
                "region": region,
                "gpu": shape.gpu,
                "gpu_count": shape.gpu_count,
                "gpu_memory_gib": spec.memory_gib if spec is not None else None,
                "vcpus": shape.vcpus,
                "ram_gib": shape.ram_gib,
                "price_usd_per_hour": on_demand.price_usd_per_hour if on_demand else None,
                "spot_price_usd_per_hour": spot.price_usd_per_hour if spot else None,
                "price_source": self.source,
                "as_of": as_of,
                "available_now": "unknown",
            }
        )
        apply_family(row, family_facts(self.name, shape.slug))
        if region == REGION_UNKNOWN:
            add_flag(row, UNKNOWN_FLAG)
        settle_availability(row)
        return row
