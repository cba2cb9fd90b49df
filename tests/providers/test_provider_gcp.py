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


def _sku(
    sku_id: str, description: str, usage: str, usd: float, regions: list[str], group: str = "GPU", unit: str = "h"
) -> dict[str, Any]:
    """One Cloud Billing SKU in the API's JSON shape (see tests/data/providers/gcp_skus_pages.json)."""
    units, nanos = int(usd), round((usd - int(usd)) * 1e9)
    return {
        "name": f"services/6F81-5844-456A/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {"resourceFamily": "Compute", "resourceGroup": group, "usageType": usage},
        "serviceRegions": regions,
        "pricingInfo": [
            {
                "pricingExpression": {
                    "usageUnit": unit,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": str(units), "nanos": nanos},
                        }
                    ],
                }
            }
        ],
    }


def _machines_with(*extra: tuple[str, int, int, str, int]) -> dict[str, Any]:
    machines = load("gcp_machine_types.json")
    zone = machines["items"]["zones/us-central1-a"]["machineTypes"]
    for name, cpus, memory_mb, accelerator, count in extra:
        zone.append(
            {
                "name": name,
                "guestCpus": cpus,
                "memoryMb": memory_mb,
                "zone": "us-central1-a",
                "accelerators": [{"guestAcceleratorType": accelerator, "guestAcceleratorCount": count}],
            }
        )
    return machines


def test_dws_reservation_and_commitment_skus_never_price_on_demand() -> None:
    """Issue 9: the DWS H100 SKU ($4.20, usage type OnDemand) listed before the list SKU must not win."""
    pages = load("gcp_skus_pages.json")["pages"]
    decoys = [
        _sku(
            "D1",
            "Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas",
            "OnDemand",
            4.200761,
            ["us-central1"],
        ),
        _sku("D2", "Reserved Nvidia H100 80GB GPU in Americas in Calendar Mode", "OnDemand", 4.6, ["us-central1"]),
        _sku("D3", "Nvidia H100 80GB GPU running in Americas (DWS)", "OnDemand", 4.1, ["us-central1"]),
        _sku(
            "D4",
            "Commitment v1: Nvidia H100 80GB GPU running in Americas for 1 Year",
            "Commit1Yr",
            6.4,
            ["us-central1"],
        ),
    ]
    first = dict(pages[0], skus=decoys + pages[0]["skus"])
    rows = _rows(gcp_provider(sku_pages=[first, *pages[1:]]).fetch(["us-central1"]))
    a3 = rows[("a3-highgpu-8g", "us-central1")]
    assert a3["gpu_price_usd_per_hour"] == pytest.approx(8 * 10.5)


def test_a4_slice_sku_prices_the_whole_vm_and_spot_only_shapes_have_no_on_demand_price() -> None:
    pages = load("gcp_skus_pages.json")["pages"]
    extra = [
        _sku("A4", "A4 Nvidia B200 (1 gpu slice) running in Americas", "OnDemand", 16.11, ["us-central1"]),
        # Some spot slice SKUs carry usage type OnDemand: the description decides.
        _sku(
            "A4S",
            "Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas",
            "OnDemand",
            4.9542,
            ["us-central1"],
        ),
        _sku(
            "H1S",
            "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas",
            "Preemptible",
            2.25,
            ["us-central1"],
        ),
        _sku(
            "A3S1", "Spot Preemptible A3 Instance Core running in Americas", "Preemptible", 0.01, ["us-central1"], "CPU"
        ),
        _sku(
            "A3S2",
            "Spot Preemptible A3 Instance Ram running in Americas",
            "Preemptible",
            0.001,
            ["us-central1"],
            "RAM",
            "GiBy.h",
        ),
    ]
    first = dict(pages[0], skus=pages[0]["skus"] + extra)
    machines = _machines_with(
        ("a4-highgpu-8g", 224, 3968 * 1024, "nvidia-b200", 8), ("a3-highgpu-1g", 26, 234 * 1024, "nvidia-h100-80gb", 1)
    )
    rows = _rows(gcp_provider(sku_pages=[first, *pages[1:]], machines=machines).fetch(["us-central1"]))
    a4 = rows[("a4-highgpu-8g", "us-central1")]
    # Its OnDemand slice SKU prices reserved capacity: A4 is not sold on demand, as A3 Ultra is not.
    assert (a4["price_usd_per_hour"], a4["availability"]) == (None, "spot-only")
    assert a4["spot_price_usd_per_hour"] == pytest.approx(8 * 4.9542)
    assert a4["host_price_usd_per_hour"] is None and "gpu_sku_prices_whole_vm" in a4["flags"]
    small = rows[("a3-highgpu-1g", "us-central1")]
    assert small["price_usd_per_hour"] is None and small["availability"] == "spot-only"
    assert small["spot_price_usd_per_hour"] == pytest.approx(26 * 0.01 + 234 * 0.001 + 2.25)


def test_g4_rtx_pro_6000_sku_without_the_word_gpu() -> None:
    pages = load("gcp_skus_pages.json")["pages"]
    extra = [
        _sku("G4", "RTX 6000 96GB running in Americas", "OnDemand", 3.5, ["us-central1"]),
        _sku("G4C", "G4 Instance Core running in Americas", "OnDemand", 0.02, ["us-central1"], "CPU"),
        _sku("G4R", "G4 Instance Ram running in Americas", "OnDemand", 0.002, ["us-central1"], "RAM", "GiBy.h"),
    ]
    first = dict(pages[0], skus=pages[0]["skus"] + extra)
    machines = _machines_with(("g4-standard-48", 48, 180 * 1024, "nvidia-rtx-pro-6000", 1))
    rows = _rows(gcp_provider(sku_pages=[first, *pages[1:]], machines=machines).fetch(["us-central1"]))
    g4 = rows[("g4-standard-48", "us-central1")]
    assert g4["gpu"] == "RTX-PRO-6000-Server" and g4["gpu_memory_gib"] == 96
    assert g4["price_usd_per_hour"] == pytest.approx(48 * 0.02 + 180 * 0.002 + 3.5)
