"""Google Cloud: GPU machine types and accelerators from Compute Engine, prices from the Cloud Billing Catalog.

Google prices a GPU VM as host (per-vCPU and per-GiB SKUs of its series) plus its GPUs (per-GPU SKUs); the
rows keep both parts in ``host_*`` / ``gpu_*`` and sum them into the offering price. The SDKs are imported
only in ``GcpProvider.from_environment``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from planner.catalog.schema import Offer, RawOffer
from planner.catalog.validate import Rejected, offering_price
from planner.errors import MissingCredentials
from planner.hardware import gpu_table
from planner.providers.base import (
    DEFAULT_TIMEOUT_S,
    FetchResult,
    ProgressHook,
    Provider,
    RegionFailure,
    add_flag,
    apply_family,
    blank_row,
    family_facts,
    rejected,
    require,
    resolve_gpu_name,
    settle_availability,
)

if TYPE_CHECKING:
    from planner.providers.gcp_tpu import TpuApi

T = TypeVar("T")

COMPUTE_SERVICE = "6F81-5844-456A"  # Compute Engine in the Cloud Billing Catalog
COMPUTE_ENDPOINT_ENV = "GPUPLAN_GCP_COMPUTE_ENDPOINT"
BILLING_ENDPOINT_ENV = "GPUPLAN_GCP_BILLING_ENDPOINT"
CREDENTIALS_HINT = (
    "run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS) and set GOOGLE_CLOUD_PROJECT"
)
USAGE_TYPES = {"OnDemand": "on_demand", "Preemptible": "spot"}

# N1 VMs take attached GPUs; per GPU count, the largest host (vCPUs, GiB) Google allows.
# Source: https://cloud.google.com/compute/docs/gpus (N1 general-purpose GPU table), read 2025-06.
N1_HOST_LIMITS: dict[str, dict[int, tuple[int, float]]] = {
    "T4": {1: (48, 312), 2: (48, 312), 4: (96, 624)},
    "V100": {1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
}
N1_HOST_SERIES = re.compile(r"^n1-(standard|highmem)-\d+$")
HOST_SKU = re.compile(
    r"^(?P<spot>Spot Preemptible )?(?P<series>[A-Z]\d+[A-Z]?)(?: (?P<variant>Mega|Ultra|Edge|High))?"
    r"(?: Predefined)? Instance (?P<kind>Core|Ram) running in"
)
GPU_SKU = re.compile(
    r"^(?:Nvidia |NVIDIA )?(?:Tesla )?(?P<name>.+?) GPU(?P<spot> attached to Spot Preemptible VMs)? running in"
)
# G4's GPU SKUs carry no "GPU" word ("RTX 6000 96GB running in Americas"); their words differ from the
# accelerator id, so the SKU name maps to the id explicitly.
NAMED_GPU_SKU = re.compile(r"^(?P<name>RTX 6000 96GB)(?P<spot> attached to Spot Preemptible VMs)? running in")
SKU_ACCELERATORS = {"RTX 6000 96GB": "nvidia-rtx-pro-6000"}
# A4-style series bill the whole VM through one per-GPU "slice" SKU and have no vCPU/RAM SKUs, e.g.
# "A4 Nvidia B200 (1 gpu slice) running in Americas" and its "Spot Preemptible ..." twin.
SLICE_SKU = re.compile(
    r"^(?P<spot>Spot Preemptible )?(?P<series>[A-Z]\d+[A-Z]?) (?:Nvidia |NVIDIA )?(?P<name>.+?)"
    r" \(1 gpu slice\) running in"
)
# Usage type OnDemand also covers SKUs that are not list prices: DWS flex-start ("attached to DWS Defined
# Duration VMs", about 45% of list for H100), calendar-mode reservations and the like. Never on-demand.
NOT_LIST_PRICE = re.compile(r"DWS|Dynamic Workload|Calendar Mode|Reserved|Reservation|Commitment|Sole Tenancy", re.I)
# machine-type family word -> the variant word Google's SKU descriptions use for it
VARIANTS = {"megagpu": "Mega", "ultragpu": "Ultra", "edgegpu": "Edge", "highgpu": "High"}


def accelerator_key(name: str) -> frozenset[str]:
    """Words that identify a GPU model in both accelerator ids and SKU text ('nvidia-a100-80gb' ~ 'A100 80GB')."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return frozenset(w for w in words if w not in ("nvidia", "tesla", "gpu"))


def money(unit_price: Any) -> float:
    """``units`` + ``nanos`` / 1e9 of a google.type.Money."""
    return float(int(unit_price.units)) + float(unit_price.nanos) / 1e9


@dataclass
class PriceBook:
    """Prices per (what, region, usage): host core/RAM per series and variant, GPU per accelerator."""

    host: dict[tuple[str, str, str, str, str], float] = field(
        default_factory=dict
    )  # series, variant, kind, region, usage
    gpu: dict[tuple[frozenset[str], str, str], float] = field(default_factory=dict)  # accelerator, region, usage
    # per-GPU price of series whose GPU SKU prices the whole VM (A4): accelerator, region, usage
    whole_vm: dict[tuple[frozenset[str], str, str], float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def core_ram(self, series: str, variant: str, region: str, usage: str) -> tuple[float, float] | None:
        for v in (variant, ""):
            core = self.host.get((series, v, "Core", region, usage))
            ram = self.host.get((series, v, "Ram", region, usage))
            if core is not None and ram is not None:
                return core, ram
        return None


def sku_price(sku: Any) -> tuple[float, str] | None:
    """(USD per usage unit, unit) of the SKU's first tier, or None when it has no USD rate."""
    if not sku.pricing_info:
        return None
    expression = sku.pricing_info[0].pricing_expression
    rates = [r for r in expression.tiered_rates if r.start_usage_amount == 0] or list(expression.tiered_rates)
    if not rates or (rates[0].unit_price.currency_code or "USD") != "USD":
        return None
    return money(rates[0].unit_price), expression.usage_unit


def _usage(sku: Any, spot_in_text: bool) -> str | None:
    """'on_demand', 'spot' or None (commitments and other usage types are not list prices)."""
    usage = USAGE_TYPES.get(sku.category.usage_type)
    if usage is None:
        return None
    # Some spot SKUs carry usage type OnDemand; their description says what they are.
    return "spot" if spot_in_text else usage


def price_book(skus: Iterable[Any], regions: set[str] | None) -> PriceBook:
    """Sort the Compute Engine SKUs that price GPU VMs into a PriceBook: OnDemand and Spot list SKUs only."""
    book = PriceBook()
    for sku in skus:
        description = sku.description
        if NOT_LIST_PRICE.search(description):
            continue  # DWS, reservation and commitment SKUs: cheaper rates that are not the on-demand price
        host, whole = HOST_SKU.match(description), SLICE_SKU.match(description)
        gpu = GPU_SKU.match(description) or NAMED_GPU_SKU.match(description)
        if host is None and whole is None and (gpu is None or sku.category.resource_group != "GPU"):
            continue
        spot_in_text = bool((host or whole or gpu)["spot"])  # type: ignore[index]
        usage = _usage(sku, spot_in_text)
        if usage is None:
            continue
        priced = sku_price(sku)
        if priced is None:
            book.skipped.append(f"{sku.sku_id} ({description}): no USD price")
            continue
        price, unit = priced
        expected = "GiBy.h" if host is not None and host["kind"] == "Ram" else "h"
        if unit != expected:
            book.skipped.append(f"{sku.sku_id} ({description}): unit {unit!r}, expected {expected!r}")
            continue
        for region in sku.service_regions:
            if regions is not None and region not in regions:
                continue
            if host is not None:
                book.host[(host["series"], host["variant"] or "", host["kind"], region, usage)] = price
            elif whole is not None:
                book.whole_vm[(accelerator_key(whole["name"]), region, usage)] = price
            elif gpu is not None:
                name = SKU_ACCELERATORS.get(gpu["name"], gpu["name"])
                book.gpu[(accelerator_key(name), region, usage)] = price
    return book


@dataclass(frozen=True)
class Shape:
    """A machine type with its GPUs: built-in (a2/a3/g2) or an N1 host with attached GPUs."""

    instance_type: str
    host: str
    vcpus: int
    ram_gib: float
    accelerator: str
    gpu_count: int


def _region_of(zone: str) -> str:
    return zone.rsplit("/", 1)[-1].rsplit("-", 1)[0]


def _scoped(pager: Iterable[Any], attribute: str) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """(zone, item) pairs from an aggregated-list pager, and the zones it reported unreachable (with why)."""
    items: list[tuple[str, Any]] = []
    unreachable: dict[str, str] = {}
    for scope, scoped in pager:
        zone = scope.rsplit("/", 1)[-1]
        if "warning" in scoped and scoped.warning.code == "UNREACHABLE":
            unreachable[zone] = scoped.warning.message or "unreachable"
        items.extend((zone, item) for item in getattr(scoped, attribute))
    return items, unreachable


def n1_shapes(hosts: Sequence[Any], accelerators: Mapping[str, int]) -> list[Shape]:
    """N1 hosts with attached GPUs in the counts Google allows: per count, the smallest and largest fitting host."""
    shapes = []
    for accelerator, max_cards in sorted(accelerators.items()):
        label = accelerator.removeprefix("nvidia-").removeprefix("tesla-").upper()
        limits = N1_HOST_LIMITS.get(label)
        if limits is None:
            continue
        for count, (max_vcpus, max_gib) in sorted(limits.items()):
            if count > max_cards:
                continue
            fitting = sorted(
                (h for h in hosts if h.guest_cpus <= max_vcpus and h.memory_mb / 1024 <= max_gib),
                key=lambda h: (h.guest_cpus, h.memory_mb, h.name),
            )
            for host in {h.name: h for h in [*fitting[:1], *fitting[-1:]]}.values():
                shapes.append(
                    Shape(
                        f"{host.name}+{count}x{label}",
                        host.name,
                        host.guest_cpus,
                        host.memory_mb / 1024,
                        accelerator,
                        count,
                    )
                )
    return shapes


class GcpProvider(Provider):
    """Compute Engine GPU shapes per region, priced from the Cloud Billing Catalog."""

    name = "gcp"
    extra = "gcp"
    credentials_hint = (
        f"gcp: no Application Default Credentials; {CREDENTIALS_HINT} (or set GPUPLAN_GCP_API_KEY for list prices)"
    )

    def __init__(
        self,
        machine_types: Any,
        accelerator_types: Any,
        catalog: Any,
        *,
        project: str,
        retry: Callable[[Callable[[], Any]], Callable[[], Any]] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        now: Callable[[], datetime] | None = None,
        tpu: TpuApi | None = None,
    ) -> None:
        self._tpu = tpu  # the TPU API's listings; None: no TPU slices from this refresh
        self._machine_types = machine_types
        self._accelerator_types = accelerator_types
        self._catalog = catalog
        self._project = project
        self._retry = retry or (lambda call: call)
        self._timeout_s = timeout_s
        self._now = now or (lambda: datetime.now(UTC))

    @classmethod
    def from_environment(
        cls, *, public: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S, **options: Any
    ) -> Provider:
        """Clients from Application Default Credentials; ``GPUPLAN_GCP_*_ENDPOINT`` redirect the APIs.

        With ``public``, or without credentials or a project but with an API key, list prices with the key alone.
        """
        from planner.providers.gcp_public import GcpPublicProvider, api_key

        if public:
            return GcpPublicProvider.from_environment(timeout_s=timeout_s, **options)
        google_auth = require("google.auth", "gcp")
        auth_exceptions = require("google.auth.exceptions", "gcp")
        compute = require("google.cloud.compute_v1", "gcp")
        billing = require("google.cloud.billing_v1", "gcp")
        try:
            credentials, project = google_auth.default()
        except auth_exceptions.DefaultCredentialsError:
            credentials, project = None, None
        project = os.environ.get("GOOGLE_CLOUD_PROJECT") or project
        if credentials is None or not project:
            if api_key() is not None:
                missing = "project" if credentials is not None else "credentials"
                note = f"gcp: no {missing}, so the catalog's shapes were priced with the API key; {CREDENTIALS_HINT}"
                return GcpPublicProvider.from_environment(note=note, timeout_s=timeout_s, **options)
            if credentials is None:
                raise MissingCredentials(cls.credentials_hint)
            raise MissingCredentials(f"gcp: no project; {CREDENTIALS_HINT}")

        def endpoint(variable: str) -> dict[str, str] | None:
            value = os.environ.get(variable)
            return {"api_endpoint": value} if value else None

        compute_options = endpoint(COMPUTE_ENDPOINT_ENV)
        return cls(
            compute.MachineTypesClient(credentials=credentials, client_options=compute_options),
            compute.AcceleratorTypesClient(credentials=credentials, client_options=compute_options),
            billing.CloudCatalogClient(credentials=credentials, client_options=endpoint(BILLING_ENDPOINT_ENV)),
            project=project,
            retry=default_retry(),
            timeout_s=timeout_s,
            tpu=_tpu_api(credentials, project, timeout_s),
            **options,
        )

    @property
    def source(self) -> str:
        return f"Cloud Billing Catalog services/{COMPUTE_SERVICE} + Compute Engine API (live)"

    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        hook = progress or ProgressHook()
        wanted = set(regions) if regions else None
        # The three listings are independent: run them side by side.
        with ThreadPoolExecutor(max_workers=3) as pool:
            machines = pool.submit(self._call, self._list_machine_types)
            accelerators = pool.submit(self._call, self._list_accelerator_types)
            skus = pool.submit(self._call, self._list_skus)
            (machine_list, lost_machines), (accelerator_list, lost_accelerators) = (
                machines.result(),
                accelerators.result(),
            )
            sku_list = skus.result()
        found_regions = sorted(
            {_region_of(zone) for zone, _ in machine_list} & (wanted or {_region_of(z) for z, _ in machine_list})
        )
        hook.start(self.name, len(found_regions))
        book = price_book(sku_list, set(found_regions))
        result = FetchResult(regions=sorted(wanted) if wanted else found_regions)
        # A zone the aggregated list could not reach makes its region incomplete: its old rows are kept.
        lost: dict[str, list[str]] = {}
        for zone, message in sorted({**lost_accelerators, **lost_machines}.items()):
            if wanted is None or _region_of(zone) in wanted:
                lost.setdefault(_region_of(zone), []).append(f"zone {zone} unreachable: {message}")
        result.failures = [RegionFailure(region, "; ".join(why)) for region, why in sorted(lost.items())]
        result.regions = sorted(set(result.regions) | set(lost))
        result.notes.extend(f"gcp: skipped SKU {s}" for s in book.skipped[:5])
        if len(book.skipped) > 5:
            result.notes.append(f"gcp: ... and {len(book.skipped) - 5} more SKUs skipped")
        as_of = self._now().isoformat(timespec="seconds")
        for region in found_regions:
            rows, bad = self._region_rows(region, machine_list, accelerator_list, book, as_of)
            result.rows.extend(rows)
            result.rejected.extend(bad)
            hook.advance(self.name, region, True)
        if self._tpu is not None:
            from planner.providers.gcp_tpu import live_tpu_rows

            tpu_rows, unpriced, notes, covered = live_tpu_rows(
                self._tpu, sku_list, wanted, previous, self.source, as_of
            )
            result.rows.extend(tpu_rows)
            result.rejected.extend(unpriced)
            result.notes.extend(notes)
            # A TPU-only region (no GPU machine types) is renewed too: its old slices are replaced, not carried.
            result.regions = sorted(set(result.regions) | set(covered))
        from planner.providers.gcp_commitments import commitments_of

        shapes = [(region, self._shapes(region, machine_list, accelerator_list)) for region in found_regions]
        committed, bad, notes = commitments_of(self.name, sku_list, shapes, self.source, as_of)
        result.commitments.extend(committed)
        result.rejected.extend(bad)
        result.notes.extend(notes)
        return result

    # -- API calls ------------------------------------------------------------------------------
    def _call(self, listing: Callable[[], T]) -> T:
        try:
            answer: T = self._retry(listing)()
            return answer
        except Exception as exc:
            name = type(exc).__name__
            if name in ("RefreshError", "Unauthenticated", "Unauthorized", "DefaultCredentialsError"):
                raise MissingCredentials(f"gcp: credentials rejected ({name}); {CREDENTIALS_HINT}") from None
            raise

    def _list_machine_types(self) -> tuple[list[tuple[str, Any]], dict[str, str]]:
        pager = self._machine_types.aggregated_list(project=self._project, timeout=self._timeout_s)
        return _scoped(pager, "machine_types")

    def _list_accelerator_types(self) -> tuple[list[tuple[str, Any]], dict[str, str]]:
        pager = self._accelerator_types.aggregated_list(project=self._project, timeout=self._timeout_s)
        return _scoped(pager, "accelerator_types")

    def _list_skus(self) -> list[Any]:
        return list(self._catalog.list_skus(parent=f"services/{COMPUTE_SERVICE}", timeout=self._timeout_s))

    # -- rows -----------------------------------------------------------------------------------
    def _shapes(
        self, region: str, machines: Sequence[tuple[str, Any]], accelerators: Sequence[tuple[str, Any]]
    ) -> list[Shape]:
        in_region = [m for zone, m in machines if _region_of(zone) == region]
        shapes: dict[str, Shape] = {}
        for machine in in_region:
            if machine.accelerators:
                accelerator = machine.accelerators[0]
                shapes[machine.name] = Shape(
                    machine.name,
                    machine.name,
                    machine.guest_cpus,
                    machine.memory_mb / 1024,
                    accelerator.guest_accelerator_type,
                    accelerator.guest_accelerator_count,
                )
        hosts = list({m.name: m for m in in_region if N1_HOST_SERIES.match(m.name)}.values())
        attachable: dict[str, int] = {}
        for zone, accelerator in accelerators:
            if _region_of(zone) == region:
                attachable[accelerator.name] = max(
                    attachable.get(accelerator.name, 0), accelerator.maximum_cards_per_instance
                )
        for shape in n1_shapes(hosts, attachable):
            shapes[shape.instance_type] = shape
        return [shapes[name] for name in sorted(shapes)]

    def _region_rows(
        self,
        region: str,
        machines: Sequence[tuple[str, Any]],
        accelerators: Sequence[tuple[str, Any]],
        book: PriceBook,
        as_of: str,
    ) -> tuple[list[RawOffer], list[Rejected]]:
        rows, bad = [], []
        for shape in self._shapes(region, machines, accelerators):
            row, why = shape_row(self.name, shape, region, book, self.source, as_of)
            if row is not None:
                rows.append(row)
            if why is not None:
                bad.append(why)
        return rows, bad


def shape_row(
    provider: str, shape: Shape, region: str, book: PriceBook, source: str, as_of: str
) -> tuple[RawOffer | None, Rejected | None]:
    """One shape's offering in ``region``, priced from the book (host + GPUs, or the whole-VM slice SKU), or why not."""
    gpu_id, reason = resolve_gpu_name(shape.accelerator, None)
    if reason:
        return None, rejected(provider, shape.instance_type, region, reason)
    family = shape.host.split("-")
    series = family[0].upper()
    variant = VARIANTS.get(family[1], "") if len(family) > 1 else ""
    row = blank_row(provider)
    row.update(
        {
            "instance_type": shape.instance_type,
            "region": region,
            "gpu": gpu_id,
            "gpu_count": float(shape.gpu_count),
            "gpu_memory_gib": gpu_table()[gpu_id].memory_gib,
            "vcpus": shape.vcpus,
            "ram_gib": round(shape.ram_gib, 3),
            "price_source": source,
            "as_of": as_of,
        }
    )
    accelerator = accelerator_key(shape.accelerator)
    # The price columns by name (the loop names them); the typed row keeps literal keys.
    parts = cast(dict[str, Any], row)
    for usage, total, host_column, gpu_column in (
        ("on_demand", "price_usd_per_hour", "host_price_usd_per_hour", "gpu_price_usd_per_hour"),
        ("spot", "spot_price_usd_per_hour", "host_spot_price_usd_per_hour", "gpu_spot_price_usd_per_hour"),
    ):
        slice_price = book.whole_vm.get((accelerator, region, usage))
        if slice_price is not None and book.core_ram(series, variant, region, usage) is None:
            # The GPU SKU prices the whole VM: no host/GPU split to keep.
            parts[total] = round(slice_price * shape.gpu_count, 6)
            add_flag(row, "gpu_sku_prices_whole_vm")
            continue
        core_ram = book.core_ram(series, variant, region, usage)
        per_gpu = book.gpu.get((accelerator, region, usage))
        if core_ram is None or per_gpu is None:
            continue  # without both parts there is no instance price: never show a host-only price
        host_price = core_ram[0] * shape.vcpus + core_ram[1] * shape.ram_gib
        gpu_price = per_gpu * shape.gpu_count
        parts[host_column], parts[gpu_column] = round(host_price, 6), round(gpu_price, 6)
        parts[total] = offering_price(host_price, gpu_price)
    facts = family_facts(provider, shape.instance_type)
    if facts is not None and facts.availability in ("spot-only", "reservation-only"):
        # Google does not sell the shape on demand (a3-highgpu-1g/2g/4g, A3 Ultra, A4): no on-demand price.
        row["price_usd_per_hour"] = row["host_price_usd_per_hour"] = row["gpu_price_usd_per_hour"] = None
    apply_family(row, facts)
    unpriced = row["price_usd_per_hour"] is None and row["spot_price_usd_per_hour"] is None
    if unpriced and row["availability"] != "reservation-only":
        reason = f"no {region} price SKU for the {series} host or {shape.accelerator}"
        return None, rejected(provider, shape.instance_type, region, reason)
    settle_availability(row)
    return row, None


def _tpu_api(credentials: Any, project: str, timeout_s: float) -> TpuApi:
    """The TPU API over an authorised ``requests`` session (``GPUPLAN_GCP_TPU_ENDPOINT`` redirects it)."""
    from planner.providers.gcp_tpu import TPU_ENDPOINT_ENV, TpuApi
    from planner.providers.http import JsonApi

    transport = require("google.auth.transport.requests", "gcp")
    session = transport.AuthorizedSession(credentials)
    api = JsonApi("gcp", "gcp", session, None, CREDENTIALS_HINT, timeout_s=timeout_s)
    return TpuApi(api, project, base_url=os.environ.get(TPU_ENDPOINT_ENV))


def default_retry(initial_s: float = 1.0, maximum_s: float = 30.0, deadline_s: float = 300.0) -> Any:
    """google-api-core's Retry on throttling, 5xx and timeouts, with exponential backoff."""
    retry_module = require("google.api_core.retry", "gcp")
    exceptions = require("google.api_core.exceptions", "gcp")
    return retry_module.Retry(
        initial=initial_s,
        maximum=maximum_s,
        multiplier=2.0,
        timeout=deadline_s,
        predicate=retry_module.if_exception_type(
            exceptions.TooManyRequests,
            exceptions.InternalServerError,
            exceptions.BadGateway,
            exceptions.ServiceUnavailable,
            exceptions.GatewayTimeout,
            exceptions.DeadlineExceeded,
            TimeoutError,
            ConnectionError,
        ),
    )
