"""scripts/import_azure_catalog.py and the all-region Azure rows it feeds (issue 9: Azure was 8 US regions)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SIZES = {
    "Standard_NC24ads_A100_v4": {
        "size": "Standard_NC24ads_A100_v4",
        "gpu_count": "1",
        "vcpus": "24",
        "ram_gib": "220.0",
    }
}


def _importer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_azure_catalog", REPO / "scripts" / "import_azure_catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _vm(size: str = "Standard_NC24ads_A100_v4", **overrides: str) -> dict[str, str]:
    """One row of a SkyPilot-format Azure vms.csv, as upstream writes it."""
    row = {
        "InstanceType": size,
        "AcceleratorName": "A100-80GB",
        "AcceleratorCount": "1",
        "vCPUs": "24",
        "MemoryGiB": "220",
        "GpuInfo": "A100-80GB",
        "Price": "3.673",
        "SpotPrice": "0.746721",
        "Region": "eastus",
        "Generation": "V2",
    }
    row.update(overrides)
    return row


def test_keeps_covered_sizes_with_source_and_date_on_every_row() -> None:
    vms = [_vm(), _vm("Standard_NC6s_v3", Region="westus"), _vm(Region="westus", Price="", SpotPrice="")]
    rows = _importer().price_rows(vms, SIZES, "upstream @abc", "2026-05-20")
    assert rows == [
        {
            "size": "Standard_NC24ads_A100_v4",
            "region": "eastus",
            "price_usd_per_hour": "3.673",
            "spot_price_usd_per_hour": "0.746721",
            "source": "upstream @abc",
            "source_date": "2026-05-20",
        }
    ]  # the retired NCv3 size and the unpriced row are not kept


def test_a_size_that_disagrees_with_the_size_table_stops_the_import() -> None:
    with pytest.raises(ValueError, match=r"disagree with azure_sizes\.csv"):
        _importer().price_rows([_vm(vCPUs="48")], SIZES, "s", "2026-05-20")
    # An empty upstream GPU count (ND GB200 v6 upstream) is not a disagreement.
    assert _importer().price_rows([_vm(AcceleratorCount="")], SIZES, "s", "2026-05-20")


def test_bundle_prices_azure_in_every_region_of_the_source() -> None:
    with (REPO / "data" / "catalog" / "azure.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len({r["region"] for r in rows}) >= 40
    # Every row from anycloud's copy of 2026-05-20, but those the API's own newer items price (test_bundled.py).
    older = [r for r in rows if not r["price_source"].startswith("Azure Retail Prices API items")]
    assert len(older) == len(rows) - 59
    assert all("anycloud-sh/catalog" in r["price_source"] and r["as_of"].startswith("2026-05-20") for r in older)
    h200 = [r for r in rows if r["instance_type"] == "Standard_ND96isr_H200_v5"]
    assert len(h200) >= 20 and all(r["price_usd_per_hour"] for r in h200)
