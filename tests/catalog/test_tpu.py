"""The bundled Cloud TPU slices: golden slice prices, zones only where the source lists them, placeholders refused."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from planner._data import data_dir
from planner.catalog.tpu import (
    GENERATIONS,
    TPU_FLAG,
    ZonePrice,
    bundled_zone_prices,
    chip_price,
    is_tpu,
    slice_price,
    slice_rows,
    slice_table,
)
from planner.catalog.validate import validate_rows

SOURCE = data_dir() / "catalog" / "sources" / "gcp_tpu_prices.csv"


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def bundled() -> dict[tuple[str, str], dict[str, str]]:
    rows = [r for r in _read(data_dir() / "catalog" / "gcp.csv") if is_tpu(r["gpu"])]
    return {(r["instance_type"], r["zone"]): r for r in rows}


@pytest.mark.parametrize(
    ("slice_type", "zone", "on_demand", "spot"),
    [
        # SkyPilot's own rows for these slices (v9 gcp/vms.csv @2c3d7ea7): chips x the zone's chip-hour price.
        ("v5p-8", "us-central1-a", 16.8, 3.12196),  # 4 chips x $4.20 / $0.78049
        ("v5p-128", "europe-west4-b", 272.16, 66.7799),  # 64 chips x $4.2525
        ("v6e-8", "us-east1-d", 21.6, 4.74132),  # 8 chips x $2.70
        ("v6e-256", "asia-northeast1-b", 829.44, 373.01094),
        ("v5litepod-16", "europe-west3-c", 22.656, 3.72542),  # 16 chips x $1.416
        ("v5litepod-1", "us-east5-b", 1.2, 0.6),
    ],
)
def test_golden_slice_prices(slice_type: str, zone: str, on_demand: float, spot: float) -> None:
    row = bundled()[(slice_type, zone)]
    assert float(row["price_usd_per_hour"]) == pytest.approx(on_demand, abs=1e-5)
    assert float(row["spot_price_usd_per_hour"]) == pytest.approx(spot, abs=1e-5)
    shape = slice_table()[slice_type]
    assert float(row["gpu_count"]) == shape.chips and row["flags"] == TPU_FLAG and row["interconnect"] == "ici"


def test_slice_price_is_chips_times_chip_hour_rounded_to_a_millionth() -> None:
    assert slice_price(4.2, 4) == 16.8
    assert slice_price(0.1234567, 3) == 0.37037  # 0.3703701 rounded
    assert slice_price(2.97, 256) == 760.32


def test_slice_table_is_consistent_with_google_naming() -> None:
    for name, shape in slice_table().items():
        generation = GENERATIONS[shape.gpu]
        prefix, number = name.rsplit("-", 1)
        assert prefix == generation.type_prefix
        assert int(number) == shape.chips * generation.cores_per_chip  # v5p counts TensorCores, 2 per chip
        dims = [int(d) for d in shape.topology.split("x")]
        product = 1
        for d in dims:
            product *= d
        assert product == shape.chips and shape.vcpus > 0 and shape.ram_gib > 0


def test_no_slice_in_a_zone_or_size_the_source_did_not_list() -> None:
    listed: dict[tuple[str, str], set[str]] = {}
    for row in _read(SOURCE):
        shape = slice_table()[row["AcceleratorName"].removeprefix("tpu-")]
        prefix = shape.generation.type_prefix
        listed[(shape.gpu, row["AvailabilityZone"])] = {f"{prefix}-{n}" for n in row["ListedSlices"].split()}
    rows = bundled()
    assert len(rows) == 484
    for (name, zone), row in rows.items():
        assert name in listed[(row["gpu"], zone)], (name, zone)
        assert zone.rsplit("-", 1)[0] == row["region"]
    # v6e has no price in these zones (SkyPilot's 700.0 filler): left out, not spread from another zone.
    for zone in ("asia-east1-c", "southamerica-east1-c", "us-central2-b"):
        assert not [key for key in rows if key[1] == zone and key[0].startswith("v6e")]


def test_a_placeholder_is_refused_on_the_slice_price_before_it_becomes_a_chip_price() -> None:
    where = ("gcp", "v6e-256", "southamerica-west1", "southamerica-west1-a")
    price, why = chip_price("spot_price_usd_per_hour", 700.0, 256, where)
    assert price is None and why is not None and "placeholder" in why.reason
    # Divided first it would read as $2.73 per chip-hour, a plausible v6e price.
    assert chip_price("price_usd_per_hour", 691.2, 256, where) == (2.7, None)
    west = bundled()[("v6e-8", "southamerica-west1-a")]
    assert (west["price_usd_per_hour"], west["spot_price_usd_per_hour"]) == ("21.6", "")


def test_zones_the_source_repeats_are_kept_once() -> None:
    prices, _ = bundled_zone_prices(_read(SOURCE), "src", "2026-07-09T00:00:00+00:00")
    keys = [(p.gpu, p.zone) for p in prices]
    assert len(keys) == len(set(keys))


def test_slice_rows_pass_validation_and_a_spot_only_zone_is_spot_only() -> None:
    zone = ZonePrice("TPU-v6e", "us-east5", "us-east5-a", None, 1.27575, ("v6e-4",), "src", "2026-07-09T00:00:00+00:00")
    (row,) = slice_rows([zone])
    assert (row["availability"], row["price_usd_per_hour"], row["spot_price_usd_per_hour"]) == (
        "spot-only",
        None,
        5.103,
    )
    assert validate_rows([row]).rejected == []
    wrong = {**row, "interconnect": "nvswitch"}
    assert "is not ici" in validate_rows([wrong]).rejected[0].reason
