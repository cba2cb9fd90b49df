"""AWS without an account: Price List bulk files, the spot feed and Spot Advisor over real HTTP on loopback."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from planner.catalog.store import CatalogStore
from planner.catalog.validate import validate_rows
from planner.providers.aws import AwsProvider
from planner.providers.aws_public import REGION_INDEX_PATH, AwsPublicProvider, parse_spot_feed, read_offer_file
from planner.providers.http import JsonApi
from planner.refresh import refresh_provider
from providers.loopback import Loopback, Reply, loopback
from providers.provider_fakes import NOW, load

VERSION = "20261101000000"
LIST = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}


def product(sku: str, instance_type: str, region: str, **overrides: str) -> dict[str, Any]:
    """One Price List product in the offer file's shape (attributes as strings, as AWS writes them)."""
    attributes = {
        "servicecode": "AmazonEC2",
        "location": "US East (N. Virginia)",
        "locationType": "AWS Region",
        "instanceType": instance_type,
        "instanceFamily": "GPU instance",
        "vcpu": "192" if instance_type.startswith("p5") else "4",
        "memory": "2,048 GiB" if instance_type.startswith("p5") else "16 GiB",
        "networkPerformance": "3200 Gigabit" if instance_type.startswith("p5") else "Up to 10 Gigabit",
        "gpu": "8" if instance_type.startswith("p5") else "1",
        "usagetype": f"BoxUsage:{instance_type}",
        "regionCode": region,
        "licenseModel": "No License required",
        "marketoption": "OnDemand",
        **LIST,
        **overrides,
    }
    return {"sku": sku, "productFamily": "Compute Instance", "attributes": attributes}


def on_demand_term(sku: str, usd: str) -> dict[str, Any]:
    """A SKU's terms.OnDemand entry: offer term -> price dimension -> pricePerUnit.USD."""
    term = f"{sku}.JRTCKXETXF"
    return {
        term: {
            "offerTermCode": "JRTCKXETXF",
            "sku": sku,
            "effectiveDate": "2026-11-01T00:00:00Z",
            "priceDimensions": {
                f"{term}.6YS6EN2CT7": {
                    "rateCode": f"{term}.6YS6EN2CT7",
                    "description": "On Demand Linux",
                    "beginRange": "0",
                    "endRange": "Inf",
                    "unit": "Hrs",
                    "pricePerUnit": {"USD": usd},
                    "appliesTo": [],
                }
            },
            "termAttributes": {},
        }
    }


def offer_file(region: str, scale: float = 1.0) -> bytes:
    """A region's EC2 offer file: two GPU list prices among products that must not be taken for them."""
    items = [
        ("SKU1", product("SKU1", "p5.48xlarge", region), f"{55.04 * scale:.4f}"),
        ("SKU2", product("SKU2", "g5.xlarge", region), f"{1.006 * scale:.4f}"),
        ("SKU3", product("SKU3", "p5.48xlarge", region, operatingSystem="Windows"), "99.0"),
        ("SKU4", product("SKU4", "p5.48xlarge", region, tenancy="Dedicated"), "98.0"),
        ("SKU5", product("SKU5", "p5.48xlarge", region, capacitystatus="UnusedCapacityReservation"), "97.0"),
        ("SKU6", product("SKU6", "g5.xlarge", f"{region}-lax-1"), "5.0"),  # a Local Zone
        ("SKU7", product("SKU7", "m5.large", region, gpu="0", instanceFamily="General purpose"), "0.096"),
        ("SKU8", product("SKU8", "g5.xlarge", region, preInstalledSw="SQL Web"), "4.0"),
        ("SKU9", product("SKU9", "g6f.2xlarge", region, gpu="1"), "0.5"),  # a quarter of an L4: count not in the file
    ]
    document = {
        "formatVersion": "v1.0",
        "disclaimer": "test data",
        "offerCode": "AmazonEC2",
        "version": VERSION,
        "publicationDate": "2026-11-01T00:00:00Z",
        "products": {sku: body for sku, body, _ in items},
        "terms": {
            "OnDemand": {sku: on_demand_term(sku, usd) for sku, _, usd in items},
            "Reserved": {"SKU1": {"SKU1.XYZ": {"priceDimensions": {}}}},
        },
    }
    return json.dumps(document, indent=1).encode()


def offer_path(region: str) -> str:
    return f"/offers/v1.0/aws/AmazonEC2/{VERSION}/{region}/index.json"


def region_index(*regions: str) -> bytes:
    entries = {r: {"regionCode": r, "currentVersionUrl": offer_path(r)} for r in regions}
    return json.dumps({"formatVersion": "v1.0", "publicationDate": "2026-11-01T00:00:00Z", "regions": entries}).encode()


def spot_feed() -> bytes:
    """The JSONP feed behind the EC2 Spot pricing page: regions -> instanceTypes -> sizes -> valueColumns."""

    def size(name: str, linux: str) -> dict[str, Any]:
        columns = [{"name": "linux", "prices": {"USD": linux}}, {"name": "mswin", "prices": {"USD": "77.0"}}]
        return {"size": name, "valueColumns": columns}

    regions = [
        {
            "region": "us-east-1",
            "instanceTypes": [{"type": "gpuCurrentGen", "sizes": [size("p5.48xlarge", "31.4641")]}],
        },
        {
            "region": "eu-ireland",  # the legacy name of eu-west-1
            "instanceTypes": [
                {"type": "gpuCurrentGen", "sizes": [size("g5.xlarge", "0.4120"), size("p5.48xlarge", "N/A*")]}
            ],
        },
    ]
    config = {"rate": "perhr", "valueColumns": ["linux", "mswin"], "currencies": ["USD"], "regions": regions}
    return b"callback(" + json.dumps({"vers": 0.01, "config": config}).encode() + b");"


def serve_all(server: Loopback, *regions: str) -> None:
    server.serve(REGION_INDEX_PATH, Reply(region_index(*regions)))
    for n, region in enumerate(regions):
        server.serve(offer_path(region), Reply(offer_file(region, 1 + n / 10), gzip=n == 0))
    server.serve("/spot.js", Reply(spot_feed()))
    server.serve("/spot-advisor-data.json", Reply(json.dumps(load("aws_spot_advisor.json")).encode()))


def provider(server: Loopback, attempts: int = 3, backoff_s: float = 0.001, **options: Any) -> AwsPublicProvider:
    api = JsonApi("aws", "aws", requests.Session(), None, "hint", attempts=attempts, backoff_s=backoff_s, timeout_s=5)
    return AwsPublicProvider(
        api,
        price_list_url=server.base_url,
        spot_prices_url=f"{server.base_url}/spot.js",
        spot_advisor_url=f"{server.base_url}/spot-advisor-data.json",
        now=lambda: NOW,
        **options,
    )


def by_key(rows: list[Any]) -> dict[tuple[str, str], Any]:
    return {(r["instance_type"], r["region"]): r for r in rows}


def test_list_prices_spot_prices_and_buckets_from_the_public_files() -> None:
    with loopback() as server:
        serve_all(server, "us-east-1", "eu-west-1")
        result = provider(server).fetch()
    assert result.failures == []
    assert {(r.instance_type, r.reason) for r in result.rejected} == {
        ("g6f.2xlarge", "GPU count unknown: the family table gives none and the Price List has no GPU slice size")
    }
    rows = by_key(result.rows)
    assert set(rows) == {(t, r) for t in ("p5.48xlarge", "g5.xlarge") for r in ("us-east-1", "eu-west-1")}
    p5 = rows[("p5.48xlarge", "us-east-1")]  # served gzip-encoded
    assert (p5["price_usd_per_hour"], p5["spot_price_usd_per_hour"]) == (55.04, 31.4641)
    assert (p5["gpu"], p5["gpu_count"], p5["vcpus"], p5["ram_gib"], p5["network_gbps"]) == (
        "H100-SXM",
        8,
        192,
        2048.0,
        3200.0,
    )
    assert p5["spot_interruption"] == "15-20%" and p5["zone"] == ""
    assert rows[("g5.xlarge", "eu-west-1")]["price_usd_per_hour"] == pytest.approx(1.1066)
    assert rows[("g5.xlarge", "eu-west-1")]["spot_price_usd_per_hour"] == 0.412
    assert rows[("p5.48xlarge", "eu-west-1")]["spot_price_usd_per_hour"] is None  # "N/A*" in the feed
    assert rows[("g5.xlarge", "us-east-1")]["price_usd_per_hour"] == 1.006  # not the Local Zone's or SQL's
    assert validate_rows(result.rows).rejected == []
    assert all(r["price_source"].startswith("AWS Price List bulk files") for r in result.rows)


def test_throttled_offer_file_is_retried_after_retry_after() -> None:
    with loopback() as server:
        serve_all(server, "us-east-1")
        server.serve(
            offer_path("us-east-1"),
            Reply(b"slow down", 429, {"Retry-After": "0.2"}),
            Reply(offer_file("us-east-1")),
        )
        started = time.monotonic()
        # A backoff of 20 s would time the test out: only the server's Retry-After can make it this quick.
        result = provider(server, backoff_s=20.0).fetch()
        elapsed = time.monotonic() - started
        assert len(server.requests_to(offer_path("us-east-1"))) == 2
    assert result.failures == [] and len(result.rows) == 2
    assert 0.2 <= elapsed < 10


def test_connection_dropped_mid_file_is_retried() -> None:
    body = offer_file("us-east-1")
    with loopback() as server:
        serve_all(server, "us-east-1")
        server.serve(offer_path("us-east-1"), Reply(body, cut_at=len(body) // 2), Reply(body))
        result = provider(server).fetch()
        assert len(server.requests_to(offer_path("us-east-1"))) == 2
    assert result.failures == [] and len(result.rows) == 2


def test_truncated_offer_file_fails_its_region_and_keeps_its_previous_rows(tmp_path: Path) -> None:
    whole = offer_file("eu-west-1")
    with loopback() as server:
        serve_all(server, "us-east-1", "eu-west-1")
        # Unseeded: against the bundle's 1,603 AWS rows, 4 would be a refresh that read almost nothing.
        store = CatalogStore(tmp_path / "c.sqlite", seed=False)
        first = refresh_provider(provider(server), store)
        assert first.ok and first.rows_written == 4
        cut = whole.index(b'"SKU2"', whole.index(b'"products"'))  # within the products: g5 not listed yet
        server.serve(offer_path("eu-west-1"), Reply(whole[:cut]))  # the whole body sent, the JSON cut
        second = refresh_provider(provider(server), store)
    assert [f.region for f in second.failed_regions] == ["eu-west-1"]
    assert "IncompleteJSONError" in second.failed_regions[0].reason
    assert second.rows_written == 2
    kept = store.read_current()
    ireland = kept[(kept["provider"] == "aws") & (kept["region"] == "eu-west-1")]
    assert sorted(ireland["price_usd_per_hour"]) == [1.1066, 60.544]  # the first refresh's, carried over
    assert all("carried_over" in flags for flags in ireland["flags"])


def test_spot_feed_and_advisor_down_leave_on_demand_prices() -> None:
    with loopback() as server:
        serve_all(server, "us-east-1")
        server.serve("/spot.js", Reply(b"down", 503))
        server.serve("/spot-advisor-data.json", Reply(b"down", 500))
        result = provider(server, attempts=2).fetch()
    assert {r["price_usd_per_hour"] for r in result.rows} == {55.04, 1.006}
    assert all(r["spot_price_usd_per_hour"] is None for r in result.rows)
    assert any("spot price feed unavailable" in n for n in result.notes)
    assert any("Spot Advisor feed unavailable" in n for n in result.notes)


def test_local_zones_of_the_index_are_not_fetched_as_regions() -> None:
    with loopback() as server:
        serve_all(server, "us-east-1")
        server.serve(REGION_INDEX_PATH, Reply(region_index("us-east-1", "us-west-2-lax-1")))
        result = provider(server).fetch()
        assert server.requests_to(offer_path("us-west-2-lax-1")) == []
    assert result.regions == ["us-east-1"] and result.failures == []


def test_region_not_in_the_index_fails_alone() -> None:
    with loopback() as server:
        serve_all(server, "us-east-1")
        result = provider(server).fetch(["us-east-1", "mars-north-1"])
    assert [(f.region, f.reason) for f in result.failures] == [("mars-north-1", "not in the Price List region index")]
    assert len(result.rows) == 2


def test_offer_file_is_read_in_small_pieces_without_the_whole_document() -> None:
    class Trickle(io.RawIOBase):
        """A body that hands out at most 7 bytes per read and counts the reads."""

        def __init__(self, data: bytes) -> None:
            self.data, self.at, self.reads = data, 0, 0

        def read(self, size: int = -1) -> bytes:
            self.reads += 1
            piece = self.data[self.at : self.at + min(size, 7)]
            self.at += len(piece)
            return piece

    body = Trickle(offer_file("us-east-1"))
    offer = read_offer_file(body, "us-east-1")  # type: ignore[arg-type]
    prices = {name: t.price_usd_per_hour for name, t in offer.types.items()}
    assert prices == {"p5.48xlarge": 55.04, "g5.xlarge": 1.006, "g6f.2xlarge": 0.5}
    assert offer.products_read == 9 and body.reads > 100
    assert body.at < len(body.data)  # stopped once both GPU types were priced: the Reserved terms never read


def test_spot_feed_parser_reads_the_callback_wrapper() -> None:
    prices = parse_spot_feed(spot_feed().decode())
    assert prices == {("p5.48xlarge", "us-east-1"): 31.4641, ("g5.xlarge", "eu-west-1"): 0.412}


def test_no_credentials_chooses_the_public_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with loopback() as server:
        serve_all(server, "us-east-1")
        monkeypatch.setenv("GPUPLAN_AWS_PRICE_LIST_URL", server.base_url)
        monkeypatch.setenv("GPUPLAN_AWS_SPOT_PRICES_URL", f"{server.base_url}/spot.js")
        monkeypatch.setenv("GPUPLAN_AWS_SPOT_ADVISOR_URL", f"{server.base_url}/spot-advisor-data.json")
        chosen = AwsProvider.from_environment(timeout_s=5)
        assert isinstance(chosen, AwsPublicProvider)
        result = chosen.fetch()
        assert all("Authorization" not in s.headers for s in server.seen)
    assert len(result.rows) == 2
    assert result.notes[0].startswith("aws: no credentials found, so prices came from the public Price List files")


def test_public_switch_wins_over_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    assert isinstance(AwsProvider.from_environment(public=True), AwsPublicProvider)
    assert isinstance(AwsProvider.from_environment(), AwsProvider)
