"""Test factories: tiny in-code data in the project's own schema."""

from __future__ import annotations

import csv
from typing import Any

from planner._data import data_dir


def make_offer(**overrides: Any) -> dict[str, Any]:
    """A valid catalog row in the stored schema; override any column."""
    row: dict[str, Any] = {
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "region": "us-east-1",
        "zone": "use1-az4",
        "gpu": "H100-SXM",
        "gpu_count": 8.0,
        "gpu_memory_gib": 80.0,
        "vcpus": 192,
        "ram_gib": 2048.0,
        "interconnect": "nvswitch",
        "network_gbps": 3200.0,
        "price_usd_per_hour": 55.04,
        "spot_price_usd_per_hour": 30.5,
        "host_price_usd_per_hour": None,
        "gpu_price_usd_per_hour": None,
        "host_spot_price_usd_per_hour": None,
        "gpu_spot_price_usd_per_hour": None,
        "spot_interruption": "<5%",
        "availability": "on-demand",
        "price_source": "test",
        "as_of": "2026-11-01T00:00:00+00:00",
        "available_now": "unknown",
        "available_checked_at": None,
        "flags": "",
    }
    row.update(overrides)
    return row


def write_catalog(rows_by_provider: dict[str, list[dict[str, Any]]], as_of: str = "2026-11-01T00:00:00+00:00") -> None:
    """Store each provider's rows as its live snapshot in the test's store (so the bundled one is not seeded)."""
    from planner.catalog.store import CatalogStore

    with CatalogStore(seed=False) as store:
        for provider, rows in rows_by_provider.items():
            store.write_snapshot(provider, rows, source=f"fixture-{provider}", as_of=as_of)


def data_rows(name: str) -> list[dict[str, str]]:
    """The rows of a bundled ``data/`` CSV file, as the planner's own loaders read them."""
    with (data_dir() / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def make_commitment(**overrides: Any) -> dict[str, Any]:
    """A valid commitment price (planner.catalog.commitments columns): an AWS reserved instance; override any."""
    row: dict[str, Any] = {
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "region": "us-east-1",
        "commitment": "reserved-standard",
        "term_years": 1,
        "payment": "partial-upfront",
        "upfront_usd": 150000.0,
        "hourly_usd_per_hour": 20.0,
        "price_source": "test",
        "as_of": "2026-11-01T00:00:00+00:00",
    }
    row.update(overrides)
    return row
