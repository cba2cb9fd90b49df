"""One test per upstream quirk: on a tiny in-code row through apply_corrections, and on the built bundle."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from planner.catalog.corrections import apply_corrections, load_corrections
from planner.catalog.families import family_facts
from planner.catalog.schema import COLUMN_NAMES
from planner.catalog.validate import price_outliers, validate_rows
from planner.hardware import lookup

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "data" / "catalog"
REFERENCE = REPO.parent / "shared" / "reference" / "catalog"


def make_row(**overrides: Any) -> dict[str, Any]:
    """A valid on-demand Azure offering in the stored schema; override any column."""
    row: dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    row.update(
        provider="azure",
        instance_type="Standard_NC24ads_A100_v4",
        region="eastus",
        zone="",
        gpu="A100-PCIe-80GB",
        gpu_count=1.0,
        gpu_memory_gib=80.0,
        vcpus=24,
        ram_gib=220.0,
        interconnect="pcie",
        price_usd_per_hour=3.67,
        spot_price_usd_per_hour=0.9,
        availability="on-demand",
        price_source="test",
        as_of="2025-04-28T00:00:00+00:00",
        flags="",
    )
    row.update(overrides)
    return row


def gcp_row(**overrides: Any) -> dict[str, Any]:
    """A Google Cloud offering with its host and GPU parts."""
    row = make_row(
        provider="gcp",
        instance_type="a3-highgpu-1g",
        region="us-central1",
        gpu="H100-SXM",
        gpu_memory_gib=80.0,
        vcpus=26,
        ram_gib=234.0,
        interconnect="nvswitch",
        host_price_usd_per_hour=1.18251,
        gpu_price_usd_per_hour=4.20076,
        host_spot_price_usd_per_hour=0.64454,
        gpu_spot_price_usd_per_hour=5.3387,
        price_usd_per_hour=5.38327,
        spot_price_usd_per_hour=5.98324,
    )
    row.update(overrides)
    return row


def bundled(provider: str) -> list[dict[str, str]]:
    with (BUNDLE / f"{provider}.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def flags(row: dict[str, Any]) -> set[str]:
    return set(str(row["flags"]).split(";")) - {""}


def test_table_is_well_formed_and_every_row_has_a_reason_and_source() -> None:
    corrections = load_corrections()
    assert corrections
    for correction in corrections:
        assert correction.reason and correction.source
        assert correction.provider in ("aws", "gcp", "azure")


def test_input_rows_are_not_modified() -> None:
    row = make_row(instance_type="Standard_ND96isr_H100_v5", gpu="H100-SXM", gpu_count=12.0)
    apply_corrections([row], "azure")
    assert row["gpu_count"] == 12.0 and row["flags"] == ""


# Azure Standard_ND96isr_H100_v5: upstream says 12 GPUs, the VM has 8.
def test_nd_h100_v5_gpu_count_is_eight() -> None:
    row = make_row(instance_type="Standard_ND96isr_H100_v5", gpu="H100-SXM", gpu_count=12.0, gpu_memory_gib=80.0)
    (fixed,), excluded = apply_corrections([row], "azure")
    assert fixed["gpu_count"] == 8.0 and "corrected:gpu_count" in flags(fixed) and excluded == []
    rows = [r for r in bundled("azure") if r["instance_type"] == "Standard_ND96isr_H100_v5"]
    assert len(rows) >= 20 and {r["gpu_count"] for r in rows} == {"8"}


# GCP a4-highgpu-8g: no vCPU/RAM SKUs, so upstream's host price 0.0 means "included in the GPU slice SKU".
def test_gcp_a4_gpu_sku_prices_the_whole_vm() -> None:
    row = gcp_row(
        instance_type="a4-highgpu-8g",
        region="asia-southeast1",
        gpu="B200",
        gpu_count=8.0,
        gpu_memory_gib=180.0,
        host_price_usd_per_hour=0.0,
        gpu_price_usd_per_hour=154.656,
        price_usd_per_hour=154.656,
        host_spot_price_usd_per_hour=0.0,
        gpu_spot_price_usd_per_hour=39.2168,
        spot_price_usd_per_hour=39.2168,
    )
    (fixed,), _ = apply_corrections([row], "gcp")
    assert fixed["price_usd_per_hour"] == 154.656 and fixed["spot_price_usd_per_hour"] == 39.2168
    assert all(fixed[c] is None for c in ("host_price_usd_per_hour", "gpu_price_usd_per_hour"))
    assert "gpu_sku_prices_whole_vm" in flags(fixed) and fixed["availability"] == "on-demand"
    assert validate_rows([fixed]).rejected == []
    rows = [r for r in bundled("gcp") if r["instance_type"] == "a4-highgpu-8g"]
    assert len(rows) >= 6 and all(r["spot_price_usd_per_hour"] for r in rows)
    # Google sells A4 through reservations, flex-start and Spot only (as A3 Ultra): no on-demand price anywhere.
    assert all(not r["price_usd_per_hour"] and "not_sold_on_demand" in r["flags"] for r in rows)


# GCP: upstream took DWS (flex-start) or discounted SKUs for on-demand where a region had no OnDemand SKU.
@pytest.mark.parametrize(
    ("instance_type", "gpu", "gpu_part"),
    [
        ("a3-edgegpu-8g", "H100-SXM", 33.60609),
        ("a3-megagpu-8g", "H100-SXM", 35.39149),
        ("a3-ultragpu-8g", "H200", 36.60258),
        ("a4-highgpu-8g", "B200", 64.44),
        ("a4-highgpu-8g", "B200", 90.216),
    ],
)
def test_gcp_dws_price_taken_for_on_demand_is_missing(instance_type: str, gpu: str, gpu_part: float) -> None:
    row = gcp_row(
        instance_type=instance_type,
        gpu=gpu,
        gpu_count=8.0,
        gpu_memory_gib=lookup(gpu).spec.memory_gib,
        host_price_usd_per_hour=9.46006,
        gpu_price_usd_per_hour=gpu_part,
        price_usd_per_hour=9.46006 + gpu_part,
        host_spot_price_usd_per_hour=2.0,
        gpu_spot_price_usd_per_hour=20.0,
        spot_price_usd_per_hour=22.0,
    )
    (fixed,), _ = apply_corrections([row], "gcp")
    assert fixed["price_usd_per_hour"] is None and fixed["spot_price_usd_per_hour"] is not None
    assert fixed["availability"] == "spot-only" and "no_on_demand_price" in flags(fixed)
    honest = dict(row, gpu_price_usd_per_hour=78.37241, price_usd_per_hour=9.46006 + 78.37241)
    (kept,), _ = apply_corrections([honest], "gcp")
    assert kept["price_usd_per_hour"] == pytest.approx(9.46006 + 78.37241)


# Azure sizes: a Spot price equal to pay-as-you-go is no spot offer (SkyPilot's filled-in H100, H200 Spot meters).
def test_azure_spot_equal_to_on_demand_is_missing() -> None:
    filled = make_row(
        instance_type="Standard_NC40ads_H100_v5",
        gpu="H100-NVL",
        gpu_memory_gib=94.0,
        price_usd_per_hour=6.98,
        spot_price_usd_per_hour=6.98,
    )
    real = dict(filled, instance_type="Standard_NCC40ads_H100_v5", spot_price_usd_per_hour=1.745)
    other = make_row(spot_price_usd_per_hour=0.75)  # a real spot discount: left alone
    (fixed, kept, untouched), _ = apply_corrections([filled, real, other], "azure")
    assert fixed["spot_price_usd_per_hour"] is None and "corrected:spot_price_usd_per_hour" in flags(fixed)
    assert kept["spot_price_usd_per_hour"] == 1.745
    assert untouched["spot_price_usd_per_hour"] == 0.75
    h100 = [r for r in bundled("azure") if "H100" in r["instance_type"]]
    assert h100 and all(r["spot_price_usd_per_hour"] != r["price_usd_per_hour"] for r in h100)
    assert any(r["spot_price_usd_per_hour"] for r in h100)  # the confidential size has a real spot price
    h200 = [r for r in bundled("azure") if "H200" in r["instance_type"]]
    assert h200 and not any(r["spot_price_usd_per_hour"] for r in h200)  # Spot meters at the full price


# GCP H100: upstream's spot above on-demand marked a wrong on-demand price; the bundle build now fails on it.
def test_gcp_spot_above_on_demand_is_flagged_and_fails_the_build_check() -> None:
    (fixed,), _ = apply_corrections([gcp_row(instance_type="a3-edgegpu-8g")], "gcp")
    (accepted,) = validate_rows([fixed]).accepted
    assert "spot_above_on_demand" in flags(accepted)
    (problem,) = price_outliers([accepted])
    assert "a3-edgegpu-8g us-central1" in str(problem) and "above on-demand" in str(problem)
    assert not [r for r in bundled("gcp") if "spot_above_on_demand" in flags(r)]


def test_on_demand_far_under_the_shape_median_fails_the_build_check() -> None:
    rows = [
        gcp_row(region=region, price_usd_per_hour=price, spot_price_usd_per_hour=1.0)
        for region, price in (
            ("us-central1", 11.06),
            ("us-east4", 11.07),
            ("europe-west4", 14.07),
            ("asia-east1", 5.38),
        )
    ]
    (problem,) = price_outliers(rows)
    assert problem.region == "asia-east1" and "median" in problem.reason


# AWS: an empty Price means no published on-demand price: spot-only with spot, else reservation-only.
def test_aws_missing_on_demand_price_sets_availability() -> None:
    base: dict[str, Any] = {"provider": "aws", "instance_type": "p5e.48xlarge", "gpu": "H200", "gpu_memory_gib": 141.0}
    base.update(gpu_count=8.0, interconnect="nvswitch", price_usd_per_hour=None)
    with_spot = make_row(**base, spot_price_usd_per_hour=14.03)
    without = make_row(**base, region="eu-west-2", spot_price_usd_per_hour=None)
    (spot_only, reserved), _ = apply_corrections([with_spot, without], "aws")
    assert spot_only["availability"] == "spot-only" and reserved["availability"] == "reservation-only"
    assert "no_on_demand_price" in flags(spot_only)
    assert validate_rows([spot_only, reserved]).rejected == []
    rows = [r for r in bundled("aws") if r["instance_type"] == "p5e.48xlarge"]
    assert rows and all(r["price_usd_per_hour"] == "" for r in rows)
    assert {r["availability"] for r in rows if r["spot_price_usd_per_hour"]} == {"spot-only"}
    assert {r["availability"] for r in rows if not r["spot_price_usd_per_hour"]} == {"reservation-only"}


# AWS GpuInfo says 'V100' for p3dn (32 GiB) and 'A100' for p4de (80 GiB): the resolver uses the memory.
@pytest.mark.parametrize(
    ("name", "memory_gib", "expected", "instance_type"),
    [("V100", 32.0, "V100-32GB", "p3dn.24xlarge"), ("A100", 80.0, "A100-80GB", "p4de.24xlarge")],
)
def test_aws_gpu_variant_follows_memory(name: str, memory_gib: float, expected: str, instance_type: str) -> None:
    assert lookup(name, memory_gib).spec.id == expected
    assert lookup(name).spec.id != expected  # the bare name alone would be the other variant
    rows = [r for r in bundled("aws") if r["instance_type"] == instance_type]
    assert rows and {r["gpu"] for r in rows} == {expected}
    assert family_facts("aws", instance_type).gpu == expected  # type: ignore[union-attr]


# AWS g6f: Count 0 with GpuPartitionSize 0.25 is a quarter of an L4.
def test_aws_fractional_gpu_count() -> None:
    row = make_row(
        provider="aws",
        instance_type="g6f.2xlarge",
        gpu="L4",
        gpu_count=0.0,
        gpu_memory_gib=5722 / 1024,
        vcpus=8,
        ram_gib=32.0,
        price_usd_per_hour=0.48,
        spot_price_usd_per_hour=0.2,
    )
    (fixed,), _ = apply_corrections([row], "aws")
    assert fixed["gpu_count"] == 0.25 and fixed["gpu_memory_gib"] == 24.0
    assert validate_rows([fixed]).rejected == []
    rows = [r for r in bundled("aws") if r["instance_type"] == "g6f.2xlarge"]
    assert rows and {r["gpu_count"] for r in rows} == {"0.25"}


# Azure: _Promo sizes and GPUs the project does not cover are left out with a stated reason.
@pytest.mark.parametrize(
    ("instance_type", "reason"),
    [
        ("Standard_NC6_Promo", "promotional"),
        ("Standard_NC24r", "K80"),
        ("Standard_NV12s_v3", "M60"),
        ("Standard_NV8as_v4", "MI25"),
        ("Standard_NG8ads_V620_v1", "V620"),
        ("Standard_NC8ads_A10_v4", "not certain"),
    ],
)
def test_azure_left_out_sizes_are_reported(instance_type: str, reason: str) -> None:
    kept, excluded = apply_corrections([make_row(instance_type=instance_type)], "azure")
    assert kept == []
    assert len(excluded) == 1 and reason in excluded[0].reason and excluded[0].instance_type == instance_type
    assert instance_type not in {r["instance_type"] for r in bundled("azure")}


# RTX PRO 6000 Blackwell Server Edition is covered now (issue 9): AWS g7e from the reference, Google G4 from
# the list-price source (upstream has no G4 GPU price rows); only the fractional G4 sizes are left out.
@pytest.mark.parametrize(("provider", "instance_type"), [("aws", "g7e.48xlarge"), ("gcp", "g4-standard-48")])
def test_rtx_pro_6000_shapes_are_in_the_bundle(provider: str, instance_type: str) -> None:
    rows = [r for r in bundled(provider) if r["instance_type"] == instance_type]
    assert rows and {r["gpu"] for r in rows} == {"RTX-PRO-6000-Server"}
    assert all(r["price_usd_per_hour"] and float(r["gpu_memory_gib"]) == 96 for r in rows)
    kept, excluded = apply_corrections([make_row(provider="gcp", instance_type="g4-standard-12")], "gcp")
    assert kept == [] and "fractional" in excluded[0].reason


# Azure NCv3 (V100) was retired on 2025-09-30: left out with that reason.
def test_azure_ncv3_is_retired() -> None:
    kept, excluded = apply_corrections([make_row(instance_type="Standard_NC24s_v3")], "azure")
    assert kept == [] and "retired" in excluded[0].reason
    assert not any(r["instance_type"].endswith("s_v3") for r in bundled("azure"))


@pytest.mark.skipif(not (REFERENCE / "SOURCES.md").is_file(), reason="reference catalog is not present")
def test_build_reports_every_left_out_reference_row() -> None:
    spec = importlib.util.spec_from_file_location(
        "build_catalog_for_corrections", REPO / "scripts" / "build_catalog.py"
    )
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = builder
    spec.loader.exec_module(builder)
    result = builder.build(REFERENCE)
    assert all(r.reason for r in result.left_out)
    # Azure comes from the all-region source table, whose sizes are all covered: nothing dropped silently.
    with (REPO / "data" / "catalog" / "sources" / "azure_gpu_vms_all_regions.csv").open(encoding="utf-8") as handle:
        source_rows = sum(1 for _ in csv.DictReader(handle))
    azure_left_out = sum(1 for r in result.left_out if r.provider == "azure")
    assert len(result.rows["azure"]) + azure_left_out == source_rows


# Azure NCC40ads_H100_v5: upstream leaves the GPU name and count empty; it is one H100 NVL.
def test_azure_confidential_h100_gets_its_gpu() -> None:
    row = make_row(instance_type="Standard_NCC40ads_H100_v5", gpu="H100-NVL", gpu_count=None, gpu_memory_gib=94.0)
    (fixed,), _ = apply_corrections([row], "azure")
    assert fixed["gpu_count"] == 1.0 and validate_rows([fixed]).rejected == []
    assert lookup("Standard_NCC40ads_H100_v5").spec.id == "H100-NVL"
    rows = [r for r in bundled("azure") if r["instance_type"] == "Standard_NCC40ads_H100_v5"]
    assert rows and {(r["gpu"], r["gpu_count"]) for r in rows} == {("H100-NVL", "1")}


# Azure sizes name the GPU variant that the bare upstream name hides (NCv3 is PCIe, NC H100 v5 is NVL).
@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("Standard_NC40ads_H100_v5", "H100-NVL"),
        ("Standard_ND96asr_v4", "A100-40GB"),
        ("Standard_NC24ads_A100_v4", "A100-PCIe-80GB"),
    ],
)
def test_azure_size_names_resolve_to_the_variant(instance_type: str, expected: str) -> None:
    rows = [r for r in bundled("azure") if r["instance_type"] == instance_type]
    assert rows and {r["gpu"] for r in rows} == {expected}


# AWS spot prices equal to on-demand (no spot discount in that AZ) are kept and flagged.
def test_spot_at_on_demand_is_flagged() -> None:
    row = make_row(provider="aws", instance_type="p3.2xlarge", price_usd_per_hour=4.194, spot_price_usd_per_hour=4.194)
    (fixed,), _ = apply_corrections([row], "aws")
    assert "spot_at_on_demand" in flags(fixed) and fixed["spot_price_usd_per_hour"] == 4.194
    flagged = [r for r in bundled("aws") if "spot_at_on_demand" in flags(r)]
    assert flagged and all(r["spot_price_usd_per_hour"] for r in flagged)


@pytest.mark.parametrize(
    ("stated", "on_demand", "spot", "settled"),
    [
        (None, 2.0, 1.0, "on-demand"),
        ("on-demand", None, 1.0, "spot-only"),
        ("on-demand", float("nan"), None, "reservation-only"),
        ("spot-only", None, None, "reservation-only"),
        ("spot-only", None, 1.0, "spot-only"),
        ("reservation-only", None, 1.0, "reservation-only"),
        ("reservation-only", 3.0, None, "reservation-only"),
        ("", "", 1.0, "spot-only"),
    ],
)
def test_availability_is_settled_from_the_prices_by_one_rule(
    stated: str | None, on_demand: object, spot: object, settled: str
) -> None:
    from planner.catalog.schema import settled_availability

    assert settled_availability(stated, on_demand, spot) == settled
