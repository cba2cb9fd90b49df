"""Azure adapter: the Retail Prices REST API through `responses`, Resource SKUs as real SDK model objects."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
import responses

from planner.providers.azure import AzureProvider, SizeSpec
from providers.provider_fakes import NOW, load

BASE = "https://prices.example.test/api/retail/prices"
NC, ND = "Standard_NC24ads_A100_v4", "Standard_ND96isr_H100_v5"


class RetailPrices:
    """A local Retail Prices API: pages per region from the fixture, with injectable faults per region."""

    def __init__(self, faults: dict[str, list[Any]] | None = None, pages: dict[str, list[Any]] | None = None) -> None:
        self.pages = pages if pages is not None else load("azure_retail_prices.json")
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.filters: list[str] = []

    def __call__(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        query = parse_qs(urlparse(str(request.url)).query)
        text = query["$filter"][0]
        if text == "page2":
            return 200, {}, json.dumps(self.pages["eastus"][1])
        self.filters.append(text)
        found = re.search(r"armRegionName eq '([a-z0-9]+)'", text)
        assert found is not None, text
        region = found.group(1)
        fault = self.faults.get(region, []).pop(0) if self.faults.get(region) else None
        if isinstance(fault, BaseException):
            raise fault
        if isinstance(fault, int):
            return fault, {}, json.dumps({"Error": "injected"})
        if isinstance(fault, str):
            return 200, {}, fault
        return 200, {}, json.dumps(self.pages.get(region, [{"Items": [], "NextPageLink": None}])[0])


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def _serve(api: responses.RequestsMock, prices: RetailPrices) -> None:
    api.add_callback(responses.GET, re.compile(re.escape(BASE) + r".*"), callback=prices)


def _known() -> dict[str, SizeSpec]:
    return {
        NC: SizeSpec(NC, "A100-PCIe-80GB", 1, 24, 220.0, frozenset({"eastus", "westus2"}), "pcie"),
        ND: SizeSpec(ND, "H100-SXM", 8, 96, 1900.0, frozenset({"eastus"}), "nvswitch", 3200.0),
    }


def _provider(**options: Any) -> AzureProvider:
    options.setdefault("known_sizes", _known)
    return AzureProvider(
        requests.Session(), base_url=BASE, backoff_s=0.001, max_backoff_s=0.002, attempts=4, now=lambda: NOW, **options
    )


def _skus() -> list[Any]:
    from azure.mgmt.compute.models import ResourceSku

    return [ResourceSku(entry) for entry in load("azure_resource_skus.json")["value"]]


def _rows(result: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["instance_type"], r["region"]): r for r in result.rows}


def test_prices_without_credentials_use_bundled_specs(api: responses.RequestsMock) -> None:
    prices = RetailPrices()
    _serve(api, prices)
    result = _provider(
        credentials_note="azure: no AZURE_SUBSCRIPTION_ID, so VM specs came from the bundled table"
    ).fetch()
    rows = _rows(result)
    nc = rows[(NC, "eastus")]
    # The newest Linux pay-as-you-go meter; Spot is spot; Low Priority, Windows and Dev/Test are not read.
    assert (nc["price_usd_per_hour"], nc["spot_price_usd_per_hour"]) == (3.71, 0.52)
    assert (nc["gpu"], nc["gpu_count"], nc["vcpus"]) == ("A100-PCIe-80GB", 1, 24)
    assert "specs_from_bundled" in nc["flags"]
    assert "bundled table" in nc["price_source"]
    # Found on the second page (NextPageLink followed); the CloudServices meter is not a VM price.
    nd = rows[(ND, "eastus")]
    assert (nd["price_usd_per_hour"], nd["spot_price_usd_per_hour"], nd["availability"]) == (98.1, None, "on-demand")
    assert rows[(NC, "westus2")]["spot_price_usd_per_hour"] == 0.61
    assert any("specs came from the bundled table" in n for n in result.notes)
    east = next(f for f in prices.filters if "'eastus'" in f)
    assert east == (
        "serviceName eq 'Virtual Machines' and (priceType eq 'Consumption' or priceType eq 'Reservation')"
        f" and armRegionName eq 'eastus' and (armSkuName eq '{NC}' or armSkuName eq '{ND}')"
    )


def test_resource_skus_give_sizes_regions_and_gpu_counts(api: responses.RequestsMock) -> None:
    _serve(api, RetailPrices())
    result = _provider(resource_skus=_skus).fetch()
    rows = _rows(result)
    assert sorted(rows) == [(NC, "eastus"), (NC, "westus2"), (ND, "eastus")]  # japaneast is restricted
    nd = rows[(ND, "eastus")]
    assert (nd["gpu"], nd["gpu_count"], nd["vcpus"], nd["ram_gib"]) == ("H100-SXM", 8.0, 96, 1900.0)
    assert nd["interconnect"] == "nvswitch"  # from the family table: the API gives no GPU model or link
    assert "specs_from_bundled" not in nd["flags"]
    reasons = {r.instance_type: r.reason for r in result.rejected}
    assert "GPU model unknown" in reasons["Standard_NG8ads_V620_v1"]
    assert "Standard_D2s_v5" not in reasons


def test_resource_skus_refused_falls_back_to_bundled_specs(api: responses.RequestsMock) -> None:
    from azure.core.exceptions import ClientAuthenticationError

    def refused() -> list[Any]:
        raise ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token")

    _serve(api, RetailPrices())
    result = _provider(resource_skus=refused).fetch(["eastus"])
    assert any("Resource SKUs failed (ClientAuthenticationError" in n and "az login" in n for n in result.notes)
    assert {r["instance_type"] for r in result.rows} == {NC, ND}


@pytest.mark.parametrize(
    "faults",
    [[429, 429], [500, 503], [requests.exceptions.ConnectTimeout("slow"), requests.exceptions.ReadTimeout("slow")]],
    ids=["throttling", "5xx", "timeouts"],
)
def test_transient_errors_are_retried(api: responses.RequestsMock, faults: list[Any]) -> None:
    _serve(api, RetailPrices({"westus2": faults}))
    result = _provider().fetch(["westus2"])
    assert result.failures == []
    assert _rows(result)[(NC, "westus2")]["price_usd_per_hour"] == 3.9


def test_one_region_failing_keeps_the_others(api: responses.RequestsMock) -> None:
    _serve(api, RetailPrices({"westus2": [503] * 10}))
    result = _provider().fetch(["eastus", "westus2"])
    assert [(f.region, f.reason) for f in result.failures] == [
        ("westus2", "TransientHttpError: HTTP 503 from the Retail Prices API")
    ]
    assert {r["region"] for r in result.rows} == {"eastus"}


def test_client_errors_are_not_retried(api: responses.RequestsMock) -> None:
    prices = RetailPrices({"westus2": [400, 400]})
    _serve(api, prices)
    result = _provider().fetch(["westus2"])
    assert "400" in result.failures[0].reason
    assert len(prices.filters) == 1


def test_malformed_price_and_empty_page_are_rejected_per_size(api: responses.RequestsMock) -> None:
    pages = load("azure_retail_prices.json")
    pages["westus2"][0]["Items"][0]["retailPrice"] = "3,90"
    pages["eastus"] = [{"Items": [], "NextPageLink": None, "Count": 0}]
    _serve(api, RetailPrices(pages=pages))
    result = _provider().fetch(["eastus", "westus2"])
    reasons = {(r.instance_type, r.region): r.reason for r in result.rejected}
    assert reasons[(NC, "westus2")] == "malformed retailPrice '3,90' on meter 'NC24ads A100 v4'"
    assert reasons[(NC, "eastus")].startswith("no Linux pay-as-you-go price")
    assert result.rows == []
    assert result.failures == []


def test_an_answer_without_items_fails_the_region(api: responses.RequestsMock) -> None:
    _serve(api, RetailPrices({"westus2": ['{"Error": {"Code": "Throttled"}}']}))
    result = _provider().fetch(["westus2"])
    assert "no Items list" in result.failures[0].reason


def test_base_url_from_environment(monkeypatch: pytest.MonkeyPatch, api: responses.RequestsMock) -> None:
    monkeypatch.setenv("GPUPLAN_AZURE_PRICES_URL", BASE)
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    _serve(api, RetailPrices())
    provider = AzureProvider.from_environment(known_sizes=_known, backoff_s=0.001)
    result = provider.fetch(["westus2"])
    assert _rows(result)[(NC, "westus2")]["price_usd_per_hour"] == 3.9
    assert any("az login" in n for n in result.notes)


def test_without_credentials_the_sizes_come_from_the_current_catalog(api: responses.RequestsMock) -> None:
    from factories import make_offer

    _serve(api, RetailPrices())
    provider = AzureProvider(requests.Session(), base_url=BASE, backoff_s=0.001, now=lambda: NOW)
    previous = make_offer(
        provider="azure",
        instance_type=NC,
        region="westus2",
        zone="",
        gpu="A100-PCIe-80GB",
        gpu_count=1.0,
        gpu_memory_gib=80.0,
        vcpus=24,
        ram_gib=220.0,
        interconnect="pcie",
        network_gbps=None,
    )
    result = provider.fetch(previous=[previous])
    assert result.regions == ["westus2"]
    assert [(r["instance_type"], r["price_usd_per_hour"], r["ram_gib"]) for r in result.rows] == [(NC, 3.9, 220.0)]


def test_without_anything_known_the_bundled_file_lists_the_sizes() -> None:
    from planner.providers.azure import bundled_sizes

    sizes = bundled_sizes()
    assert sizes, "data/catalog/azure.csv lists Azure GPU sizes"
    assert all(spec.regions and spec.gpu_count > 0 for spec in sizes.values())


def test_with_a_subscription_resource_skus_come_from_the_sdk_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", "00000000-0000-0000-0000-000000000000")
    provider = AzureProvider.from_environment(timeout_s=5, attempts=2)
    assert provider._resource_skus is not None
    assert provider._credentials_note is None
