"""The Streamlit app, run headless through Streamlit's own AppTest harness (no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fixture_catalog(isolated_store: Path) -> Path:
    with CatalogStore() as store:
        store.write_snapshot("aws", [make_offer()], source="fixture", as_of="2026-11-01T00:00:00+00:00")
        store.write_snapshot(
            "gcp",
            [make_offer(provider="gcp", instance_type="g2-standard-8", region="us-central1", zone="", gpu="L4",
                        gpu_count=1, gpu_memory_gib=24, interconnect="pcie", host_price_usd_per_hour=0.2,
                        gpu_price_usd_per_hour=0.6, price_usd_per_hour=0.8, spot_price_usd_per_hour=None)],
            source="fixture",
            as_of="2026-11-01T00:00:00+00:00",
        )  # fmt: skip
    return isolated_store


def test_catalog_page_renders_offerings_and_freshness(fixture_catalog: Path) -> None:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=60).run()
    assert not app.exception
    frames = [element.value for element in app.dataframe]
    status = next(f for f in frames if "age_hours" in f.columns)
    assert set(status["provider"]) >= {"aws", "gcp"}
    offers = next(f for f in frames if "instance_type" in f.columns)
    assert {"p5.48xlarge", "g2-standard-8"} <= set(offers["instance_type"])
