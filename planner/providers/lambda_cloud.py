"""Lambda Cloud: on-demand instance types, their prices and the regions with capacity right now.

One call, ``GET /api/v1/instance-types`` with an API key (``LAMBDA_API_KEY``), answers everything: per
instance type the price in cents per hour, the GPU description, the specs and ``regions_with_capacity_available``.
Lambda charges one price in every region, but the API names only the regions with spare capacity now. A type gets
one row per region it is known in: those with capacity now (``available_now`` true) and those the catalog listed it
in before (false), both stamped with the time of the call; a type known nowhere is in region "unknown".
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner._data import data_dir
from planner.catalog.schema import REGION_UNKNOWN, Offer, RawOffer
from planner.catalog.validate import Rejected
from planner.errors import ProviderError, UnknownGpuError
from planner.hardware import gpu_table, lookup
from planner.providers.base import (
    FetchResult,
    ProgressHook,
    Provider,
    add_flag,
    apply_family,
    blank_row,
    family_facts,
    rejected,
    settle_availability,
)
from planner.providers.http import JsonApi, api_from_environment
from planner.providers.regions import UNKNOWN_FLAG, regions_by_type, sold_in

API_URL = "https://cloud.lambda.ai/api/v1/instance-types"
URL_ENV = "GPUPLAN_LAMBDA_URL"
KEY_ENV = "LAMBDA_API_KEY"
CREDENTIALS_HINT = f"set {KEY_ENV} to an API key made on the API keys page of the Lambda Cloud dashboard"
# "H100 (80 GB SXM5)", "Quadro RTX 6000 (24 GB)": model, memory per GPU and, when given, the form factor.
DESCRIPTION = re.compile(
    r"^\s*(?:\d+x\s+)?(?P<model>.+?)\s*\((?P<memory>\d+(?:\.\d+)?)\s*GB(?:\s+(?P<form>\w+))?\)\s*$"
)


@dataclass(frozen=True)
class InstanceType:
    """One Lambda instance type as the API describes it."""

    name: str
    gpu: str  # canonical id
    gpu_count: float
    vcpus: int
    ram_gib: float
    price_usd_per_hour: float
    capacity: frozenset[str]  # regions with capacity at the time of the call


def gpu_from_description(text: str) -> str | None:
    """The canonical GPU of a gpu_description such as 'A100 (40 GB PCIe)', or None if the resolver cannot say."""
    match = DESCRIPTION.match(text or "")
    if match is None:
        return None
    model, memory, form = match["model"], float(match["memory"]), match["form"]
    spellings = [f"{model} {form} {memory:g}GB", f"{model} {form}"] if form else []
    for spelling in [*spellings, model]:
        try:
            return lookup(spelling, memory).spec.id
        except UnknownGpuError:
            continue
    return None


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"malformed {field} {value!r}")
    return float(value)


def parse_instance_types(data: Mapping[str, Any]) -> tuple[list[InstanceType], list[Rejected], int]:
    """GPU instance types of the API's ``data`` object, the entries that could not be read, and the CPU-only count."""
    types: list[InstanceType] = []
    bad: list[Rejected] = []
    cpu_only = 0
    for key, entry in sorted(data.items()):
        try:
            described = entry["instance_type"]
            name = str(described.get("name") or key)
            specs = described["specs"]
            gpus = _number(specs.get("gpus"), "specs.gpus")
            if gpus == 0:
                cpu_only += 1
                continue
            cents = _number(described.get("price_cents_per_hour"), "price_cents_per_hour")
            vcpus = int(_number(specs.get("vcpus"), "specs.vcpus"))
            ram = _number(specs.get("memory_gib"), "specs.memory_gib")
            capacity = frozenset(str(region["name"]) for region in entry.get("regions_with_capacity_available") or [])
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            reason = str(exc) if isinstance(exc, ValueError) else f"entry lacks {exc}"
            bad.append(rejected("lambda", str(key), "*", f"unreadable instance type: {reason}"))
            continue
        description = str(described.get("gpu_description") or described.get("description") or "")
        facts = family_facts("lambda", name)
        # The API's own description names the variant (SXM4 or PCIe); the family table is the fallback.
        gpu = gpu_from_description(description) or (facts.gpu if facts is not None else None)
        if gpu is None:
            bad.append(
                rejected("lambda", name, "*", f"GPU {description!r} is not in the hardware table (data/gpus.csv)")
            )
            continue
        types.append(InstanceType(name, gpu, gpus, vcpus, ram, round(cents / 100.0, 4), capacity))
    return types, bad, cpu_only


def bundled_regions() -> dict[str, set[str]]:
    """Instance type -> the regions the bundled Lambda table (data/catalog/lambda.csv) lists it in."""
    path = data_dir() / "catalog" / "lambda.csv"
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        return regions_by_type(csv.DictReader(handle))


class LambdaProvider(Provider):
    """Lambda Cloud on-demand instance types, one row per region, with the capacity the API reported."""

    name = "lambda"
    extra = "lambda"
    credentials_hint = f"lambda: no credentials; {CREDENTIALS_HINT}"

    def __init__(
        self,
        api: JsonApi,
        *,
        url: str | None = None,
        known_regions: Callable[[], Mapping[str, Iterable[str]]] | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._api = api
        self._url = url or os.environ.get(URL_ENV) or API_URL
        self._known_regions = known_regions or bundled_regions
        self._now = now or (lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls, **options: Any) -> LambdaProvider:
        """An API client over ``requests``; MissingCredentials when LAMBDA_API_KEY is not set."""
        api = api_from_environment("lambda", "lambda", (KEY_ENV,), cls.credentials_hint, options)
        return cls(api, **options)

    @property
    def source(self) -> str:
        return "Lambda Cloud API (live)"

    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        result = FetchResult()
        payload = self._api.get(self._url)
        data = payload.get("data")
        if not isinstance(data, dict):
            # An error object or a changed format: fail the provider so its previous catalog stays.
            raise ProviderError("lambda: the instance-types answer has no 'data' object")
        checked_at = self._now().isoformat(timespec="seconds")
        types, bad, cpu_only = parse_instance_types(data)
        result.rejected.extend(bad)
        # The API lists only regions with capacity now: where else a type is sold comes from the current catalog.
        known = regions_by_type(previous) if previous else {k: set(v) for k, v in self._known_regions().items()}
        sold = {t.name: sold_in(t.capacity, known.get(t.name, ())) for t in types}
        # Regions the catalog had are refreshed too, so a type Lambda no longer lists leaves them.
        everywhere = sorted(set().union(*sold.values(), *known.values()))
        wanted = list(regions) if regions else everywhere
        result.regions = wanted
        hook = progress or ProgressHook()
        hook.start(self.name, len(wanted))
        for region in wanted:
            result.rows.extend(self._row(t, region, checked_at) for t in types if region in sold[t.name])
            hook.advance(self.name, region, True)
        with_capacity = sum(1 for t in types if t.capacity & set(wanted))
        result.notes.append(
            f"lambda: {with_capacity} of {len(types)} GPU instance types had capacity in the asked regions at "
            f"{checked_at}" + (f"; {cpu_only} CPU-only types skipped" if cpu_only else "")
        )
        return result

    def _row(self, offer: InstanceType, region: str, checked_at: str) -> RawOffer:
        row = blank_row(self.name)
        spec = gpu_table().get(offer.gpu)
        row.update(
            {
                "instance_type": offer.name,
                "region": region,
                "gpu": offer.gpu,
                "gpu_count": offer.gpu_count,
                "gpu_memory_gib": spec.memory_gib if spec is not None else None,
                "vcpus": offer.vcpus,
                "ram_gib": offer.ram_gib,
                "price_usd_per_hour": offer.price_usd_per_hour,
                "price_source": self.source,
                "as_of": checked_at,
                "available_now": "true" if region in offer.capacity else "false",
                "available_checked_at": checked_at,
            }
        )
        apply_family(row, family_facts(self.name, offer.name))
        if region == REGION_UNKNOWN:
            add_flag(row, UNKNOWN_FLAG)
        settle_availability(row)
        return row
