"""The Google Cloud list-price import: covered GPU machine types only, source and date on every row."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _importer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_gcp_list_prices", REPO / "scripts" / "import_gcp_list_prices.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_rows_keep_covered_gpu_shapes_with_source_and_date() -> None:
    pricing = {
        "about": {"timestamp": 1785391997},  # Thu Jul 30 06:13:17 2026 UTC
        "compute": {
            "instance": {
                "a3-highgpu-8g": {"cost": {"us-central1": {"hour": 88.4899999025753, "hour_spot": 50.6095408219178}}},
                "g4-standard-48": {"cost": {"us-east1": {"hour": 4.49993, "hour_spot": 1.79982}}},
                "g4-standard-12": {"cost": {"us-east1": {"hour": 1.2}}},  # fractional GPU: not covered
                "n2-standard-8": {"cost": {"us-east1": {"hour": 0.39}}},  # no GPU
                "a2-highgpu-1g": {"cost": {"us-east1": {"hour": 3.67, "hour_spot": None}, "me-west1": {}}},
            }
        },
    }
    rows = _importer().list_price_rows(pricing, "fd66b26ff84fee5cdd94f341ea89206e76c06b99")
    assert [(r["instance_type"], r["region"]) for r in rows] == [
        ("a2-highgpu-1g", "us-east1"),
        ("a3-highgpu-8g", "us-central1"),
        ("g4-standard-48", "us-east1"),
    ]
    a3 = rows[1]
    assert (a3["price_usd_per_hour"], a3["spot_price_usd_per_hour"]) == ("88.490000", "50.609541")
    assert a3["source_date"] == "2026-07-30" and "@fd66b26f" in a3["source"]
    assert rows[0]["spot_price_usd_per_hour"] == ""


def test_the_committed_table_is_what_the_importer_writes() -> None:
    """Every committed row has a price, a source and a date, and only covered shapes."""
    import csv

    with (REPO / "data" / "catalog" / "sources" / "gcp_list_prices.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    covered = _importer().COVERED
    assert len(rows) > 500
    assert all(covered.match(r["instance_type"]) and float(r["price_usd_per_hour"]) > 0 for r in rows)
    assert {r["source_date"] for r in rows} == {"2026-07-30"}
