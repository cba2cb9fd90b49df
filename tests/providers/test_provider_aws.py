"""AWS adapter against real botocore clients answered by Stubber, moto and a local Pricing endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from planner.errors import MissingCredentials
from planner.providers.aws import AwsProvider, parse_price_item
from providers.provider_fakes import (
    CPU_TYPE,
    NOW,
    PricingEndpoint,
    StubbedAws,
    aws_provider,
    boto_client,
    instance_type,
    price_item,
    stub_region,
)

P5 = instance_type("p5.48xlarge", "H100", 8, 81920, 192, 2097152, cards=32, card_gbps=100.0)
G6F = instance_type("g6f.2xlarge", "L4", 0, 5722, 8, 32768, partition=0.25)
G4AD = instance_type("g4ad.xlarge", "Radeon Pro V520", 1, 8192, 4, 16384, manufacturer="AMD")
G5 = instance_type("g5.xlarge", "A10G", 1, 22888, 4, 16384)


@pytest.fixture(autouse=True)
def tiny_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's real retry loop, without its real sleeps."""
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, ctx: 0.001)


def _us_east_1(aws: StubbedAws, prices: dict[str, list[str]] | None = None) -> None:
    stub_region(
        aws,
        "us-east-1",
        [P5, CPU_TYPE, G6F, G4AD],
        {"p5.48xlarge": ["use1-az1", "use1-az2"], "g6f.2xlarge": ["use1-az1"], "g4ad.xlarge": ["use1-az1"]},
        [
            ("p5.48xlarge", "us-east-1a", "30.100000"),
            ("p5.48xlarge", "us-east-1b", "29.000000", NOW - timedelta(hours=3)),
            ("p5.48xlarge", "us-east-1b", "31.500000", NOW - timedelta(minutes=5)),
            ("g6f.2xlarge", "us-east-1a", "0.190000"),
        ],
        prices,
        zones={"us-east-1a": "use1-az1", "us-east-1b": "use1-az2"},
    )


def _eu_west_1(aws: StubbedAws, prices: dict[str, list[str]] | None = None) -> None:
    stub_region(
        aws,
        "eu-west-1",
        [G5],
        {"g5.xlarge": ["euw1-az1"]},
        [("g5.xlarge", "eu-west-1a", "0.410000")],
        prices,
        zones={"eu-west-1a": "euw1-az1"},
    )


PRICES = {
    ("p5.48xlarge", "us-east-1"): [price_item("p5.48xlarge", "us-east-1", "55.0400000000")],
    ("g6f.2xlarge", "us-east-1"): [price_item("g6f.2xlarge", "us-east-1", "0.4700000000")],
    ("g4ad.xlarge", "us-east-1"): [price_item("g4ad.xlarge", "us-east-1", "0.3790000000")],
}


def _by_key(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["instance_type"], r["region"], r["zone"]): r for r in rows}


def test_rows_per_az_with_spot_on_demand_and_buckets() -> None:
    pricing = PricingEndpoint(PRICES)
    aws = StubbedAws(["us-east-1", "eu-west-1"], pricing)
    _us_east_1(aws)
    _eu_west_1(aws)
    result = aws_provider(aws.factory, workers=1).fetch(["us-east-1", "eu-west-1"])
    aws.assert_done()
    rows = _by_key(result.rows)
    assert sorted(rows) == [
        ("g5.xlarge", "eu-west-1", "euw1-az1"),
        ("g6f.2xlarge", "us-east-1", "use1-az1"),
        ("p5.48xlarge", "us-east-1", "use1-az1"),
        ("p5.48xlarge", "us-east-1", "use1-az2"),
    ]
    p5 = rows[("p5.48xlarge", "us-east-1", "use1-az2")]
    assert (p5["gpu"], p5["gpu_count"], p5["vcpus"], p5["ram_gib"]) == ("H100-SXM", 8.0, 192, 2048.0)
    assert p5["price_usd_per_hour"] == 55.04
    assert p5["spot_price_usd_per_hour"] == 31.5  # the latest of the two prices of that AZ
    assert rows[("p5.48xlarge", "us-east-1", "use1-az1")]["spot_price_usd_per_hour"] == 30.1
    assert (p5["network_gbps"], p5["interconnect"], p5["spot_interruption"]) == (3200.0, "nvswitch", "15-20%")
    g6f = rows[("g6f.2xlarge", "us-east-1", "use1-az1")]
    assert (g6f["gpu"], g6f["gpu_count"]) == ("L4", 0.25)
    assert g6f["spot_interruption"] is None  # the feed's range index 9 is unknown: left out, not guessed
    # No on-demand price published, but a spot price: spot-only.
    g5 = rows[("g5.xlarge", "eu-west-1", "euw1-az1")]
    assert (g5["price_usd_per_hour"], g5["availability"], g5["spot_interruption"]) == (None, "spot-only", "5-10%")
    assert [(r.instance_type, "hardware table" in r.reason) for r in result.rejected] == [("g4ad.xlarge", True)]
    assert result.failures == []
    filters = {f["Field"]: f["Value"] for f in pricing.requests[0]["Filters"]}
    assert filters == {
        "instanceType": "g4ad.xlarge",
        "regionCode": "us-east-1",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }
    assert all(f["Type"] == "TERM_MATCH" for f in pricing.requests[0]["Filters"])


def test_stubbed_pricing_malformed_price_and_empty_page_are_reported() -> None:
    aws = StubbedAws(["us-east-1"])
    _us_east_1(
        aws,
        {
            "g4ad.xlarge": [],
            "g6f.2xlarge": [price_item("g6f.2xlarge", "us-east-1", "n/a")],
            "p5.48xlarge": [price_item("p5.48xlarge", "us-east-1", "-55.04")],
        },
    )
    result = aws_provider(aws.factory).fetch(["us-east-1"])
    aws.assert_done()
    reasons = {r.instance_type: r.reason for r in result.rejected}
    assert "malformed on-demand price 'n/a'" in reasons["g6f.2xlarge"]
    # A negative price is a row the validator rejects later, one by one; the adapter keeps it visible.
    assert {r["price_usd_per_hour"] for r in result.rows if r["instance_type"] == "p5.48xlarge"} == {-55.04}
    # An empty PriceList page: no on-demand price, no spot either -> reservation-only, still listed.
    assert "g4ad.xlarge" in reasons  # AMD GPU unknown to the hardware table


@pytest.mark.parametrize("fault", ["throttle", "5xx", "timeout"])
def test_pricing_retries_throttling_5xx_and_timeouts(fault: str) -> None:
    pricing = PricingEndpoint(PRICES, faults=[fault])
    aws = StubbedAws(["us-east-1"], pricing)
    _us_east_1(aws)
    result = aws_provider(aws.factory).fetch(["us-east-1"])
    assert result.failures == []
    assert len(pricing.requests) == 4  # three types, one retried
    assert {r["price_usd_per_hour"] for r in result.rows if r["instance_type"] == "p5.48xlarge"} == {55.04}


def test_region_fails_after_retries_others_succeed() -> None:
    pricing = PricingEndpoint(PRICES)
    aws = StubbedAws(["us-east-1", "eu-west-1"], pricing)
    _us_east_1(aws)
    aws.ec2("eu-west-1").add_client_error(
        "describe_instance_types", service_error_code="InternalError", service_message="boom", http_status_code=500
    )
    result = aws_provider(aws.factory).fetch(["us-east-1", "eu-west-1"])
    assert [f.region for f in result.failures] == ["eu-west-1"]
    assert "InternalError" in result.failures[0].reason
    assert {r["region"] for r in result.rows} == {"us-east-1"}


def test_pricing_throttled_beyond_the_retry_budget_fails_only_that_region() -> None:
    pricing = PricingEndpoint(PRICES, faults=["throttle"] * 3)
    aws = StubbedAws(["us-east-1"], pricing)
    _us_east_1(aws)
    result = aws_provider(aws.factory).fetch(["us-east-1"])
    assert [f.region for f in result.failures] == ["us-east-1"]
    assert "Throttling" in result.failures[0].reason


def test_expired_credentials_are_one_line_with_the_setup_hint() -> None:
    ec2 = boto_client("ec2", "us-east-1")
    from botocore.stub import Stubber

    with Stubber(ec2) as stub:
        stub.add_client_error("describe_regions", service_error_code="AuthFailure", http_status_code=401)
        provider = aws_provider(lambda service, region: ec2)
        with pytest.raises(MissingCredentials) as caught:
            provider.fetch(None)
    message = str(caught.value)
    assert message.startswith("aws: credentials rejected (AuthFailure)")
    assert "AWS_PROFILE" in message
    assert "\n" not in message


def test_from_environment_sets_retries_and_timeouts_and_keeps_endpoint_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL_PRICING", "http://127.0.0.1:9/pricing")
    provider = AwsProvider.from_environment(retry_mode="standard", max_attempts=3, read_timeout_s=7)
    pricing = provider._client("pricing", "us-east-1")
    ec2 = provider._client("ec2", "eu-west-1")
    assert pricing.meta.endpoint_url == "http://127.0.0.1:9/pricing"
    assert ec2.meta.endpoint_url == "https://ec2.eu-west-1.amazonaws.com"
    assert ec2.meta.config.retries == {"mode": "standard", "total_max_attempts": 4}  # 3 retries
    assert ec2.meta.config.read_timeout == 7
    assert provider._client("ec2", "eu-west-1") is ec2


def test_spot_advisor_unreachable_falls_back_to_bundled_buckets() -> None:
    def unreachable() -> dict[str, Any]:
        raise OSError("network is unreachable")

    pricing = PricingEndpoint(PRICES)
    aws = StubbedAws(["us-east-1"], pricing)
    _us_east_1(aws)
    result = aws_provider(aws.factory, spot_advisor=unreachable).fetch(["us-east-1"])
    assert any("Spot Advisor feed unavailable (OSError: network is unreachable)" in n for n in result.notes)
    assert result.rows  # prices still refreshed


def test_parse_price_item_reads_the_json_string() -> None:
    assert parse_price_item(price_item("p4d.24xlarge", "us-east-1", "21.9576420000")) == (
        "BoxUsage:p4d.24xlarge",
        21.957642,
    )
    with pytest.raises(ValueError, match="no hourly on-demand price"):
        parse_price_item('{"product": {}, "terms": {}}')


@pytest.fixture
def moto_ec2() -> Iterator[None]:
    from moto import mock_aws

    with mock_aws():
        yield


class _SpotFromStub:
    """EC2 as moto serves it, except spot history (moto invents spot prices), which a Stubber answers."""

    def __init__(self, region: str) -> None:
        from botocore.stub import Stubber

        self.moto = boto_client("ec2", region)
        self.spot = boto_client("ec2", region)
        self.stub = Stubber(self.spot)
        self.stub.activate()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.moto, name)

    def get_paginator(self, name: str) -> Any:
        paginator = (self.spot if name == "describe_spot_price_history" else self.moto).get_paginator(name)
        return _FewTypes(paginator) if name == "describe_instance_types" else paginator


class _FewTypes:
    """moto's full type list (1,400 types) takes seconds to serialise: keep the families this test reads, and a CPU type."""

    def __init__(self, paginator: Any) -> None:
        self.paginator = paginator

    def paginate(self, **params: Any) -> Any:
        kept = ["p3dn.*", "p4d.*", "p4de.*", "p5.*", "g6f.*", "c7i.large"]
        return self.paginator.paginate(Filters=[{"Name": "instance-type", "Values": kept}], **params)


def test_moto_regions_and_instance_types(moto_ec2: None) -> None:
    clients = {r: _SpotFromStub(r) for r in ("us-east-1", "eu-central-1")}
    for client in clients.values():
        client.stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []})
    pricing = PricingEndpoint(
        {("p4d.24xlarge", "us-east-1"): [price_item("p4d.24xlarge", "us-east-1", "21.9576420000")]}
    )

    def factory(service: str, region: str) -> Any:
        return pricing.client if service == "pricing" else clients.setdefault(region, _SpotFromStub(region))

    provider = aws_provider(factory)
    assert "eu-central-1" in provider._regions()
    result = provider.fetch(["us-east-1"])
    rows = {(r["instance_type"], r["zone"]): r for r in result.rows}
    p4d = {zone: r for (name, zone), r in rows.items() if name == "p4d.24xlarge"}
    assert sorted(p4d) == ["use1-az1", "use1-az2", "use1-az4", "use1-az6"]
    assert {(r["gpu"], r["price_usd_per_hour"], r["availability"]) for r in p4d.values()} == {
        ("A100-40GB", 21.957642, "on-demand")
    }
    gpus = {name: r["gpu"] for (name, _), r in rows.items()}
    # The resolver picks the variant from the memory AWS reports (no per-type if-chains).
    assert (gpus["p4de.24xlarge"], gpus["p3dn.24xlarge"], gpus["p5.48xlarge"]) == ("A100-80GB", "V100-32GB", "H100-SXM")
    g6f = next(r for (name, _), r in rows.items() if name == "g6f.2xlarge")
    assert (g6f["gpu"], g6f["gpu_count"]) == ("L4", 0.25)
    # No on-demand price and no spot price published: listed as reservation-only, not dropped.
    assert {r["availability"] for (name, _), r in rows.items() if name == "p5.48xlarge"} == {"reservation-only"}


def test_credentials_rejected_in_every_region_is_missing_credentials() -> None:
    pricing = PricingEndpoint(PRICES)
    aws = StubbedAws(["us-east-1", "eu-west-1"], pricing)
    for region in ("us-east-1", "eu-west-1"):
        aws.ec2(region).add_client_error(
            "describe_instance_types", service_error_code="ExpiredToken", http_status_code=400
        )
    with pytest.raises(MissingCredentials, match="aws: credentials rejected in every region; set AWS_PROFILE"):
        aws_provider(aws.factory).fetch(["us-east-1", "eu-west-1"])


def test_a_spot_advisor_feed_past_the_limit_is_refused(tmp_path: Any) -> None:
    from planner.errors import ProviderError
    from planner.providers.aws import fetch_spot_advisor

    feed = tmp_path / "feed.json"
    feed.write_text('{"padding": "' + "x" * 5000 + '"}')
    with pytest.raises(ProviderError, match=r"^aws: the Spot Advisor feed is larger than"):
        fetch_spot_advisor(feed.as_uri(), limit_bytes=4096)
    assert fetch_spot_advisor(feed.as_uri(), limit_bytes=8192)["padding"] == "x" * 5000


def test_spot_advisor_feed_url_is_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.providers.aws import advisor_buckets, fetch_spot_advisor
    from providers.provider_fakes import DATA

    monkeypatch.setenv("GPUPLAN_AWS_SPOT_ADVISOR_URL", (DATA / "aws_spot_advisor.json").as_uri())
    buckets = advisor_buckets(fetch_spot_advisor())
    assert buckets == {
        ("p5.48xlarge", "us-east-1"): "15-20%",
        ("g5.xlarge", "us-east-1"): "<5%",
        ("g5.xlarge", "eu-west-1"): "5-10%",
    }


def test_unreachable_feed_keeps_the_current_catalogs_buckets() -> None:
    from factories import make_offer

    def unreachable() -> dict[str, Any]:
        raise TimeoutError("timed out")

    pricing = PricingEndpoint(PRICES)
    aws = StubbedAws(["us-east-1"], pricing)
    _us_east_1(aws)
    provider = aws_provider(aws.factory, spot_advisor=unreachable)
    previous = [make_offer(instance_type="p5.48xlarge", region="us-east-1", spot_interruption=">20%")]
    result = provider.fetch(["us-east-1"], previous=previous)
    assert {r["spot_interruption"] for r in result.rows if r["instance_type"] == "p5.48xlarge"} == {">20%"}


def test_implausible_api_rows_are_rejected_one_by_one_in_the_refresh_report(tmp_path: Any) -> None:
    from planner.refresh import refresh

    broken = instance_type("g5.2xlarge", "A10G", 0, 22888, 8, 32768)  # GPU type reporting 0 GPUs
    pricing = PricingEndpoint(
        {
            ("g5.xlarge", "us-east-1"): [price_item("g5.xlarge", "us-east-1", "1.0060000000")],
            ("g5.2xlarge", "us-east-1"): [price_item("g5.2xlarge", "us-east-1", "1.2120000000")],
        }
    )
    aws = StubbedAws(["us-east-1"], pricing)
    stub_region(
        aws,
        "us-east-1",
        [G5, broken],
        {"g5.xlarge": ["use1-az1", "use1-az2"], "g5.2xlarge": ["use1-az1"]},
        [("g5.xlarge", "us-east-1a", "0.00001"), ("g5.xlarge", "us-east-1b", "0.391")],
        zones={"us-east-1a": "use1-az1", "us-east-1b": "use1-az2"},
    )
    report = refresh(
        "aws",
        regions=["us-east-1"],
        store=tmp_path / "c.sqlite",
        clients={"aws": aws_provider(aws.factory)},
    )
    outcome = report["aws"]
    reasons = {(r.instance_type, r.zone): r.reason for r in outcome.rejected}
    assert "gpu_count must be positive" in reasons[("g5.2xlarge", "use1-az1")]
    # The implausible spot price is held back, not its row: both g5.xlarge rows are fresh.
    assert ("g5.xlarge", "use1-az1") not in reasons
    assert [(h.zone, h.field) for h in outcome.held] == [("use1-az1", "spot_price_usd_per_hour")]
    assert outcome.rows_written == 2
    assert report.exit_code == 3  # a price was not renewed: partial
    assert "rejected aws g5.2xlarge us-east-1/use1-az1: gpu_count must be positive" in report.summary()


def test_an_implausible_spot_price_keeps_the_fresh_on_demand_price_beside_it(tmp_path: Any) -> None:
    """Issue 38: EC2 answering $0.00001 spot prices used to reject the rows whole and keep the bundle's four-month-old
    on-demand prices; now the fresh on-demand price lands and the spot price falls back to the bundled one, dated."""
    from planner.catalog.store import CatalogStore
    from planner.refresh import refresh

    pricing = PricingEndpoint({("g5.xlarge", "us-east-1"): [price_item("g5.xlarge", "us-east-1", "0.9500000000")]})
    aws = StubbedAws(["us-east-1"], pricing)
    stub_region(
        aws,
        "us-east-1",
        [G5],
        {"g5.xlarge": ["use1-az1", "use1-az2"]},
        [("g5.xlarge", "us-east-1a", "0.00001"), ("g5.xlarge", "us-east-1b", "0.00001")],
        zones={"us-east-1a": "use1-az1", "us-east-1b": "use1-az2"},
    )
    with CatalogStore(tmp_path / "c.sqlite") as store:  # seeded with the bundled catalog of July 2026
        report = refresh("aws", regions=["us-east-1"], store=store, clients={"aws": aws_provider(aws.factory)})
        frame = store.read_current()
    rows = frame[(frame["instance_type"] == "g5.xlarge") & (frame["region"] == "us-east-1")].set_index("zone")
    assert rows.loc["use1-az1", "price_usd_per_hour"] == 0.95  # fresh
    assert rows.loc["use1-az1", "as_of"] == NOW.isoformat(timespec="seconds")
    assert rows.loc["use1-az1", "spot_price_usd_per_hour"] == 0.4328  # the bundled spot price ...
    assert rows.loc["use1-az1", "spot_as_of"] == "2026-07-09T00:00:00+00:00"  # ... with its own date
    assert rows.loc["use1-az2", "spot_price_usd_per_hour"] == 0.4516
    outcome = report["aws"]
    assert outcome.rejected == () and outcome.rows_written == 2
    held = {(h.zone, h.field, h.value) for h in outcome.held}
    assert held == {("use1-az1", "spot_price_usd_per_hour", 1e-05), ("use1-az2", "spot_price_usd_per_hour", 1e-05)}
    assert (
        "held back aws g5.xlarge us-east-1/use1-az1: spot_price_usd_per_hour 1e-05 held back (1e-05 is implausibly "
        "low for 1 GPU(s)); kept the previous 0.4328 of 2026-07-09T00:00:00+00:00"
    ) in report.summary()
    assert report.to_dict()["providers"][0]["held_back"][0]["field"] == "spot_price_usd_per_hour"


def test_current_gpu_names_are_accepted_and_memory_is_the_tables_gib() -> None:
    """Issue 9: a live refresh rejected T4g, RTX PRO 4500 and RTX PRO Server 6000 as unknown GPUs."""
    types = [
        instance_type("g5g.xlarge", "T4g", 1, 15360, 4, 8192),
        instance_type("g7e.2xlarge", "RTX PRO Server 6000", 1, 98304, 8, 65536),
        instance_type("g7.2xlarge", "RTX PRO 4500", 1, 32768, 8, 32768),
        instance_type("g6.xlarge", "L4", 1, 22888, 4, 16384),
    ]
    names = [t["InstanceType"] for t in types]
    pricing = PricingEndpoint({(n, "us-east-1"): [price_item(n, "us-east-1", "1.0000000000")] for n in names})
    aws = StubbedAws(["us-east-1"], pricing)
    stub_region(aws, "us-east-1", types, {n: ["use1-az1"] for n in names}, [], zones={"us-east-1a": "use1-az1"})
    result = aws_provider(aws.factory, workers=1).fetch(["us-east-1"])
    assert result.rejected == []
    gpus = {r["instance_type"]: (r["gpu"], r["gpu_memory_gib"]) for r in result.rows}
    assert gpus == {
        "g5g.xlarge": ("T4G", 16.0),
        "g7e.2xlarge": ("RTX-PRO-6000-Server", 96.0),
        "g7.2xlarge": ("RTX-PRO-4500-Server", 32.0),
        "g6.xlarge": ("L4", 24.0),  # AWS reports 22888 MiB; the catalog holds the table's GiB
    }


def test_an_empty_price_answer_for_a_whole_region_fails_it_and_keeps_its_prices(tmp_path: Any) -> None:
    """Issue 43: AWS Pricing answering [] for every type of a region turned its offerings spot-only, exit 0."""
    from factories import make_offer

    from planner.catalog.store import CatalogStore
    from planner.refresh import refresh

    aws = StubbedAws(["us-east-1"], PricingEndpoint({}))  # every GetProducts answers an empty PriceList
    _us_east_1(aws)
    old = "2026-07-09T00:00:00+00:00"
    with CatalogStore(tmp_path / "c.sqlite", seed=False) as store:
        previous = [make_offer(zone=zone, price_usd_per_hour=55.04, as_of=old) for zone in ("use1-az1", "use1-az2")]
        store.write_snapshot("aws", previous, source="before", as_of=old)
        report = refresh("aws", regions=["us-east-1"], store=store, clients={"aws": aws_provider(aws.factory)})
        frame = store.read_current()
    outcome = report["aws"]
    assert [(f.region, f.reason) for f in outcome.failed_regions] == [
        ("us-east-1", "the price answer had no on-demand price for any offering; kept the previous prices")
    ]
    p5 = frame[frame["instance_type"] == "p5.48xlarge"]
    assert set(p5["availability"]) == {"on-demand"} and set(p5["price_usd_per_hour"]) == {55.04}
    assert report.exit_code == 1 and "kept the previous catalog" in (outcome.error or "")
