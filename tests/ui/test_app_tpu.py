"""The accelerator filter on the app's pages (Streamlit's AppTest harness, no browser), and in the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore
from planner.catalog.tpu import is_tpu

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")
V5P_8 = {
    "provider": "gcp",
    "instance_type": "v5p-8",
    "region": "us-central1",
    "zone": "us-central1-a",
    "gpu": "TPU-v5p",
    "gpu_count": 4,
    "gpu_memory_gib": 95,
    "vcpus": 208,
    "ram_gib": 448,
    "interconnect": "ici",
    "network_gbps": None,
    "price_usd_per_hour": 16.8,
    "spot_price_usd_per_hour": 3.12196,
    "spot_interruption": None,
    "flags": "tpu_slice",
}


@pytest.fixture
def tpu_catalog(isolated_store: Path, no_bundled_catalog: Path) -> Path:
    """One GPU cloud and one Google Cloud TPU slice beside an L4 VM, as the only catalog."""
    with CatalogStore(seed=False) as store:
        store.write_snapshot("aws", [make_offer()], source="fixture", as_of="2026-11-01T00:00:00+00:00")
        rows = [
            make_offer(**V5P_8),
            make_offer(provider="gcp", instance_type="g2-standard-8", region="us-central1", zone="", gpu="L4",
                       gpu_count=1, gpu_memory_gib=24, interconnect="pcie", price_usd_per_hour=0.8,
                       spot_price_usd_per_hour=None, spot_interruption=None),
        ]  # fmt: skip
        store.write_snapshot("gcp", rows, source="fixture", as_of="2026-11-01T00:00:00+00:00")
    return isolated_store


def _app() -> Any:
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=60)


@pytest.mark.parametrize(("choice", "kinds"), [("any", {True, False}), ("gpu", {False}), ("tpu", {True})])
def test_catalog_page_filters_by_accelerator(
    tpu_catalog: Path, clear_app_caches: None, choice: str, kinds: set[bool]
) -> None:
    app = _app()
    app.switch_page("planner/ui/pages/catalog.py")
    app = app.run()
    app.radio(key="catalog.accelerator").set_value(choice).run()
    assert not app.exception, app.exception
    offers = next(e.value for e in app.dataframe if "instance_type" in e.value.columns)
    assert {is_tpu(g) for g in offers["gpu"]} == kinds


def test_plan_page_ranks_gpus_only_when_asked_and_the_link_says_so(tpu_catalog: Path) -> None:
    app = _app().run()
    assert app.radio(key="plan.accelerator").value == "any"
    app.radio(key="plan.accelerator").set_value("gpu")
    app.button[0].click().run()
    assert not app.exception, app.exception
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert len(table) and "v5p-8" not in set(table["instance_type"])
    assert app.query_params.get("accel") == "gpu"


def test_cli_offers_takes_the_accelerator_flag(tpu_catalog: Path, cli: Any) -> None:
    code, out, _ = cli("offers", "--accelerator", "tpu", "--format", "csv")
    assert code == 0 and "v5p-8" in out and "g2-standard-8" not in out and "p5.48xlarge" not in out
    code, out, _ = cli("offers", "--accelerator", "gpu", "--format", "csv")
    assert code == 0 and "v5p-8" not in out and "g2-standard-8" in out


def test_cli_names_the_flag_of_a_bad_accelerator(tpu_catalog: Path, cli: Any) -> None:
    code, _, err = cli("rank", "--workload", "llama-3-8b", "--tokens", "1e9", "--accelerator", "fpga")
    assert code != 0 and "--accelerator" in err and "any, gpu, tpu" in err
    assert "Traceback" not in err


def test_cli_gpus_lists_the_tpu_slices(cli: Any) -> None:
    import json

    code, out, _ = cli("gpus", "--accelerator", "tpu", "--format", "json")
    assert code == 0
    rows = {r["accelerator_type"]: r for r in json.loads(out)}
    largest = rows["v5p-12288"]
    assert (largest["chips"], largest["topology"], largest["vms"]) == (6144, "16x16x24", 1536)
    assert largest["min_usd_per_chip_hour"] == 4.2 and largest["zones"] == 11
    code, out, _ = cli("gpus", "--format", "json")
    assert code == 0 and "v5p-8" not in out  # the GPU hardware table unless asked


def test_a_tpu_headline_prices_per_chip_hour(tpu_catalog: Path) -> None:
    app = _app().run()
    app.radio(key="plan.accelerator").set_value("tpu")
    app.button[0].click().run()
    assert not app.exception, app.exception
    metrics = {m.label for m in app.metric}
    assert "Per chip-hour" in metrics and "Per GPU-hour" not in metrics
