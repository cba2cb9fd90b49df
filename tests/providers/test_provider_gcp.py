"""Google Cloud adapter against fake clients that return real proto-plus messages through the SDK's pagers."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.auth.exceptions import RefreshError

from planner.errors import MissingCredentials
from planner.providers.gcp import GcpProvider, accelerator_key
from providers.provider_fakes import gcp_provider, load


def _rows(result: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["instance_type"], r["region"]): r for r in result.rows}


def test_host_and_gpu_prices_kept_apart_and_summed() -> None:
    provider = gcp_provider()
    result = provider.fetch()
    rows = _rows(result)
    a2 = rows[("a2-highgpu-1g", "us-central1")]
    # 12 vCPU x 0.0315 + 85 GiB x 0.0042 = 0.735 host; one A100 2.80.
    assert (a2["host_price_usd_per_hour"], a2["gpu_price_usd_per_hour"]) == (0.735, 2.8)
    assert a2["price_usd_per_hour"] == pytest.approx(3.535)
    assert (a2["host_spot_price_usd_per_hour"], a2["gpu_spot_price_usd_per_hour"]) == (0.2245, 1.1)
    assert a2["spot_price_usd_per_hour"] == pytest.approx(1.3245)
    assert (a2["gpu"], a2["gpu_count"], a2["vcpus"], a2["ram_gib"], a2["zone"]) == ("A100-40GB", 1.0, 12, 85.0, "")
    assert a2["interconnect"] == "nvswitch"
    a3 = rows[("a3-highgpu-8g", "us-central1")]
    assert a3["gpu"] == "H100-SXM"
    assert a3["price_usd_per_hour"] == pytest.approx(208 * 0.029 + 1872 * 0.0025 + 8 * 10.5)
    # No spot SKUs for A3 in the fixture: no spot price at all, never a host-only one.
    assert a3["spot_price_usd_per_hour"] is None and a3["host_spot_price_usd_per_hour"] is None
    a2_8 = rows[("a2-highgpu-8g", "us-central1")]
    assert a2_8["gpu_price_usd_per_hour"] == pytest.approx(8 * 2.8)


def test_n1_with_attached_gpus_in_the_counts_google_allows() -> None:
    rows = _rows(gcp_provider().fetch(["us-central1"]))
    n1 = sorted(name for name, _ in rows if name.startswith("n1-"))
    assert n1 == [
        "n1-highmem-32+1xT4",
        "n1-highmem-32+2xT4",
        "n1-standard-4+1xT4",
        "n1-standard-4+2xT4",
        "n1-standard-4+4xT4",
        "n1-standard-96+4xT4",
    ]
    small = rows[("n1-standard-4+1xT4", "us-central1")]
    assert small["price_usd_per_hour"] == pytest.approx(4 * 0.0316 + 15 * 0.0042 + 0.33)
    assert (small["gpu"], small["interconnect"]) == ("T4", "pcie")
    assert rows[("n1-standard-96+4xT4", "us-central1")]["gpu_price_usd_per_hour"] == pytest.approx(4 * 0.33)


def test_pager_follows_next_page_token_and_unpriced_shapes_are_reported() -> None:
    provider = gcp_provider()
    result = provider.fetch()
    assert provider._catalog.page_requests == ["", "page-2"]
    reasons = {(r.instance_type, r.region): r.reason for r in result.rejected}
    # The L4 SKU is priced in EUR (malformed for us): G2 has no GPU price, so no row, and the SKU is named.
    assert "g2-standard-8" in {name for name, _ in reasons}
    assert any("no USD price" in note for note in result.notes)
    assert ("a2-highgpu-1g", "europe-west4") in reasons  # no SKU covers that region
    assert {r["region"] for r in result.rows} == {"us-central1"}
    assert result.regions == ["europe-west4", "us-central1"]


def test_retries_throttling_5xx_and_timeouts() -> None:
    provider = gcp_provider(
        machine_faults=[api_exceptions.TooManyRequests("quota")],
        sku_faults=[api_exceptions.ServiceUnavailable("down"), api_exceptions.DeadlineExceeded("slow")],
    )
    result = provider.fetch(["us-central1"])
    assert provider._machine_types.calls == 2
    assert provider._catalog.calls == 3
    assert ("a2-highgpu-1g", "us-central1") in _rows(result)


def test_an_empty_sku_page_prices_nothing_and_says_so() -> None:
    result = gcp_provider(sku_pages=[{"skus": [], "nextPageToken": ""}]).fetch(["us-central1"])
    assert result.rows == []
    assert result.rejected and all("price SKU" in r.reason for r in result.rejected)


def test_expired_credentials_become_one_line() -> None:
    provider = gcp_provider(sku_faults=[RefreshError("invalid_grant: token expired")])
    with pytest.raises(MissingCredentials, match=r"^gcp: credentials rejected \(RefreshError\); run `gcloud auth"):
        provider.fetch()


def test_missing_application_default_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    with pytest.raises(MissingCredentials, match="gcp: no Application Default Credentials"):
        GcpProvider.from_environment()


def test_endpoints_are_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setattr("google.auth.default", lambda *a, **k: (AnonymousCredentials(), "test-project"))
    monkeypatch.setenv("GPUPLAN_GCP_BILLING_ENDPOINT", "localhost:8089")
    monkeypatch.setenv("GPUPLAN_GCP_COMPUTE_ENDPOINT", "localhost:8090")
    provider = GcpProvider.from_environment()
    assert provider._catalog.api_endpoint == "localhost:8089"
    assert provider._machine_types.api_endpoint == "localhost:8090"


def test_accelerator_ids_match_sku_names() -> None:
    assert accelerator_key("nvidia-a100-80gb") == accelerator_key("A100 80GB")
    assert accelerator_key("nvidia-h100-mega-80gb") == accelerator_key("H100 80GB Mega")
    assert accelerator_key("nvidia-tesla-a100") != accelerator_key("A100 80GB")
    assert load("gcp_skus_pages.json")["pages"][0]["nextPageToken"] == "page-2"


def test_an_unreachable_zone_fails_its_region_only() -> None:
    from planner.providers.base import RegionFailure

    machines = load("gcp_machine_types.json")
    machines["items"]["zones/us-central1-f"] = {"warning": {"code": "UNREACHABLE", "message": "backend unavailable"}}
    result = gcp_provider(machines=machines).fetch()
    assert result.failures == [RegionFailure("us-central1", "zone us-central1-f unreachable: backend unavailable")]
    assert ("a2-highgpu-1g", "us-central1") in _rows(result)  # the zones that answered still count
    # The region-wide "no results" warning of an empty zone is not a failure.
    assert "asia-east2" not in {f.region for f in result.failures}
