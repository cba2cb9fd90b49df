"""Price gates (issue 43): a reply's price far from the offering's history or from the other clouds' price for the
same GPU is held back and named, never stored as truth, whether the cloud sells spot or not."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from factories import make_offer

from planner.catalog.price_gates import hold_back_prices, reference_prices
from planner.catalog.store import CatalogStore
from planner.providers.azure import AzureProvider
from planner.refresh import refresh
from planner.report import records
from providers.provider_fakes import LAMBDA_URL, NOW, ScriptedApi, lambda_provider, load
from providers.test_provider_azure import BASE, ND, RetailPrices, _known

H100 = "gpu_8x_h100_sxm5"


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def _serve_lambda(api: responses.RequestsMock, scale: dict[str, float]) -> None:
    """Lambda's recorded reply with the prices of the types in ``scale`` multiplied ("*": every type)."""
    reply = load("lambda_instance_types.json")
    for name, entry in reply["data"].items():
        factor = scale.get(name, scale.get("*", 1.0))
        entry["instance_type"]["price_cents_per_hour"] = round(entry["instance_type"]["price_cents_per_hour"] * factor)
    api.add_callback(
        responses.GET, re.compile(re.escape(LAMBDA_URL)), callback=ScriptedApi(lambda _: (200, {}, json.dumps(reply)))
    )


def _prices(store: CatalogStore, provider: str, instance_type: str) -> dict[str, float]:
    frame = store.read_current()
    rows = frame[(frame["provider"] == provider) & (frame["instance_type"] == instance_type)]
    return {str(r["region"]): float(r["price_usd_per_hour"]) for r in records(rows)}


def test_lambda_h100_at_a_hundred_times_its_price_is_held_back(api: responses.RequestsMock, tmp_path: Path) -> None:
    _serve_lambda(api, {H100: 100.0})  # $2,392/h for 8 H100
    with CatalogStore(tmp_path / "c.sqlite") as store:  # the bundled catalog: 8x H100 at $31.92 in July 2026
        report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
        stored = _prices(store, "lambda", H100)
        fresh_a10 = _prices(store, "lambda", "gpu_1x_a10")
    assert set(stored.values()) == {31.92}  # the previous price, not $2,392
    assert set(fresh_a10.values()) == {0.75}  # the rest of the same reply is stored
    held = report["lambda"].held
    assert {h.instance_type for h in held} == {H100} and {h.value for h in held} == {2392.0}
    assert all("74.9x the offering's previous price 31.92" in h.reason for h in held)
    assert report.exit_code == 3
    assert f"held back lambda {H100} us-east-3: price_usd_per_hour 2392 held back" in report.summary()


def test_every_price_at_two_percent_is_held_back(api: responses.RequestsMock, tmp_path: Path) -> None:
    _serve_lambda(api, {"*": 0.02})
    with CatalogStore(tmp_path / "c.sqlite") as store:
        report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
        stored = _prices(store, "lambda", H100)
    assert set(stored.values()) == {31.92}
    assert report["lambda"].held and all(h.field == "price_usd_per_hour" for h in report["lambda"].held)
    assert report.exit_code == 3


def test_a_first_refresh_is_judged_against_the_other_clouds(api: responses.RequestsMock, tmp_path: Path) -> None:
    """Without history (no previous Lambda row), the other clouds' price per GPU-hour of the same GPU judges."""
    _serve_lambda(api, {H100: 100.0})
    with CatalogStore(tmp_path / "c.sqlite", seed=False) as store:
        others = [
            make_offer(region=region, zone="", price_usd_per_hour=price)
            for region, price in (("us-east-1", 55.04), ("us-west-2", 55.04), ("eu-west-1", 62.0))
        ]
        store.write_snapshot("aws", others, source="test", as_of="2026-11-01T00:00:00+00:00")
        report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
        stored = _prices(store, "lambda", H100)
    assert stored == {}  # no previous price to keep: the offering is not stored at $2,392
    reasons = {h.reason for h in report["lambda"].held}
    assert reasons == {"299 per GPU-hour is 43.5x the other clouds' median 6.88 for H100-SXM"}
    assert any(r.instance_type == H100 and "no previous price" in r.reason for r in report["lambda"].rejected)


def test_azure_eastus_at_a_hundred_times_is_held_back(api: responses.RequestsMock, tmp_path: Path) -> None:
    pages = load("azure_retail_prices.json")
    scaled = copy.deepcopy(pages)
    for page in scaled["eastus"]:
        for item in page["Items"]:
            item["retailPrice"] *= 100
            item["unitPrice"] *= 100
    served = RetailPrices(pages=pages)
    api.add_callback(responses.GET, re.compile(re.escape(BASE) + r".*"), callback=served)
    provider = AzureProvider(requests.Session(), base_url=BASE, known_sizes=_known, now=lambda: NOW)
    with CatalogStore(tmp_path / "c.sqlite", seed=False) as store:
        refresh("azure", store=store, clients={"azure": provider})
        before = _prices(store, "azure", ND)
        served.pages = scaled
        report = refresh("azure", store=store, clients={"azure": provider})
        after = _prices(store, "azure", ND)
    assert after == before and before["eastus"] > 0
    assert {(h.instance_type, h.region) for h in report["azure"].held} >= {(ND, "eastus")}
    on_demand = [h for h in report["azure"].held if h.field == "price_usd_per_hour"]
    assert {h.instance_type for h in on_demand} == {ND, "Standard_NC24ads_A100_v4"}
    assert all("100x the offering's previous price" in h.reason for h in on_demand)
    # The spot price of the same reply, x100 too, is judged against the on-demand price kept: held back as well.
    assert [h.reason for h in report["azure"].held if h.field == "spot_price_usd_per_hour"] == [
        "14x the on-demand price 3.71"
    ]


def test_the_bundled_catalog_passes_its_own_gates(tmp_path: Path) -> None:
    """The thresholds are wide enough for every real list price of the bundle (issue 43's choice of bands)."""
    with CatalogStore(tmp_path / "c.sqlite") as store:
        rows: list[Any] = records(store.read_current())
    for provider in ("aws", "gcp", "azure", "lambda", "paperspace"):
        mine = [r for r in rows if r["provider"] == provider]
        kept, held, dropped = hold_back_prices(mine, mine, reference_prices(rows, provider))
        assert (held, dropped, len(kept)) == ([], [], len(mine)), provider
