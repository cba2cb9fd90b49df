"""Builders of real-shaped cloud responses with the project's own values, and injection helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.awsrequest import HTTPHeaders
from botocore.config import Config
from botocore.stub import Stubber

DATA = Path(__file__).resolve().parents[1] / "data" / "providers"
NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)


def load(name: str) -> Any:
    """A fixture file of tests/data/providers."""
    return json.loads((DATA / name).read_text(encoding="utf-8"))


# -- AWS --------------------------------------------------------------------------------------------
def instance_type(
    name: str,
    gpu: str,
    count: int,
    memory_mib: int,
    vcpus: int,
    ram_mib: int,
    *,
    partition: float = 1.0,
    cards: int = 1,
    card_gbps: float = 25.0,
    manufacturer: str = "NVIDIA",
) -> dict[str, Any]:
    """One DescribeInstanceTypes entry with GpuInfo, in the service's shape."""
    return {
        "InstanceType": name,
        "CurrentGeneration": True,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": ram_mib},
        "NetworkInfo": {
            "NetworkPerformance": f"{card_gbps * cards:g} Gigabit",
            "NetworkCards": [
                {"NetworkCardIndex": i, "PeakBandwidthInGbps": card_gbps, "BaselineBandwidthInGbps": card_gbps}
                for i in range(cards)
            ],
        },
        "GpuInfo": {
            "Gpus": [
                {
                    "Name": gpu,
                    "Manufacturer": manufacturer,
                    "Count": count,
                    "LogicalGpuCount": max(count, 1),
                    "GpuPartitionSize": partition,
                    "MemoryInfo": {"SizeInMiB": memory_mib},
                }
            ],
            "TotalGpuMemoryInMiB": memory_mib * max(count, 1),
        },
    }


CPU_TYPE = {
    "InstanceType": "c7i.large",
    "VCpuInfo": {"DefaultVCpus": 2},
    "MemoryInfo": {"SizeInMiB": 4096},
    "NetworkInfo": {"NetworkPerformance": "Up to 12.5 Gigabit"},
}


def price_item(instance_type: str, region: str, usd: str, usage: str = "BoxUsage") -> str:
    """One Pricing API PriceList entry, as the JSON string GetProducts returns."""
    sku = f"SKU{abs(hash((instance_type, region))) % 10**8:08d}"
    rate = f"{sku}.JRTCKXETXF"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": region,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "licenseModel": "No License required",
                    "usagetype": f"{usage}:{instance_type}",
                    "marketoption": "OnDemand",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    rate: {
                        "priceDimensions": {
                            f"{rate}.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "beginRange": "0",
                                "appliesTo": [],
                                "rateCode": f"{rate}.6YS6EN2CT7",
                                "description": f"Linux {instance_type} hour",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def boto_client(service: str, region: str) -> Any:
    """A real botocore client that never reaches the network (Stubber or moto answer it); tiny retry budget."""
    return boto3.client(  # type: ignore[call-overload]
        service,
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=1, read_timeout=1),
    )


class StubbedAws:
    """One stubbed EC2 client per region and one Pricing client, handed out by ``factory``."""

    def __init__(self, regions: list[str], pricing: PricingEndpoint | None = None) -> None:
        self.clients: dict[tuple[str, str], Any] = {}
        self.stubs: dict[tuple[str, str], Stubber] = {}
        for region in regions:
            self._add("ec2", region)
        if pricing is None:
            self._add("pricing", "us-east-1")
        else:
            self.clients[("pricing", "us-east-1")] = pricing.client

    def _add(self, service: str, region: str) -> None:
        client = boto_client(service, region)
        self.clients[(service, region)] = client
        stub = Stubber(client)
        stub.activate()
        self.stubs[(service, region)] = stub

    def ec2(self, region: str) -> Stubber:
        return self.stubs[("ec2", region)]

    @property
    def pricing(self) -> Stubber | None:
        return self.stubs.get(("pricing", "us-east-1"))

    def factory(self, service: str, region: str) -> Any:
        return self.clients[(service, region)]

    def assert_done(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


def stub_region(
    aws: StubbedAws,
    region: str,
    types: list[dict[str, Any]],
    offered: dict[str, list[str]],
    spot: list[tuple[Any, ...]],
    prices: dict[str, list[str]] | None = None,
    zones: dict[str, str] | None = None,
) -> None:
    """Queue one region's EC2 answers (instance types in two pages, AZs, offerings, spot) and its prices."""
    ec2 = aws.ec2(region)
    half = max(1, len(types) // 2)
    ec2.add_response("describe_instance_types", {"InstanceTypes": types[:half], "NextToken": "page2"})
    ec2.add_response("describe_instance_types", {"InstanceTypes": types[half:]})
    gpu_names = [t["InstanceType"] for t in types if "GpuInfo" in t]
    if not gpu_names:
        return
    zones = zones or {f"{region}a": f"{region[:2]}{region[-1]}-az1", f"{region}b": f"{region[:2]}{region[-1]}-az2"}
    ec2.add_response(
        "describe_availability_zones",
        {"AvailabilityZones": [{"ZoneName": n, "ZoneId": i, "RegionName": region} for n, i in zones.items()]},
    )
    ec2.add_response(
        "describe_instance_type_offerings",
        {
            "InstanceTypeOfferings": [
                {"InstanceType": t, "LocationType": "availability-zone-id", "Location": z}
                for t, azs in offered.items()
                for z in azs
            ]
        },
        {
            "LocationType": "availability-zone-id",
            "Filters": [{"Name": "instance-type", "Values": sorted(gpu_names)}],
        },
    )
    ec2.add_response(
        "describe_spot_price_history",
        {
            "SpotPriceHistory": [
                {
                    "AvailabilityZone": zone,
                    "InstanceType": t,
                    "ProductDescription": "Linux/UNIX",
                    "SpotPrice": price,
                    "Timestamp": stamp,
                }
                for t, zone, price, stamp in ((*s[:3], s[3] if len(s) > 3 else NOW) for s in spot)
            ]
        },
    )
    if aws.pricing is not None and prices is not None:
        for name in sorted(offered):
            aws.pricing.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": prices.get(name, [])})


def aws_provider(factory: Callable[[str, str], Any], **options: Any) -> Any:
    """An AwsProvider on injected clients, a fixed clock, no Spot Advisor feed and no pricing rate limit."""
    from planner.providers.aws import AwsProvider

    options.setdefault("spot_advisor", lambda: load("aws_spot_advisor.json"))
    options.setdefault("pricing_calls_per_s", None)
    return AwsProvider(factory, now=lambda: NOW, **options)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


class PricingEndpoint:
    """A local Pricing API behind a real botocore client: answers GetProducts inside botocore's retry loop.

    ``faults`` is a queue of what the next requests get instead of an answer: "throttle" (HTTP 400
    ThrottlingException), "5xx" (HTTP 503), "timeout" (a read timeout) or "auth" (expired token).
    """

    def __init__(self, prices: dict[tuple[str, str], list[str]], faults: list[str] | None = None) -> None:
        from botocore.awsrequest import AWSResponse
        from botocore.exceptions import ReadTimeoutError

        self.prices = prices
        self.faults = list(faults or [])
        self.requests: list[dict[str, Any]] = []
        self._response = AWSResponse
        self._timeout = ReadTimeoutError
        self.client = boto_client("pricing", "us-east-1")
        self.client.meta.events.register("before-send.pricing.GetProducts", self._answer)

    def _reply(self, status: int, payload: dict[str, Any]) -> Any:
        body = json.dumps(payload).encode()
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.1"
        headers["x-amzn-RequestId"] = "test"
        return self._response("https://api.pricing.us-east-1.amazonaws.com/", status, headers, _Raw(body))

    def _answer(self, request: Any, **_: Any) -> Any:
        payload = json.loads(request.body)
        self.requests.append(payload)
        fault = self.faults.pop(0) if self.faults else None
        if fault == "throttle":
            return self._reply(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
        if fault == "5xx":
            return self._reply(503, {"__type": "ServiceUnavailableException", "message": "try again"})
        if fault == "timeout":
            raise self._timeout(endpoint_url=request.url)
        if fault == "auth":
            return self._reply(400, {"__type": "ExpiredTokenException", "message": "The security token expired"})
        terms = {f["Field"]: f["Value"] for f in payload["Filters"]}
        items = self.prices.get((terms["instanceType"], terms["regionCode"]), [])
        return self._reply(200, {"FormatVersion": "aws_v1", "PriceList": items})


# -- Google Cloud -----------------------------------------------------------------------------------
class FakeComputeList:
    """A MachineTypesClient / AcceleratorTypesClient double: real proto-plus messages behind the SDK's real pager.

    ``faults`` are exceptions raised by the next calls, before the answer.
    """

    def __init__(self, kind: str, payload: dict[str, Any], faults: list[BaseException] | None = None) -> None:
        from google.cloud import compute_v1

        self.kind = kind
        self.payload = payload
        self.faults = list(faults or [])
        self.calls = 0
        self._pager: Any
        if kind == "machine_types":
            from google.cloud.compute_v1.services.machine_types import pagers

            self._message, self._request, self._pager = (
                compute_v1.MachineTypeAggregatedList,
                compute_v1.AggregatedListMachineTypesRequest,
                pagers.AggregatedListPager,
            )
        else:
            from google.cloud.compute_v1.services.accelerator_types import pagers as accelerator_pagers

            self._message, self._request, self._pager = (
                compute_v1.AcceleratorTypeAggregatedList,
                compute_v1.AggregatedListAcceleratorTypesRequest,
                accelerator_pagers.AggregatedListPager,
            )

    def aggregated_list(self, *, project: str, timeout: float | None = None, **_: Any) -> Any:
        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        response = self._message.from_json(json.dumps(self.payload), ignore_unknown_fields=True)
        return self._pager(method=self._fail_next_page, request=self._request(project=project), response=response)

    @staticmethod
    def _fail_next_page(*_: Any, **__: Any) -> Any:
        raise AssertionError("the fixture is one page")


class FakeCatalog:
    """A CloudCatalogClient double: pages of real ``ListSkusResponse`` messages behind the SDK's ListSkusPager."""

    def __init__(self, pages: list[dict[str, Any]], faults: list[BaseException] | None = None) -> None:
        from google.cloud import billing_v1

        self.pages = [billing_v1.ListSkusResponse.from_json(json.dumps(p), ignore_unknown_fields=True) for p in pages]
        self.faults = list(faults or [])
        self.page_requests: list[str] = []
        self.calls = 0

    def _page(self, request: Any, **_: Any) -> Any:
        self.page_requests.append(request.page_token)
        index = int(request.page_token.rsplit("-", 1)[-1]) - 1 if request.page_token else 0
        return self.pages[index]

    def list_skus(self, *, parent: str, timeout: float | None = None, **_: Any) -> Any:
        from google.cloud import billing_v1
        from google.cloud.billing_v1.services.cloud_catalog import pagers

        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        request = billing_v1.ListSkusRequest(parent=parent)
        return pagers.ListSkusPager(method=self._page, request=request, response=self._page(request))


def gcp_provider(
    machine_faults: list[BaseException] | None = None,
    sku_faults: list[BaseException] | None = None,
    sku_pages: list[dict[str, Any]] | None = None,
    machines: dict[str, Any] | None = None,
) -> Any:
    """A GcpProvider on fakes built from tests/data/providers, with a fast real google-api-core Retry."""
    from planner.providers.gcp import GcpProvider, default_retry

    return GcpProvider(
        FakeComputeList("machine_types", machines or load("gcp_machine_types.json"), machine_faults),
        FakeComputeList("accelerator_types", load("gcp_accelerator_types.json")),
        FakeCatalog(sku_pages if sku_pages is not None else load("gcp_skus_pages.json")["pages"], sku_faults),
        project="test-project",
        retry=default_retry(initial_s=0.001, maximum_s=0.002, deadline_s=5),
        now=lambda: NOW,
    )


# -- Lambda and DigitalOcean (plain HTTPS APIs, served through `responses`) --------------------------------
LAMBDA_URL = "https://lambda.test/api/v1/instance-types"
DO_URL = "https://do.test/v2/sizes"
# Where the catalog knew each Lambda type before a refresh (the API adds the regions with capacity now).
LAMBDA_KNOWN = {"gpu_8x_h100_sxm5": {"us-east-1"}, "gpu_1x_h100_pcie": {"europe-central-1"}}


class ScriptedApi:
    """A `responses` callback answering from a list of replies (status, body) before the normal one."""

    def __init__(self, answer: Callable[[Any], tuple[int, dict[str, str], str]], faults: list[Any] | None = None):
        self.answer = answer
        self.faults = list(faults or [])
        self.calls: list[Any] = []

    def __call__(self, request: Any) -> tuple[int, dict[str, str], str]:
        self.calls.append(request)
        if self.faults:
            fault = self.faults.pop(0)
            if isinstance(fault, BaseException):
                raise fault
            status, body = fault
            headers = {"Retry-After": "0"} if status == 429 else {}
            return status, headers, body if isinstance(body, str) else json.dumps(body)
        return self.answer(request)


def lambda_answer(request: Any) -> tuple[int, dict[str, str], str]:
    """The recorded-shape instance-types reply."""
    assert request.headers["Authorization"] == "Bearer test-key"
    return 200, {}, json.dumps(load("lambda_instance_types.json"))


def do_answer(request: Any) -> tuple[int, dict[str, str], str]:
    """Two pages of the Sizes API, chosen by the `page` query parameter."""
    from urllib.parse import parse_qs, urlparse

    assert request.headers["Authorization"] == "Bearer test-token"
    query = parse_qs(urlparse(str(request.url)).query)
    pages = load("digitalocean_sizes_pages.json")
    return 200, {}, json.dumps(pages["page2"] if query.get("page") == ["2"] else pages["page1"])


def lambda_provider(**options: Any) -> Any:
    """The real Lambda adapter on a plain requests session, fast retries, fixed clock and region list."""
    import requests

    from planner.providers.http import JsonApi
    from planner.providers.lambda_cloud import CREDENTIALS_HINT, LambdaProvider

    api = JsonApi("lambda", "lambda", requests.Session(), "test-key", CREDENTIALS_HINT, backoff_s=0.001, attempts=3)
    options.setdefault("known_regions", lambda: LAMBDA_KNOWN)
    return LambdaProvider(api, url=LAMBDA_URL, now=lambda: NOW, **options)


def paperspace_provider(**options: Any) -> Any:
    """The real DigitalOcean adapter on a plain requests session, fast retries and a fixed clock."""
    import requests

    from planner.providers.http import JsonApi
    from planner.providers.paperspace import CREDENTIALS_HINT, PaperspaceProvider

    api = JsonApi(
        "paperspace", "paperspace", requests.Session(), "test-token", CREDENTIALS_HINT, backoff_s=0.001, attempts=3
    )
    return PaperspaceProvider(api, url=DO_URL, now=lambda: NOW, **options)
