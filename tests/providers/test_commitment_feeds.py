"""Commitment prices from each cloud's live feed, through the same seams as the offerings, and into the store."""

from __future__ import annotations

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


def test_a_refresh_stores_commitments_beside_the_catalog(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    with CatalogStore(path) as store:
        report = refresh_provider(gcp_provider(sku_pages=_gcp_pages()), store, regions=["us-central1"])
    assert report.error is None
    assert any("commitment prices stored" in note for note in report.notes)
    prices = api.commitment_prices("1y", provider="gcp", region="us-central1", store=path)
    live = prices[prices["instance_type"] == "a2-highgpu-1g"].iloc[0]
    assert live["hourly_usd_per_hour"] == pytest.approx(2.2695)
    assert live["price_source"].startswith("Cloud Billing Catalog")
    # Regions the refresh did not renew keep their previous (bundled) commitment prices.
    assert len(api.commitment_prices("1y", provider="gcp", region="europe-west4", store=path)) == 2


def test_a_refresh_without_commitments_keeps_the_previous_ones(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    with CatalogStore(path) as store:
        refresh_provider(gcp_provider(sku_pages=_gcp_pages()), store, regions=["us-central1"])
        before = (tmp_path / "commitments" / "gcp.csv").read_bytes()
        refresh_provider(gcp_provider(), store, regions=["us-central1"])  # the fixture has no complete commitment
    assert (tmp_path / "commitments" / "gcp.csv").read_bytes() == before
