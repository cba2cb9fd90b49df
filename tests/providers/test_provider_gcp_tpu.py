"""Cloud TPU in a live Google Cloud refresh: chip-hour SKUs over real HTTP on loopback, slices where the catalog has
them, and the TPU API's accelerator types."""

from __future__ import annotations

import csv
import json
from typing import Any

import pytest
import requests

from planner._data import data_dir
from planner.catalog.price_gates import hold_back_prices
from planner.catalog.tpu import is_tpu
from planner.catalog.validate import validate_rows
from planner.providers.gcp_public import GcpPublicProvider, sku_from_json
from planner.providers.gcp_tpu import accelerator_type_zones, chip_prices
from planner.providers.http import JsonApi
from providers.loopback import Loopback, Reply, Seen, loopback
from providers.provider_fakes import NOW, load

SKUS = "/v1/services/6F81-5844-456A/skus"
KEY = "test-api-key"
REGIONS = ["us-central1", "us-east5"]


def tpu_skus(seen: Seen) -> Reply:
    assert seen.query.get("key") == [KEY]
    return Reply(json.dumps(load("gcp_tpu_skus.json")["pages"][0]).encode())


def provider(server: Loopback) -> GcpPublicProvider:
    api = JsonApi("gcp", "gcp", requests.Session(), None, "hint", attempts=2, backoff_s=0.001, timeout_s=5)
    return GcpPublicProvider(api, KEY, base_url=server.base_url, now=lambda: NOW)


def bundled_tpu_rows() -> list[Any]:
    with (data_dir() / "catalog" / "gcp.csv").open(newline="", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if is_tpu(r["gpu"]) and r["region"] in REGIONS]
    return validate_rows(rows).accepted


def fetch() -> tuple[Any, dict[tuple[str, str], Any]]:
    previous = bundled_tpu_rows()
    with loopback() as server:
        server.serve(SKUS, tpu_skus)
        result = provider(server).fetch(REGIONS, previous=previous)
    rows = {(r["instance_type"], r["zone"]): r for r in result.rows if is_tpu(r["gpu"])}
    return result, rows


def test_slices_are_priced_chips_times_the_chip_hour_skus() -> None:
    _result, rows = fetch()
    v6e = rows[("v6e-8", "us-central1-a")]
    assert (v6e["price_usd_per_hour"], v6e["spot_price_usd_per_hour"]) == (21.6, pytest.approx(8 * 0.59266))
    assert rows[("v6e-256", "us-east5-b")]["spot_price_usd_per_hour"] == pytest.approx(256 * 1.27575)
    v5p = rows[("v5p-8", "us-central1-a")]  # 4 chips: the name counts TensorCores
    assert (v5p["gpu_count"], v5p["price_usd_per_hour"], v5p["spot_price_usd_per_hour"]) == (4.0, 16.8, 3.12196)
    # The spot SKU filed under usage type OnDemand is read as spot, never as the on-demand price.
    east = rows[("v5p-8", "us-east5-a")]
    assert (east["price_usd_per_hour"], east["spot_price_usd_per_hour"]) == (16.8, None)
    assert rows[("v5litepod-8", "us-central1-a")]["price_usd_per_hour"] == pytest.approx(9.6)
    assert all(r["interconnect"] == "ici" and "tpu_slice" in r["flags"] for r in rows.values())
    assert [str(r) for r in validate_rows(list(rows.values())).rejected] == []


def test_commitment_dws_foreign_currency_and_uncovered_skus_are_not_prices() -> None:
    result, rows = fetch()
    per_chip = {round(r["price_usd_per_hour"] / r["gpu_count"], 6) for r in rows.values() if r["gpu"] == "TPU-v6e"}
    assert per_chip == {2.7}  # not the 1-year commitment's 1.89 nor DWS's 1.35
    skipped = " ".join(result.notes)
    assert "TpuV4 Pod" in skipped and "T0A1-0004-0004" in skipped  # v4 not covered; the EUR SKU not read as USD


def test_no_slice_in_a_zone_the_catalog_did_not_list_and_unpriced_zones_are_named() -> None:
    result, rows = fetch()
    listed = {(r["instance_type"], r["zone"]) for r in bundled_tpu_rows()}
    assert set(rows) <= listed
    # v5e is listed in us-east5 but no us-east5 v5e SKU exists: named, not guessed from us-central1.
    assert not any(zone.startswith("us-east5") for name, zone in rows if name.startswith("v5litepod"))
    assert any("us-east5 chip-hour SKU for TPU-v5e" in r.reason for r in result.rejected)


def test_a_placeholder_price_is_held_back_by_the_price_gates() -> None:
    _, rows = fetch()
    row = dict(rows[("v6e-256", "us-central1-a")])
    row["spot_price_usd_per_hour"] = 700.0  # SkyPilot's filler for a price it has none of
    kept, held, dropped = hold_back_prices([row], [], {})  # type: ignore[list-item]
    assert [h.field for h in held] == ["spot_price_usd_per_hour"] and "placeholder" in held[0].reason
    assert kept[0]["spot_price_usd_per_hour"] is None and kept[0]["price_usd_per_hour"] == 691.2
    assert dropped == []


def test_chip_prices_keep_the_regions_asked() -> None:
    skus = [sku_from_json(entry) for entry in load("gcp_tpu_skus.json")["pages"][0]["skus"]]
    prices, _ = chip_prices(skus, {"us-east5"})
    assert {key[1] for key in prices} == {"us-east5"}
    assert prices[("TPU-v5p", "us-east5", "on_demand")] == 4.2


# The TPU API v2 answer for one zone (projects.locations.acceleratorTypes.list), as the REST API returns it.
ACCELERATOR_TYPES = {
    "acceleratorTypes": [
        {
            "name": "projects/p/locations/us-east5-a/acceleratorTypes/v5p-8",
            "type": "v5p-8",
            "acceleratorConfigs": [{"type": "V5P", "topology": "2x2x1"}],
        },
        {
            "name": "projects/p/locations/us-east5-a/acceleratorTypes/v5p-128",
            "type": "v5p-128",
            "acceleratorConfigs": [{"type": "V5P", "topology": "4x4x4"}],
        },
        {
            "name": "projects/p/locations/us-east5-a/acceleratorTypes/v4-8",
            "type": "v4-8",
            "acceleratorConfigs": [{"type": "V4", "topology": "2x2x1"}],
        },
    ]
}


def test_accelerator_types_say_where_each_slice_is_sold() -> None:
    pairs = [("us-east5-a", entry) for entry in ACCELERATOR_TYPES["acceleratorTypes"]]
    sold, unknown = accelerator_type_zones(pairs)
    assert sold == {("TPU-v5p", "us-east5", "us-east5-a"): ["v5p-8", "v5p-128"]}
    assert unknown == ["us-east5-a v4-8"]


LOCATIONS = "/v2/projects/test-project/locations"


def tpu_api_server(server: Loopback, fail: bool = False) -> None:
    """The TPU API on loopback: three zones, us-east5-a's types in two pages (nextPageToken)."""
    if fail:
        server.serve(LOCATIONS, Reply(b'{"error": {"code": 503, "message": "unavailable"}}', 503))
        return
    zones = [
        {"name": f"projects/test-project/locations/{z}", "locationId": z} for z in ("europe-west4-b", "us-east5-a")
    ]
    server.serve(LOCATIONS, Reply(json.dumps({"locations": zones}).encode()))
    types = ACCELERATOR_TYPES["acceleratorTypes"]

    def east(seen: Seen) -> Reply:
        if seen.query.get("pageToken") == ["next"]:
            return Reply(json.dumps({"acceleratorTypes": types[1:]}).encode())
        return Reply(json.dumps({"acceleratorTypes": types[:1], "nextPageToken": "next"}).encode())

    server.serve(f"{LOCATIONS}/us-east5-a/acceleratorTypes", east)
    server.serve(f"{LOCATIONS}/europe-west4-b/acceleratorTypes", Reply(b'{"acceleratorTypes": []}'))


def gpu_and_tpu_pages() -> list[dict[str, Any]]:
    """The GPU fixture's SKU pages with the TPU SKUs on the first: one Compute Engine listing, as the API gives."""
    pages = load("gcp_skus_pages.json")["pages"]
    pages[0]["skus"] = [*pages[0]["skus"], *load("gcp_tpu_skus.json")["pages"][0]["skus"]]
    return pages


def full_provider(server: Loopback) -> Any:
    from planner.providers.gcp import GcpProvider, default_retry
    from planner.providers.gcp_tpu import TpuApi
    from providers.provider_fakes import FakeCatalog, FakeComputeList

    api = JsonApi("gcp", "gcp", requests.Session(), None, "hint", attempts=1, backoff_s=0.001, timeout_s=5)
    return GcpProvider(
        FakeComputeList("machine_types", load("gcp_machine_types.json")),
        FakeComputeList("accelerator_types", load("gcp_accelerator_types.json")),
        FakeCatalog(gpu_and_tpu_pages()),
        project="test-project",
        retry=default_retry(initial_s=0.001, maximum_s=0.002, deadline_s=5),
        now=lambda: NOW,
        tpu=TpuApi(api, "test-project", base_url=server.base_url),
    )


def test_full_refresh_prices_the_slices_the_tpu_api_lists() -> None:
    with loopback() as server:
        tpu_api_server(server)
        result = full_provider(server).fetch(["us-east5"])
        pages = [s.query.get("pageToken") for s in server.requests_to(f"{LOCATIONS}/us-east5-a/acceleratorTypes")]
    assert pages == [None, ["next"]]
    tpus = {(r["instance_type"], r["zone"]): r for r in result.rows if is_tpu(r["gpu"])}
    assert set(tpus) == {("v5p-8", "us-east5-a"), ("v5p-128", "us-east5-a")}  # v4-8 is not a covered slice
    assert tpus[("v5p-128", "us-east5-a")]["price_usd_per_hour"] == pytest.approx(64 * 4.2)
    assert "us-east5" in result.regions and any("v4-8" in n for n in result.notes)


def test_a_failing_tpu_api_keeps_the_catalogs_zones_and_the_gpus() -> None:
    previous = bundled_tpu_rows()
    with loopback() as server:
        tpu_api_server(server, fail=True)
        result = full_provider(server).fetch(["us-central1"], previous=previous)
    tpus = {(r["instance_type"], r["zone"]) for r in result.rows if is_tpu(r["gpu"])}
    assert ("v5p-8", "us-central1-a") in tpus  # priced where the catalog had it
    assert any("TPU API failed" in n for n in result.notes)
    assert any(not is_tpu(r["gpu"]) for r in result.rows)  # the GPU shapes still refreshed
