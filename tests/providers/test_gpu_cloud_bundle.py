"""The bundled Lambda and Paperspace rows and their builder (scripts/build_gpu_clouds.py) on tiny in-code data."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from planner.catalog.families import family_facts
from planner.catalog.validate import validate_rows

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "data" / "catalog"
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_gpu_clouds", REPO / "scripts" / "build_gpu_clouds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _gpu_info(name: str, count: float, mib: int) -> str:
    info = {"Gpus": [{"Name": name, "Manufacturer": "NVIDIA", "Count": count, "MemoryInfo": {"SizeInMiB": mib}}]}
    return '"' + str({**info, "TotalGpuMemoryInMiB": mib}) + '"'


def _read(provider: str) -> list[dict[str, str]]:
    with (BUNDLE / f"{provider}.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_builder_maps_skypilot_rows_through_the_family_table(tmp_path: Path) -> None:
    vms = tmp_path / "vms.csv"
    vms.write_text(
        "\n".join(
            [
                HEADER,
                "cpu_4x_general,,,4.0,16.0,0.2,us-east-1,,",
                f"gpu_1x_h100_pcie,H100,1.0,26.0,200.0,3.29,us-east-1,{_gpu_info('H100', 1.0, 81920)},",
                f"gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,31.92,us-east-1,{_gpu_info('H100', 8.0, 81920)},",
                f"gpu_8x_h200_sxm5,H200,8.0,208.0,1800.0,39.92,us-east-1,{_gpu_info('H200', 8.0, 144384)},",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    builder = _builder()
    with vms.open("a", encoding="utf-8") as more:  # the same type listed in a second region: still one row
        more.write(f"gpu_1x_h100_pcie,H100,1.0,26.0,200.0,3.29,us-west-1,{_gpu_info('H100', 1.0, 81920)},\n")
    rows, left_out = builder.build(vms)
    lam = {r["instance_type"]: r for r in rows["lambda"]}
    # SkyPilot says only 'H100': the type's family names the PCIe variant.
    assert (lam["gpu_1x_h100_pcie"]["gpu"], lam["gpu_1x_h100_pcie"]["interconnect"]) == ("H100-PCIe", "pcie")
    assert (lam["gpu_8x_h100_sxm5"]["gpu"], lam["gpu_8x_h100_sxm5"]["interconnect"]) == ("H100-SXM", "nvswitch")
    assert len(rows["lambda"]) == 2 and lam["gpu_1x_h100_pcie"]["region"] == "unknown"
    assert [(r.instance_type, r.reason) for r in left_out] == [
        ("gpu_8x_h200_sxm5", "instance type is in no covered family")
    ]
    files = builder.render(rows)
    manifest = json.loads(files["manifest.json"])
    assert list(manifest["providers"]) == ["aws", "gcp", "azure", "lambda", "paperspace"]
    assert manifest["providers"]["lambda"]["rows"] == 2


def test_bundled_rows_are_dated_sourced_and_single_node() -> None:
    for provider in ("lambda", "paperspace"):
        rows = _read(provider)
        assert validate_rows(rows).rejected == []
        assert {r["available_now"] for r in rows} == {"unknown"}  # a price list is no capacity reading
        assert all(r["price_source"] and r["as_of"] for r in rows)
        for row in rows:
            facts = family_facts(provider, row["instance_type"])
            assert facts is not None and "single node only" in facts.notes
            assert row["network_gbps"] == ""  # so rank refuses multi-node runs on them
    lam = {(r["instance_type"], r["region"]): r for r in _read("lambda")}
    assert lam[("gpu_8x_h100_sxm5", "unknown")]["price_usd_per_hour"] == "31.92"
    assert lam[("gpu_1x_gh200", "unknown")]["gpu"] == "GH200"
    assert lam[("gpu_1x_rtx6000", "unknown")]["gpu"] == "Quadro-RTX-6000"
    do = {(r["instance_type"], r["region"]): r for r in _read("paperspace")}
    assert do[("gpu-h100x8-640gb", "unknown")]["price_usd_per_hour"] == "23.92"
    assert do[("gpu-mi300x1-192gb", "unknown")]["gpu"] == "MI300X"


def test_bundled_rows_claim_no_region_their_source_does_not_name() -> None:
    # SkyPilot's Lambda table copies every type into every region and DigitalOcean's price page names none:
    # one row per type in region "unknown", flagged, rather than a guess per region.
    for provider in ("lambda", "paperspace"):
        rows = _read(provider)
        assert {(r["region"], r["flags"]) for r in rows} == {("unknown", "region_unknown")}
        assert len(rows) == len({r["instance_type"] for r in rows})
