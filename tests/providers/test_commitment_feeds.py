"""Commitment prices from each cloud's live feed, through the same seams as the offerings, and into the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import planner.api as api
from planner.catalog.commitments import validate_commitments
from planner.catalog.store import CatalogStore
from planner.refresh import refresh_provider
from providers.provider_fakes import gcp_provider, load
from providers.test_provider_gcp import _sku


def _gcp_commit_skus() -> list[dict[str, Any]]:
    """Commit1Yr/Commit3Yr SKUs of an A2 host and an A100 in the Billing Catalog's shape (descriptions as Google
    writes them, prices illustrative), and one malformed SKU (a GPU commitment priced per month, not per hour)."""
    regions = ["us-central1"]
    return [
        _sku("C1", "Commitment v1: A2 Cpu in Americas for 1 Year", "Commit1Yr", 0.02, regions, group="CPU"),
        _sku("C2", "Commitment v1: A2 Ram in Americas for 1 Year", "Commit1Yr", 0.0027, regions, "RAM", "GiBy.h"),
        _sku("C3", "Commitment v1: Nvidia Tesla A100 GPU in Americas for 1 Year", "Commit1Yr", 1.8, regions),
        _sku("C4", "Commitment v1: A2 Cpu in Americas for 3 Years", "Commit3Yr", 0.01, regions, group="CPU"),
        _sku("C5", "Commitment v1: A2 Ram in Americas for 3 Years", "Commit3Yr", 0.0013, regions, "RAM", "GiBy.h"),
        _sku(
            "C6", "Commitment v1: Nvidia Tesla A100 GPU in Americas for 3 Years", "Commit3Yr", 900.0, regions, unit="mo"
        ),
    ]


def _gcp_pages() -> list[dict[str, Any]]:
    pages = load("gcp_skus_pages.json")["pages"]
    # The fixture's own A2 Cpu commitment SKU (us-central1, us-east1) is replaced by the full set above.
    first = [
        s
        for s in pages[0]["skus"]
        if s["category"]["usageType"] == "OnDemand" or "Commit" not in s["category"]["usageType"]
    ]
    return [dict(pages[0], skus=_gcp_commit_skus() + first), *pages[1:]]


def test_gcp_committed_use_prices_sum_host_and_gpus() -> None:
    result = gcp_provider(sku_pages=_gcp_pages()).fetch(["us-central1"])
    found = {(c["instance_type"], c["term_years"]): c for c in result.commitments}
    one = found[("a2-highgpu-1g", 1)]
    # 12 vCPU x 0.02 + 85 GiB x 0.0027 + 1 A100 x 1.8 = 0.24 + 0.2295 + 1.8.
    assert one["hourly_usd_per_hour"] == pytest.approx(2.2695)
    assert (one["commitment"], one["payment"], one["upfront_usd"], one["region"]) == (
        "cud",
        "no-upfront",
        0.0,
        "us-central1",
    )
    assert found[("a2-highgpu-8g", 1)]["hourly_usd_per_hour"] == pytest.approx(96 * 0.02 + 680 * 0.0027 + 8 * 1.8)
    # The 3-year GPU SKU is priced per month: that term is left out and said, the 1-year one and the offerings stand.
    assert ("a2-highgpu-1g", 3) not in found
    assert any("commitment term_years 3" in r.reason for r in result.rejected if r.instance_type == "a2-highgpu-1g")
    assert any("C6" in note for note in result.notes)
    a2 = next(r for r in result.rows if (r["instance_type"], r["region"]) == ("a2-highgpu-1g", "us-central1"))
    assert a2["price_usd_per_hour"] == pytest.approx(3.535)  # the on-demand price is untouched
    assert not validate_commitments(result.commitments).rejected


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_refresh_stores_commitments_with_its_snapshot(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    path: Path | str = tmp_path / "catalog.sqlite"
    if backend == "postgresql":
        import postgres_server

        path = postgres_server.new_schema(request.getfixturevalue("postgres_url"))
    with CatalogStore(path) as store:
        before = store.current_snapshots()
        report = refresh_provider(gcp_provider(sku_pages=_gcp_pages()), store, regions=["us-central1"])
        assert report.snapshot_id is not None
        # The prices belong to the new snapshot; the bundled one it replaced keeps its own (history).
        assert len(store.snapshot_commitments(report.snapshot_id)) > 0
        bundled_gcp = next(info.id for info in before if info.provider == "gcp")
        assert store.read_commitments([bundled_gcp])["hourly_usd_per_hour"].tolist() == [
            row[7] for row in store.snapshot_commitments(bundled_gcp)
        ]
    assert report.error is None
    assert not any("not stored" in r.reason for r in report.rejected)
    assert any("commitment prices stored" in note for note in report.notes)
    prices = api.commitment_prices("1y", provider="gcp", region="us-central1", store=path)
    live = prices[prices["instance_type"] == "a2-highgpu-1g"].iloc[0]
    assert live["hourly_usd_per_hour"] == pytest.approx(2.2695)
    assert live["price_source"].startswith("Cloud Billing Catalog")
    # Regions the refresh did not renew keep their previous (bundled) commitment prices.
    bundled = api.commitment_prices("1y", provider="gcp", region="europe-west4", store=tmp_path / "other.sqlite")
    kept = api.commitment_prices("1y", provider="gcp", region="europe-west4", store=path)
    assert len(bundled) >= 2 and kept["hourly_usd_per_hour"].tolist() == bundled["hourly_usd_per_hour"].tolist()


def test_a_refresh_without_commitments_keeps_the_previous_ones(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    with CatalogStore(path) as store:
        refresh_provider(gcp_provider(sku_pages=_gcp_pages()), store, regions=["us-central1"])
        before = store.read_commitments()
        again = refresh_provider(gcp_provider(), store, regions=["us-central1"])  # no complete commitment in it
        assert again.error is None and again.snapshot_id is not None
        assert store.read_commitments().equals(before)
        assert not any(path.parent.glob("commitments*"))  # nothing beside the store any more


# -- AWS: terms.Reserved of the EC2 offer file, and the Savings Plans offer files --------------------------------
def reserved_term(sku: str, code: str, lease: str, option: str, upfront: str | None, hourly: str | None,
                  offering_class: str = "standard") -> dict[str, Any]:  # fmt: skip
    """One terms.Reserved entry as the Price List writes it: an Upfront Fee (Quantity) and an hourly (Hrs) rate."""
    term = f"{sku}.{code}"
    dimensions: dict[str, Any] = {}
    if upfront is not None:
        dimensions[f"{term}.2TG2D8R56U"] = {
            "rateCode": f"{term}.2TG2D8R56U", "description": "Upfront Fee", "unit": "Quantity",
            "pricePerUnit": {"USD": upfront}, "appliesTo": [],
        }  # fmt: skip
    if hourly is not None:
        dimensions[f"{term}.6YS6EN2CT7"] = {
            "rateCode": f"{term}.6YS6EN2CT7", "description": "Linux/UNIX (Amazon VPC), p5.48xlarge reserved instance applied",
            "beginRange": "0", "endRange": "Inf", "unit": "Hrs", "pricePerUnit": {"USD": hourly}, "appliesTo": [],
        }  # fmt: skip
    attributes = {"LeaseContractLength": lease, "OfferingClass": offering_class, "PurchaseOption": option}
    return {term: {"offerTermCode": code, "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
                   "priceDimensions": dimensions, "termAttributes": attributes}}  # fmt: skip


def offer_file_with_reserved(region: str) -> bytes:
    from providers.test_provider_aws_public import VERSION, on_demand_term, product

    reserved = {
        **reserved_term("SKU1", "4NA7Y494T4", "1yr", "No Upfront", None, "38.0000"),
        **reserved_term("SKU1", "HU7G6KETJZ", "1yr", "Partial Upfront", "160000", "18.2000"),
        **reserved_term("SKU1", "6QCMYABX3D", "3yr", "All Upfront", "500000", "0.0000"),
        **reserved_term("SKU1", "7NE97W5U4E", "1yr", "No Upfront", None, "40.0", offering_class="convertible"),
        **reserved_term("SKU1", "BPH4J8HBKS", "3yr", "Partial Upfront", "n/a", "10.0"),  # unreadable fee
    }
    document = {
        "formatVersion": "v1.0", "offerCode": "AmazonEC2", "version": VERSION,
        "products": {"SKU1": product("SKU1", "p5.48xlarge", region)},
        "terms": {"OnDemand": {"SKU1": on_demand_term("SKU1", "55.0400")}, "Reserved": {"SKU1": reserved}},
    }  # fmt: skip
    return json.dumps(document).encode()


def savings_plans_file(region: str) -> bytes:
    """A region's Savings Plans offer file: plans as products, their rates per usage type as terms."""
    products = [
        {"sku": "CSP1NU", "productFamily": "ComputeSavingsPlans", "serviceCode": "ComputeSavingsPlans",
         "attributes": {"purchaseOption": "No Upfront", "purchaseTerm": "1yr", "granularity": "hourly",
                        "locationType": "AWS Region"}},
        {"sku": "ISP3AU", "productFamily": "EC2InstanceSavingsPlans", "serviceCode": "ComputeSavingsPlans",
         "attributes": {"purchaseOption": "All Upfront", "purchaseTerm": "3yr", "instanceType": "p5",
                        "locationType": "AWS Region"}},
    ]  # fmt: skip

    def rate(plan: str, usage: str, operation: str, price: str, where: str = region) -> dict[str, Any]:
        return {"discountedSku": "SKU1", "discountedUsageType": usage, "discountedOperation": operation,
                "discountedServiceCode": "AmazonEC2", "rateCode": f"{plan}.SKU1", "unit": "Hrs",
                "discountedRate": {"price": price, "currency": "USD"}, "discountedRegionCode": where,
                "discountedInstanceType": usage.rpartition(":")[2]}  # fmt: skip

    terms = [
        {"sku": "CSP1NU", "description": "1 year No Upfront Compute Savings Plan", "effectiveDate": "2026-11-01T00:00:00Z",
         "leaseContractLength": {"duration": 1, "unit": "year"},
         "rates": [rate("CSP1NU", "USE1-BoxUsage:p5.48xlarge", "RunInstances", "41.2800"),
                   rate("CSP1NU", "USE1-BoxUsage:p5.48xlarge", "RunInstances:0002", "60.0"),  # Windows
                   rate("CSP1NU", "USE1-BoxUsage:m5.large", "RunInstances", "0.07")]},
        {"sku": "ISP3AU", "description": "3 year All Upfront EC2 Instance Savings Plan", "effectiveDate": "2026-11-01T00:00:00Z",
         "leaseContractLength": {"duration": 3, "unit": "year"},
         "rates": [rate("ISP3AU", "USE1-BoxUsage:p5.48xlarge", "RunInstances", "22.0000"),
                   rate("ISP3AU", "USE1-BoxUsage:p5.48xlarge", "RunInstances", "bad")]},
    ]  # fmt: skip
    document = {"version": "20261101000000", "products": products, "terms": {"savingsPlan": terms}}
    return json.dumps(document, indent=1).encode()


def test_aws_reserved_instances_and_savings_plans_from_the_public_files() -> None:
    from planner.providers.aws_commitments import SAVINGS_PLAN_INDEX_PATH
    from providers.loopback import Reply, loopback
    from providers.test_provider_aws_public import offer_path, provider, serve_all

    with loopback() as server:
        serve_all(server, "us-east-1")
        server.serve(offer_path("us-east-1"), Reply(offer_file_with_reserved("us-east-1")))
        sp_path = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/20261101000000/us-east-1/index.json"
        index = {"regions": [{"regionCode": "us-east-1", "versionUrl": sp_path}]}
        server.serve(SAVINGS_PLAN_INDEX_PATH, Reply(json.dumps(index).encode()))
        server.serve(sp_path, Reply(savings_plans_file("us-east-1")))
        result = provider(server).fetch(["us-east-1"])
    found = {(c["commitment"], c["term_years"], c["payment"]): c for c in result.commitments}
    assert set(found) == {
        ("reserved-standard", 1, "no-upfront"),
        ("reserved-standard", 1, "partial-upfront"),
        ("reserved-standard", 3, "all-upfront"),
        ("savings-plan-compute", 1, "no-upfront"),
        ("savings-plan-ec2", 3, "all-upfront"),
    }
    partial = found[("reserved-standard", 1, "partial-upfront")]
    assert (partial["upfront_usd"], partial["hourly_usd_per_hour"]) == (160000.0, 18.2)
    assert found[("savings-plan-compute", 1, "no-upfront")]["hourly_usd_per_hour"] == 41.28
    # A plan's rate per hour of use, paid all upfront: 22 x 26,280 hours.
    assert found[("savings-plan-ec2", 3, "all-upfront")]["upfront_usd"] == pytest.approx(22 * 26280)
    # The unreadable fee and rate are rejected one by one, naming what was wrong; the offering stands.
    reasons = [r.reason for r in result.rejected if r.instance_type == "p5.48xlarge"]
    assert any("3yr Partial Upfront: unreadable Quantity price 'n/a'" in r for r in reasons)
    assert any("unreadable discountedRate" in r for r in reasons)
    assert [r["price_usd_per_hour"] for r in result.rows] == [55.04]
    assert not validate_commitments(result.commitments).rejected


def test_aws_without_savings_plans_files_keeps_the_reserved_prices() -> None:
    from providers.loopback import Reply, loopback
    from providers.test_provider_aws_public import offer_path, provider, serve_all

    with loopback() as server:
        serve_all(server, "us-east-1")
        server.serve(offer_path("us-east-1"), Reply(offer_file_with_reserved("us-east-1")))
        result = provider(server, attempts=1).fetch(["us-east-1"])
    assert {c["commitment"] for c in result.commitments} == {"reserved-standard"}
    assert any("Savings Plans index unavailable" in note for note in result.notes)


# -- Azure: Reservation items and the savingsPlan array of the Retail Prices API --------------------------------
def _azure_item(**overrides: Any) -> dict[str, Any]:
    """A Retail Prices API item in the documented shape (the fixture's NC24ads A100 v4 meter)."""
    item = dict(load("azure_retail_prices.json")["eastus"][0]["Items"][0])
    item.update(overrides)
    return item


def _azure_pages() -> dict[str, list[Any]]:
    from providers.test_provider_azure import NC

    pay_as_you_go = _azure_item(
        retailPrice=3.673,
        unitPrice=3.673,
        effectiveStartDate="2026-06-01T00:00:00Z",
        savingsPlan=[
            {"unitPrice": 2.5987, "retailPrice": 2.5987, "term": "1 Year"},
            {"unitPrice": 1.7561, "retailPrice": 1.7561, "term": "3 Years"},
            {"unitPrice": "n/a", "retailPrice": "n/a", "term": "5 Years"},
        ],
    )
    reservation_1y = _azure_item(type="Reservation", reservationTerm="1 Year", retailPrice=20150.0, unitPrice=20150.0,
                                 meterName="NC24ads A100 v4", productName="Virtual Machines NCadsA100v4 Series")  # fmt: skip
    reservation_3y = _azure_item(type="Reservation", reservationTerm="3 Years", retailPrice=38900.0, unitPrice=38900.0)
    broken = _azure_item(type="Reservation", reservationTerm="1 Year", retailPrice=None, unitPrice=None)
    windows = _azure_item(productName="Virtual Machines NCadsA100v4 Series Windows", retailPrice=5.1,
                          savingsPlan=[{"unitPrice": 4.0, "retailPrice": 4.0, "term": "1 Year"}])  # fmt: skip
    spot = _azure_item(meterName="NC24ads A100 v4 Spot", skuName="NC24ads A100 v4 Spot", retailPrice=0.52)
    items = [pay_as_you_go, reservation_1y, reservation_3y, broken, windows, spot]
    assert all(item["armSkuName"] == NC for item in items)
    return {"eastus": [{"BillingCurrency": "USD", "Items": items, "NextPageLink": None, "Count": len(items)}]}


def test_azure_reservations_and_savings_plan_from_the_retail_prices_api() -> None:
    import responses

    from providers.test_provider_azure import NC, RetailPrices, _provider, _serve

    prices = RetailPrices(pages=_azure_pages())
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        _serve(mock, prices)
        result = _provider().fetch(["eastus"])
    found = {(c["commitment"], c["term_years"]): c for c in result.commitments}
    assert set(found) == {("reservation", 1), ("reservation", 3), ("savings-plan", 1), ("savings-plan", 3)}
    assert (found[("reservation", 1)]["upfront_usd"], found[("reservation", 1)]["payment"]) == (20150.0, "all-upfront")
    assert found[("savings-plan", 3)]["hourly_usd_per_hour"] == 1.7561  # Linux, never the Windows plan
    reasons = [r.reason for r in result.rejected if r.instance_type == NC]
    assert any("reservation: bad retailPrice" in r for r in reasons)
    assert any("savings plan: bad term" in r for r in reasons)
    nc = next(r for r in result.rows if r["instance_type"] == NC)
    assert (nc["price_usd_per_hour"], nc["spot_price_usd_per_hour"]) == (3.673, 0.52)  # reservations never list
    assert not validate_commitments(result.commitments).rejected
    mock_queries = " ".join(prices.filters)
    assert "priceType eq 'Reservation'" in mock_queries


def test_aws_pricing_api_items_carry_their_reserved_terms() -> None:
    """The SDK path (credentials): the Pricing API's PriceList item of the list price has terms.Reserved too."""
    from providers.provider_fakes import PricingEndpoint, StubbedAws, aws_provider, price_item
    from providers.test_provider_aws import _us_east_1

    item = json.loads(price_item("p5.48xlarge", "us-east-1", "55.0400000000"))
    sku = item["product"]["sku"]
    item["terms"]["Reserved"] = {
        **reserved_term(sku, "HU7G6KETJZ", "1yr", "Partial Upfront", "160000", "18.2000"),
        **reserved_term(sku, "X", "5yr", "No Upfront", None, "1.0"),  # an unknown lease: rejected alone
    }
    aws = StubbedAws(["us-east-1"], PricingEndpoint({("p5.48xlarge", "us-east-1"): [json.dumps(item)]}))
    _us_east_1(aws)
    result = aws_provider(aws.factory, workers=1).fetch(["us-east-1"])
    assert [
        (c["commitment"], c["term_years"], c["upfront_usd"], c["hourly_usd_per_hour"]) for c in result.commitments
    ] == [("reserved-standard", 1, 160000.0, 18.2)]
    assert any("unknown LeaseContractLength" in r.reason for r in result.rejected)
    assert {r["price_usd_per_hour"] for r in result.rows if r["instance_type"] == "p5.48xlarge"} == {55.04}
