"""Google Cloud with only an API key: the Billing Catalog REST API over real HTTP on loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from planner.catalog.store import CatalogStore
from planner.catalog.validate import validate_rows
from planner.errors import MissingCredentials
from planner.providers.gcp import GcpProvider
from planner.providers.gcp_public import GcpPublicProvider
from planner.providers.http import JsonApi
from planner.refresh import refresh_provider
from planner.report import records
from providers.loopback import Loopback, Reply, Seen, loopback
from providers.provider_fakes import NOW, load

SKUS = "/v1/services/6F81-5844-456A/skus"
KEY = "test-api-key"
INVALID_KEY = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
    }
}


def catalog(seen: Seen) -> Reply:
    """The SKU list in pages: page 1 without a token, the next one by nextPageToken; a wrong key is HTTP 400."""
    if seen.query.get("key") != [KEY]:
        return Reply(json.dumps(INVALID_KEY).encode(), 400)
    pages = load("gcp_skus_pages.json")["pages"]
    token = seen.query.get("pageToken", [""])[0]
    index = int(token.rsplit("-", 1)[-1]) - 1 if token else 0
    return Reply(json.dumps(pages[index]).encode(), gzip=index == 1)


def provider(server: Loopback, key: str = KEY, attempts: int = 3, backoff_s: float = 0.001) -> GcpPublicProvider:
    api = JsonApi("gcp", "gcp", requests.Session(), None, "hint", attempts=attempts, backoff_s=backoff_s, timeout_s=5)
    return GcpPublicProvider(api, key, base_url=server.base_url, now=lambda: NOW)


def by_type(rows: list[Any]) -> dict[str, Any]:
    return {r["instance_type"]: r for r in rows}


def test_prices_the_catalog_shapes_from_both_pages() -> None:
    with loopback() as server:
        server.serve(SKUS, catalog)
        result = provider(server).fetch(["us-central1"])
        tokens = [s.query.get("pageToken") for s in server.requests_to(SKUS)]
    assert tokens == [None, ["page-2"]]
    rows = by_type(result.rows)
    a2 = rows["a2-highgpu-1g"]  # 12 vCPUs x 0.0315 + 85 GiB x 0.0042 + one A100 at 2.80
    assert (a2["host_price_usd_per_hour"], a2["gpu_price_usd_per_hour"]) == (0.735, 2.8)
    assert a2["price_usd_per_hour"] == pytest.approx(3.535)
    assert a2["spot_price_usd_per_hour"] == pytest.approx(12 * 0.0095 + 85 * 0.0013 + 1.1)
    n1 = rows["n1-standard-4+1xT4"]  # from page 2, served gzip-encoded
    assert n1["price_usd_per_hour"] == pytest.approx(4 * 0.0316 + 15 * 0.0042 + 0.33)
    assert rows["a3-highgpu-8g"]["price_usd_per_hour"] == pytest.approx(208 * 0.029 + 1872 * 0.0025 + 8 * 10.5)
    assert "g2-standard-4" not in rows  # its L4 SKU is priced in EUR: skipped, never read as USD
    assert all("specs_from_bundled" in r["flags"] for r in result.rows)
    assert all(r["region"] == "us-central1" for r in result.rows)
    assert validate_rows(result.rows).rejected == []


PRICED_SHAPES = ("a2-highgpu-1g", "n1-standard-4+1xT4", "a3-highgpu-8g")


def test_shapes_follow_the_current_catalog_not_every_region(tmp_path: Path) -> None:
    with loopback() as server:
        server.serve(SKUS, catalog)
        store = CatalogStore(tmp_path / "c.sqlite")
        # Only the bundled shapes the fake SKU pages price: against all 486 bundled rows, these few would be a
        # refresh that read almost nothing (kept back by refresh's own gate).
        bundled = store.read_current()
        shapes = bundled[(bundled["provider"] == "gcp") & bundled["instance_type"].isin(PRICED_SHAPES)]
        store.write_snapshot("gcp", records(shapes), source="bundled", as_of=str(shapes["as_of"].min()))
        report = refresh_provider(provider(server), store)
    assert report.error is None
    current = store.read_current()
    gcp = current[current["provider"] == "gcp"]
    fresh = gcp[~gcp["flags"].str.contains("carried_over")]
    # a2-highgpu-1g is priced in the regions the SKUs name that the catalog lists it in, nowhere else.
    assert set(fresh[fresh["instance_type"] == "a2-highgpu-1g"]["region"]) == {"us-central1", "us-east1"}


def test_throttled_page_waits_for_retry_after() -> None:
    replies = [Reply(b'{"error": {"code": 429}}', 429, {"Retry-After": "0.2"})]

    def throttled(seen: Seen) -> Reply:
        return replies.pop(0) if replies else catalog(seen)

    with loopback() as server:
        server.serve(SKUS, throttled)
        started = time.monotonic()
        result = provider(server, backoff_s=20.0).fetch(["us-central1"])
        assert 0.2 <= time.monotonic() - started < 10
    assert "a2-highgpu-1g" in by_type(result.rows)


def test_truncated_page_fails_the_refresh_and_keeps_the_catalog(tmp_path: Path) -> None:
    whole = json.dumps(load("gcp_skus_pages.json")["pages"][0]).encode()
    with loopback() as server:
        server.serve(SKUS, Reply(whole[: len(whole) // 2]))
        store = CatalogStore(tmp_path / "c.sqlite")
        before = len(store.read_current())
        report = refresh_provider(provider(server), store)
    assert report.error is not None and "not JSON" in report.error
    assert len(store.read_current()) == before


def test_invalid_key_is_a_credentials_line_without_the_key() -> None:
    with loopback() as server:
        server.serve(SKUS, catalog)
        with pytest.raises(
            MissingCredentials, match=r"^gcp: the Cloud Billing API refused the API key \(HTTP 400\)"
        ) as caught:
            provider(server, key="wrong-key").fetch(["us-central1"])
    assert "wrong-key" not in str(caught.value)


def test_api_key_without_credentials_chooses_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    monkeypatch.setenv("GPUPLAN_GCP_API_KEY", KEY)
    with loopback() as server:
        server.serve(SKUS, catalog)
        monkeypatch.setenv("GPUPLAN_GCP_BILLING_URL", server.base_url)
        chosen = GcpProvider.from_environment(timeout_s=5)
        assert isinstance(chosen, GcpPublicProvider)
        result = chosen.fetch(["us-central1"])
    assert result.notes[0].startswith("gcp: no credentials, so the catalog's shapes were priced with the API key")
    assert result.rows


def test_no_key_and_no_credentials_names_both_ways(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    monkeypatch.delenv("GPUPLAN_GCP_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(MissingCredentials, match="GPUPLAN_GCP_API_KEY"):
        GcpProvider.from_environment()
    with pytest.raises(MissingCredentials, match="GPUPLAN_GCP_API_KEY"):
        GcpProvider.from_environment(public=True)
