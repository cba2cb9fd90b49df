"""AWS: GPU instance types from EC2, on-demand prices from the Pricing API, spot prices per AZ, Spot Advisor buckets.

boto3 is imported only inside ``AwsProvider.from_environment``; the provider itself talks to whatever clients
its factory returns (real boto3 clients, Stubber-wrapped ones, moto-backed ones or local fakes).
"""

from __future__ import annotations

import csv
import json
import os
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, cast

from planner._data import data_dir
from planner.catalog.schema import SPOT_INTERRUPTION_BUCKETS, Offer, RawOffer
from planner.catalog.validate import Rejected
from planner.errors import MissingCredentials, ProviderError
from planner.hardware import gpu_table
from planner.providers.aws_commitments import reserved_commitments
from planner.providers.base import (
    DEFAULT_WORKERS,
    FetchResult,
    ProgressHook,
    Provider,
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
from planner.providers.http import MAX_BODY_BYTES

ClientFactory = Callable[[str, str], Any]

# The Pricing API is served from us-east-1 only (also eu-central-1 and ap-south-1); the price list covers all regions.
PRICING_REGION = "us-east-1"
SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
SPOT_ADVISOR_ENV = "GPUPLAN_AWS_SPOT_ADVISOR_URL"
# Error codes meaning "these credentials do not work", as opposed to a failing region.
AUTH_ERROR_CODES = frozenset(
    {
        "AuthFailure",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "AccessDeniedException",
    }
)
CREDENTIALS_HINT = (
    "set AWS_PROFILE (after `aws configure` or `aws sso login`) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
)
# The product attributes of the plain on-demand Linux list price (both the Pricing API and the bulk files).
LIST_PRICE_ATTRIBUTES = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
}
# Filter-list sizes: DescribeInstanceTypeOfferings and DescribeSpotPriceHistory take at most this many values per call.
TYPES_PER_CALL = 100


class CredentialsRejected(Exception):
    """A region refused the credentials (expired session, wrong keys) rather than failing."""


def _error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _is_auth_error(exc: BaseException) -> bool:
    return _error_code(exc) in AUTH_ERROR_CODES or type(exc).__name__ in (
        "NoCredentialsError",
        "PartialCredentialsError",
    )


class RateLimiter:
    """At most ``rate`` calls per second across all threads (the Pricing API throttles hard above a few per second)."""

    def __init__(self, rate: float | None) -> None:
        self._interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Block until the next call may go."""
        if not self._interval:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self._interval
        if slot > now:
            time.sleep(slot - now)


def fetch_spot_advisor(
    url: str | None = None, timeout_s: float = 10.0, limit_bytes: int = MAX_BODY_BYTES
) -> dict[str, Any]:
    """The public Spot Advisor feed (no credentials needed); ``GPUPLAN_AWS_SPOT_ADVISOR_URL`` redirects it.
    Read up to ``limit_bytes`` (the feed is about 4 MB), ProviderError past it."""
    target = url or os.environ.get(SPOT_ADVISOR_ENV) or SPOT_ADVISOR_URL
    with urllib.request.urlopen(target, timeout=timeout_s) as response:
        body = response.read(limit_bytes + 1)
    if len(body) > limit_bytes:
        raise ProviderError(f"aws: the Spot Advisor feed is larger than {limit_bytes / 2**20:g} MiB; gave up")
    data: dict[str, Any] = json.loads(body.decode("utf-8"))
    return data


def advisor_buckets(feed: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(instance type, region) -> interruption bucket, for Linux, from the Spot Advisor feed."""
    labels = {r.get("index"): r.get("label") for r in feed.get("ranges") or [] if isinstance(r, Mapping)}
    labels = labels or dict(enumerate(SPOT_INTERRUPTION_BUCKETS))
    out: dict[tuple[str, str], str] = {}
    for region, by_os in (feed.get("spot_advisor") or {}).items():
        for instance_type, entry in (by_os.get("Linux") or {}).items():
            label = labels.get(entry.get("r")) if isinstance(entry, Mapping) else None
            if label in SPOT_INTERRUPTION_BUCKETS:  # an unknown range index is left out, never guessed
                out[(instance_type, region)] = str(label)
    return out


def buckets_of(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(instance type, region) -> interruption bucket of catalog rows."""
    return {
        (str(row["instance_type"]), str(row["region"])): str(row["spot_interruption"])
        for row in rows
        if row.get("spot_interruption")
    }


def bundled_buckets() -> dict[tuple[str, str], str]:
    """(instance type, region) -> interruption bucket from the bundled AWS catalog file."""
    path = data_dir() / "catalog" / "aws.csv"
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        return buckets_of(csv.DictReader(handle))


def network_gbps(info: Mapping[str, Any]) -> float | None:
    """Instance network bandwidth: the sum of its network cards' peaks, else the 'NetworkPerformance' text."""
    network = info.get("NetworkInfo") or {}
    cards = [
        c.get("PeakBandwidthInGbps") or c.get("BaselineBandwidthInGbps") for c in network.get("NetworkCards") or []
    ]
    if cards and all(isinstance(c, int | float) for c in cards):
        return float(sum(cards))
    match = re.search(r"([\d.]+)\s*Gigabit", str(network.get("NetworkPerformance") or ""))
    return float(match.group(1)) if match else None


class PricingReplyError(Exception):
    """A Pricing API reply that cannot be read (truncated, malformed): the whole region fails, never a price.

    Not a ValueError on purpose: a ValueError rejects one instance type, this keeps the region's previous prices.
    """


def parse_price_item(item: str | Mapping[str, Any]) -> tuple[str, float]:
    """(usage type, USD per hour) of one PriceList entry, which arrives as a JSON string.

    PricingReplyError when the entry is not a readable product (truncated JSON, wrong shape); ValueError when
    it is readable but has no usable hourly price (that instance type is rejected, the region carries on).
    """
    try:
        data = json.loads(item) if isinstance(item, str) else item
    except ValueError:
        raise PricingReplyError("a PriceList entry of the Pricing API reply is not valid JSON (truncated?)") from None
    terms = data.get("terms") if isinstance(data, Mapping) else None
    product = data.get("product") if isinstance(data, Mapping) else None
    if not isinstance(terms, Mapping) or not isinstance(product, Mapping):
        raise PricingReplyError("a PriceList entry of the Pricing API reply has no product or terms")
    usage = str((product.get("attributes") or {}).get("usagetype", ""))
    for term in (terms.get("OnDemand") or {}).values():
        for dimension in (term.get("priceDimensions") or {}).values():
            if dimension.get("unit") != "Hrs":
                continue
            text = (dimension.get("pricePerUnit") or {}).get("USD")
            try:
                return usage, float(str(text))
            except (TypeError, ValueError):
                raise ValueError(f"malformed on-demand price {text!r} in the Pricing API answer") from None
    raise ValueError("no hourly on-demand price in the Pricing API answer")


class AwsProvider(Provider):
    """EC2 GPU instance types in every enabled region, priced per AZ."""

    name = "aws"
    extra = "aws"
    credentials_hint = f"aws: no usable credentials; {CREDENTIALS_HINT}"

    def __init__(
        self,
        client: ClientFactory,
        *,
        home_region: str = "us-east-1",
        spot_advisor: Callable[[], Mapping[str, Any]] | None = None,
        workers: int = DEFAULT_WORKERS,
        pricing_calls_per_s: float | None = 5.0,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._client = client
        self._home_region = home_region
        self._spot_advisor = spot_advisor
        self._workers = workers
        self._pricing_limit = RateLimiter(pricing_calls_per_s)
        self._now = now or (lambda: datetime.now(UTC))

    @classmethod
    def from_environment(
        cls,
        *,
        public: bool = False,
        retry_mode: str = "adaptive",
        max_attempts: int = 8,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 30.0,
        **options: Any,
    ) -> Provider:
        """Clients from boto3's credential chain; ``AWS_ENDPOINT_URL*`` keep working because no endpoint is set here.

        With ``public``, or when boto3 finds no credentials, the public Price List files instead (same extra).
        """
        from planner.providers.aws_public import AwsPublicProvider

        boto3 = require("boto3", "aws")
        if public:
            return AwsPublicProvider.from_environment(**options)
        session = boto3.Session()
        if session.get_credentials() is None:
            note = f"aws: no credentials found, so prices came from the public Price List files; {CREDENTIALS_HINT}"
            return AwsPublicProvider.from_environment(note=note, **options)
        config_module = require("botocore.config", "aws")
        config = config_module.Config(
            retries={"mode": retry_mode, "max_attempts": max_attempts},  # retries after the first attempt
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            max_pool_connections=DEFAULT_WORKERS * 2,
        )
        cache: dict[tuple[str, str], Any] = {}
        lock = threading.Lock()

        def client(service: str, region: str) -> Any:
            # boto3 clients are thread-safe, the session that makes them is not.
            with lock:
                if (service, region) not in cache:
                    cache[(service, region)] = session.client(service, region_name=region, config=config)
                return cache[(service, region)]

        return cls(client, home_region=session.region_name or "us-east-1", spot_advisor=fetch_spot_advisor, **options)

    @property
    def source(self) -> str:
        return "AWS Pricing API GetProducts + EC2 DescribeSpotPriceHistory (live)"

    # -- fetch ----------------------------------------------------------------------------------
    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        result = FetchResult()
        try:
            wanted = list(regions) if regions else self._regions()
        except Exception as exc:
            if _is_auth_error(exc):
                raise MissingCredentials(
                    f"aws: credentials rejected ({_error_code(exc) or type(exc).__name__}); {CREDENTIALS_HINT}"
                ) from None
            raise
        result.regions = wanted
        as_of = self._now().isoformat(timespec="seconds")
        # The Spot Advisor feed downloads while the regions are fetched; buckets are filled in afterwards.
        with ThreadPoolExecutor(max_workers=1) as pool:
            advisor = pool.submit(self._buckets, previous)
            done, failures = fetch_regions(
                self.name,
                wanted,
                lambda region: self._fetch_region(region, as_of),
                workers=self._workers,
                progress=progress,
            )
            buckets, note = advisor.result()
        if note:
            result.notes.append(note)
        if failures and not done and all(f.reason.startswith(CredentialsRejected.__name__) for f in failures):
            raise MissingCredentials(f"aws: credentials rejected in every region; {CREDENTIALS_HINT}")
        for region in wanted:
            if region in done:
                rows, bad, committed = done[region]
                result.commitments.extend(committed)
                for row in rows:
                    if row["spot_price_usd_per_hour"] is not None:
                        row["spot_interruption"] = buckets.get((str(row["instance_type"]), region))
                result.rows.extend(rows)
                result.rejected.extend(bad)
        result.failures = failures
        return result

    def _regions(self) -> list[str]:
        answer = self._client("ec2", self._home_region).describe_regions()
        return sorted(r["RegionName"] for r in answer["Regions"])

    def _buckets(self, previous: Sequence[Mapping[str, Any]]) -> tuple[dict[tuple[str, str], str], str | None]:
        if self._spot_advisor is not None:
            try:
                return advisor_buckets(self._spot_advisor()), None
            except Exception as exc:
                reason = describe_error(exc)
        else:
            reason = "not requested"
        # The current catalog's buckets first (they may be newer), then the bundled file's.
        kept = {**bundled_buckets(), **buckets_of(previous)}
        return kept, f"aws: Spot Advisor feed unavailable ({reason}); kept the bundled interruption buckets"

    def _fetch_region(self, region: str, as_of: str) -> tuple[list[RawOffer], list[Rejected], list[dict[str, Any]]]:
        try:
            return self._region_rows(region, as_of)
        except Exception as exc:
            if _is_auth_error(exc):
                raise CredentialsRejected(f"credentials rejected ({_error_code(exc) or type(exc).__name__})") from None
            raise

    def _region_rows(self, region: str, as_of: str) -> tuple[list[RawOffer], list[Rejected], list[dict[str, Any]]]:
        ec2 = self._client("ec2", region)
        types = {
            info["InstanceType"]: info
            for page in ec2.get_paginator("describe_instance_types").paginate()
            for info in page.get("InstanceTypes", [])
            if (info.get("GpuInfo") or {}).get("Gpus")
        }
        if not types:
            return [], [], []
        names = sorted(types)
        zone_ids = {z["ZoneName"]: z["ZoneId"] for z in ec2.describe_availability_zones()["AvailabilityZones"]}
        offered: dict[str, set[str]] = {}
        for group in chunks(names, TYPES_PER_CALL):
            pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone-id", Filters=[{"Name": "instance-type", "Values": group}]
            )
            for page in pages:
                for offer in page.get("InstanceTypeOfferings", []):
                    offered.setdefault(offer["InstanceType"], set()).add(offer["Location"])
        spot = self._spot_prices(ec2, sorted(offered), zone_ids)
        rows: list[RawOffer] = []
        bad: list[Rejected] = []
        committed: list[dict[str, Any]] = []
        for instance_type in sorted(offered):
            try:
                on_demand, reserved = self._prices(instance_type, region)
            except ValueError as exc:
                bad.append(rejected(self.name, instance_type, region, str(exc)))
                continue
            if reserved:
                # The same PriceList item's Reserved terms: standard reserved instances (aws_commitments).
                found, why = reserved_commitments(instance_type, region, reserved, self.source, as_of)
                committed.extend(found)
                bad.extend(why)
            base, reason = self._base_row(types[instance_type], region)
            if base is None:
                bad.append(rejected(self.name, instance_type, region, reason or "unusable GpuInfo"))
                continue
            for zone in sorted(offered[instance_type]):
                row = cast(RawOffer, dict(base))
                row.update(
                    {
                        "zone": zone,
                        "price_usd_per_hour": on_demand,
                        "spot_price_usd_per_hour": spot.get((instance_type, zone)),
                        "price_source": self.source,
                        "as_of": as_of,
                    }
                )
                settle_availability(row)
                rows.append(row)
        return rows, bad, committed

    def _base_row(self, info: Mapping[str, Any], region: str) -> tuple[RawOffer | None, str | None]:
        gpu = info["GpuInfo"]["Gpus"][0]
        partition = float(gpu.get("GpuPartitionSize") or 1.0)
        count = float(gpu.get("Count") or 0)
        if count == 0 and partition < 1.0:
            # Fractional GPUs (g6f): Count is 0 and each logical GPU is a slice of one physical GPU.
            count = partition * float(gpu.get("LogicalGpuCount") or 1)
        memory_mib = (gpu.get("MemoryInfo") or {}).get("SizeInMiB")
        # Memory is reported per slice; the hardware table knows whole GPUs.
        memory_gib = float(memory_mib) / 1024 / min(partition, 1.0) if memory_mib else None
        gpu_id, reason = resolve_gpu_name(str(gpu.get("Name", "")), memory_gib)
        if reason:
            return None, reason
        row = blank_row(self.name)
        row.update(
            {
                "instance_type": info["InstanceType"],
                "region": region,
                "gpu": gpu_id,
                "gpu_count": count,
                "gpu_memory_gib": gpu_table()[gpu_id].memory_gib,
                "vcpus": (info.get("VCpuInfo") or {}).get("DefaultVCpus"),
                "ram_gib": float((info.get("MemoryInfo") or {}).get("SizeInMiB", 0)) / 1024,
                "network_gbps": network_gbps(info),
            }
        )
        apply_family(row, family_facts(self.name, info["InstanceType"]))
        return row, None

    def _spot_prices(self, ec2: Any, names: Sequence[str], zone_ids: Mapping[str, str]) -> dict[tuple[str, str], float]:
        """(instance type, AZ ID) -> latest Linux/UNIX spot price; StartTime=now returns the price in force now."""
        latest: dict[tuple[str, str], tuple[datetime, float]] = {}
        now = self._now()
        for group in chunks(list(names), TYPES_PER_CALL):
            pages = ec2.get_paginator("describe_spot_price_history").paginate(
                InstanceTypes=group, ProductDescriptions=["Linux/UNIX"], StartTime=now
            )
            for page in pages:
                for entry in page.get("SpotPriceHistory", []):
                    zone = zone_ids.get(entry.get("AvailabilityZone", ""), entry.get("AvailabilityZoneId", ""))
                    if not zone:
                        continue
                    try:
                        price = float(entry["SpotPrice"])
                    except (KeyError, TypeError, ValueError):
                        continue  # a malformed entry; the zone then has no spot price rather than a wrong one
                    stamp = entry.get("Timestamp") or now
                    if isinstance(stamp, str):
                        stamp = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
                    key = (entry["InstanceType"], zone)
                    if key not in latest or stamp > latest[key][0]:
                        latest[key] = (stamp, price)
        return {key: price for key, (_, price) in latest.items()}

    def _price_items(self, instance_type: str, region: str) -> Iterator[str]:
        pricing = self._client("pricing", PRICING_REGION)
        filters = [
            {"Type": "TERM_MATCH", "Field": field, "Value": value}
            for field, value in {"instanceType": instance_type, "regionCode": region, **LIST_PRICE_ATTRIBUTES}.items()
        ]
        token: str | None = None
        seen: set[str] = set()
        while True:
            self._pricing_limit.wait()
            kwargs: dict[str, Any] = {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1"}
            if token:
                kwargs["NextToken"] = token
            page = pricing.get_products(**kwargs)
            # botocore turns an unparseable body into {"message": <body>}: without a PriceList list the reply was
            # truncated or malformed, which must fail the region rather than read as "no on-demand price".
            items = page.get("PriceList") if isinstance(page, Mapping) else None
            if not isinstance(items, list):
                raise PricingReplyError(f"the Pricing API reply for {instance_type} has no PriceList (truncated?)")
            yield from items
            token = page.get("NextToken")
            if not token:
                return
            if token in seen:  # a repeated page token would loop for ever
                raise PricingReplyError(f"the Pricing API repeated a page token for {instance_type}")
            seen.add(token)

    def _prices(self, instance_type: str, region: str) -> tuple[float | None, Mapping[str, Any]]:
        """USD/hour on demand (None when AWS publishes none: an empty PriceList) and the list price item's
        ``terms.Reserved`` entry (empty when it has none).

        ValueError when the price itself is malformed (that type is rejected); PricingReplyError when the reply
        cannot be read (the region fails and keeps its previous prices).
        """
        prices = [(parse_price_item(item), item) for item in self._price_items(instance_type, region)]
        if not prices:
            return None, {}
        # Several items can match (e.g. a BoxUsage and a reserved-host usage type); the BoxUsage one is the list price.
        box = [(price, item) for (usage, price), item in prices if "BoxUsage" in usage]
        price, item = (box or [(price, item) for (_, price), item in prices])[0]
        data = json.loads(item) if isinstance(item, str) else item  # parse_price_item has read it once already
        reserved = data["terms"].get("Reserved") or {}
        return price, reserved if isinstance(reserved, Mapping) else {}
