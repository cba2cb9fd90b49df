"""A Pricing API reply that cannot be read fails its region (exit 3, previous prices kept), never reads as "no price"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore
from planner.providers.aws import PricingReplyError, parse_price_item
from providers.provider_fakes import (
    PricingEndpoint,
    StubbedAws,
    _Raw,
    aws_provider,
    instance_type,
    price_item,
    stub_region,
)

G5 = instance_type("g5.xlarge", "A10G", 1, 22888, 4, 16384)
P5 = instance_type("p5.48xlarge", "H100", 8, 81920, 192, 2097152, cards=32, card_gbps=100.0)


@pytest.fixture(autouse=True)
def tiny_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, ctx: 0.001)


class BrokenPricing(PricingEndpoint):
    """A real botocore Pricing client whose answers for ``region`` are cut off: a 200 with half a JSON body."""

    def __init__(self, prices: dict[tuple[str, str], list[str]], broken_region: str, body: bytes) -> None:
        super().__init__(prices)
        self.broken_region = broken_region
        self.body = body

    def _answer(self, request: Any, **kwargs: Any) -> Any:
        import json

        from botocore.awsrequest import HTTPHeaders

        terms = {f["Field"]: f["Value"] for f in json.loads(request.body)["Filters"]}
        if terms["regionCode"] != self.broken_region:
            return super()._answer(request, **kwargs)
        self.requests.append(terms)
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/x-amz-json-1.1"
        return self._response("https://api.pricing.us-east-1.amazonaws.com/", 200, headers, _Raw(self.body))


PRICES = {
    ("p5.48xlarge", "us-east-1"): [price_item("p5.48xlarge", "us-east-1", "55.0400000000")],
    ("g5.xlarge", "eu-west-1"): [price_item("g5.xlarge", "eu-west-1", "1.1240000000")],
}
TRUNCATED_REPLY = b'{"FormatVersion":"aws_v1","PriceList":["{\\"product\\":{\\"productFamily\\":\\"Compute'
TRUNCATED_ITEM = b'{"FormatVersion":"aws_v1","PriceList":["{\\"product\\":{\\"attributes\\":{\\"usagetype'
NO_PRICE_LIST = b'{"FormatVersion":"aws_v1"}'


def _two_regions(pricing: PricingEndpoint) -> StubbedAws:
    aws = StubbedAws(["us-east-1", "eu-west-1"], pricing)
    stub_region(
        aws,
        "us-east-1",
        [P5],
        {"p5.48xlarge": ["use1-az1"]},
        [("p5.48xlarge", "us-east-1a", "30.1")],
        zones={"us-east-1a": "use1-az1"},
    )
    stub_region(
        aws,
        "eu-west-1",
        [G5],
        {"g5.xlarge": ["euw1-az1"]},
        [("g5.xlarge", "eu-west-1a", "0.41")],
        zones={"eu-west-1a": "euw1-az1"},
    )
    return aws


@pytest.mark.parametrize("body", [TRUNCATED_REPLY, TRUNCATED_ITEM, NO_PRICE_LIST], ids=["cut", "cut-item", "no-list"])
def test_unreadable_pricing_reply_fails_the_region_not_the_price(body: bytes) -> None:
    aws = _two_regions(BrokenPricing(PRICES, "eu-west-1", body))
    result = aws_provider(aws.factory).fetch(["us-east-1", "eu-west-1"])
    assert [f.region for f in result.failures] == ["eu-west-1"]
    assert "PricingReplyError" in result.failures[0].reason
    # The other region is untouched, and no eu-west-1 offering turned spot-only.
    assert {(r["region"], r["price_usd_per_hour"]) for r in result.rows} == {("us-east-1", 55.04)}


def test_truncated_reply_keeps_previous_prices_and_exits_3(tmp_path: Path) -> None:
    from planner.refresh import refresh

    store_path = tmp_path / "c.sqlite"
    previous = make_offer(
        instance_type="g5.xlarge", region="eu-west-1", zone="euw1-az1", gpu="A10G", gpu_count=1.0,
        gpu_memory_gib=22.35, vcpus=4, ram_gib=16.0, interconnect="pcie", network_gbps=10.0,
        price_usd_per_hour=1.006, spot_price_usd_per_hour=0.4, as_of="2026-10-01T00:00:00+00:00",
    )  # fmt: skip
    with CatalogStore(store_path, seed=False) as store:
        store.write_snapshot("aws", [previous], source="before", as_of="2026-10-01T00:00:00+00:00")
    aws = _two_regions(BrokenPricing(PRICES, "eu-west-1", TRUNCATED_REPLY))
    report = refresh(
        "aws",
        regions=["us-east-1", "eu-west-1"],
        store=store_path,
        clients={"aws": aws_provider(aws.factory)},
    )
    assert report.exit_code == 3
    assert "region eu-west-1 failed: PricingReplyError" in report.summary()
    with CatalogStore(store_path, seed=False) as store:
        rows = store.read_current().set_index("region")
    assert rows.loc["eu-west-1", "price_usd_per_hour"] == pytest.approx(1.006)  # the last good price
    assert rows.loc["eu-west-1", "availability"] == "on-demand"
    fresh = rows.loc[["us-east-1"]].set_index("instance_type")
    assert fresh.loc["p5.48xlarge", "price_usd_per_hour"] == pytest.approx(55.04)


def test_an_empty_price_list_still_means_no_published_price() -> None:
    aws = _two_regions(PricingEndpoint({("p5.48xlarge", "us-east-1"): PRICES[("p5.48xlarge", "us-east-1")]}))
    result = aws_provider(aws.factory).fetch(["us-east-1", "eu-west-1"])
    assert result.failures == []
    g5 = next(r for r in result.rows if r["region"] == "eu-west-1")
    assert (g5["price_usd_per_hour"], g5["availability"]) == (None, "spot-only")


@pytest.mark.parametrize("item", ['{"product": {"attr', "[1, 2]", '{"terms": {}}', {"product": "x", "terms": {}}])
def test_parse_price_item_unreadable_entry_is_a_reply_error(item: Any) -> None:
    with pytest.raises(PricingReplyError):
        parse_price_item(item)
