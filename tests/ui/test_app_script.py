"""The Streamlit app, run headless through Streamlit's own AppTest harness (no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "streamlit_app.py")


@pytest.fixture
def fixture_catalog(isolated_store: Path, no_bundled_catalog: Path) -> Path:
    """A tiny live catalog for all three providers, so the bundled one is not seeded."""
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws",
            [
                make_offer(),
                make_offer(
                    instance_type="p4d.24xlarge",
                    gpu="A100-40GB",
                    gpu_memory_gib=40,
                    price_usd_per_hour=21.96,
                    spot_price_usd_per_hour=9.5,
                    network_gbps=400,
                ),
            ],
            source="fixture",
            as_of="2026-11-01T00:00:00+00:00",
        )
        store.write_snapshot(
            "gcp",
            [
                make_offer(
                    provider="gcp",
                    instance_type="g2-standard-8",
                    region="us-central1",
                    zone="",
                    gpu="L4",
                    gpu_count=1,
                    gpu_memory_gib=24,
                    interconnect="pcie",
                    host_price_usd_per_hour=0.2,
                    gpu_price_usd_per_hour=0.6,
                    price_usd_per_hour=0.8,
                    spot_price_usd_per_hour=None,
                    spot_interruption=None,
                )
            ],
            source="fixture",
            as_of="2026-11-01T00:00:00+00:00",
        )
        store.write_snapshot(
            "azure",
            [make_offer(provider="azure", instance_type="Standard_NC40ads_H100_v5", region="eastus", zone="",
                        gpu="H100-NVL", gpu_count=1, gpu_memory_gib=94, interconnect="pcie", price_usd_per_hour=6.98,
                        spot_price_usd_per_hour=None, spot_interruption=None)],
            source="fixture",
            as_of="2026-11-01T00:00:00+00:00",
        )  # fmt: skip
    return isolated_store


def _app() -> object:
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=60)


def test_plan_page_ranks_offerings(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    assert not app.exception
    assert "Plan a training run" in [t.value for t in app.title]
    app.selectbox[0].set_value("llama-2-7b")
    app.number_input[0].set_value(1e9)
    app.button[0].click().run()
    assert not app.exception, app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Cost per run"].startswith("$")
    headline = app.success[0].value
    assert headline.startswith("**Best option (cost):**")
    assert any(name in headline for name in ("p5.48xlarge", "p4d.24xlarge", "Standard_NC40ads_H100_v5"))
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert list(table["rank"])[:3] == [1, 2, 3]
    assert table["cost_usd"].is_monotonic_increasing


def test_plan_page_explains_an_impossible_deadline(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    app.selectbox[0].set_value("llama-2-7b")
    app.number_input[1].set_value(0.01)  # deadline: 36 seconds
    app.button[0].click().run()
    assert not app.exception
    warnings = [w.value for w in app.warning]
    assert any("0.01-hour deadline; the fastest takes" in w for w in warnings), warnings


def test_estimate_page(fixture_catalog: Path) -> None:
    app = _app()
    app.switch_page("planner/ui/pages/estimate.py")  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception
    labels = [m.label for m in app.metric]
    assert labels == ["Throughput (tokens/s)", "Time to solution", "Memory per GPU", "MFU"]
    assert any("layout" in m.value for m in app.markdown)
    typical = float(app.metric[0].value.replace(",", ""))
    software = next(box for box in app.selectbox if box.label == "Software")
    software.set_value("tuned").run()
    assert not app.exception
    assert float(app.metric[0].value.replace(",", "")) > typical
    assert any("NVIDIA-tuned" in m.value for m in app.markdown)


def test_catalog_page_renders_offerings_and_freshness(fixture_catalog: Path) -> None:
    app = _app()
    app.switch_page("planner/ui/pages/catalog.py")  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception
    frames = [element.value for element in app.dataframe]
    status = next(f for f in frames if "age_hours" in f.columns)
    assert set(status["provider"]) == {"aws", "gcp", "azure"}
    offers = next(f for f in frames if "instance_type" in f.columns)
    assert {"p5.48xlarge", "g2-standard-8"} <= set(offers["instance_type"])
