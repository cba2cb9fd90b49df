"""The "Your runs" page through Streamlit's AppTest: uploaded logs become charts, advice and a profiled estimate."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "streamlit_app.py")
DATA = REPO / "tests" / "data" / "runlogs"


def _runs_page() -> object:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(APP, default_timeout=60)
    app.switch_page("planner/ui/pages/runs.py")
    return app.run()


def _upload(app: object, *names: str) -> None:
    files = [(name, (DATA / name).read_bytes(), "text/plain") for name in names]
    app.file_uploader(key="runs.files").set_value(files)  # type: ignore[attr-defined]


def test_without_logs_the_page_asks_for_them(clear_app_caches: None) -> None:
    app = _runs_page()
    assert not app.exception, app.exception  # type: ignore[attr-defined]
    assert "Your runs" in [t.value for t in app.title]  # type: ignore[attr-defined]
    assert any("Upload a run's logs" in i.value for i in app.info)  # type: ignore[attr-defined]


def test_uploaded_logs_show_utilisation_charts_advice_and_the_profiled_estimate(clear_app_caches: None) -> None:
    app = _runs_page()
    _upload(app, "dcgm_exporter.prom", "megatron.log")
    app.selectbox(key="runs.workload").set_value("llama-2-7b")  # type: ignore[attr-defined]
    app.number_input(key="runs.gpus").set_value(16)  # type: ignore[attr-defined]
    app.number_input(key="runs.price").set_value(3.0)  # type: ignore[attr-defined]
    app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception  # type: ignore[attr-defined]
    metrics = {m.label: m.value for m in app.metric}  # type: ignore[attr-defined]
    assert metrics["Busy (GPU utilisation)"] == "98%" and metrics["SM active"] == "42%"
    assert metrics["Peak memory"] == "51.2 GiB"
    # Utilisation, SM activity and power over time (DCGM has all three).
    charts = app.get("vega_lite_chart")  # type: ignore[attr-defined]
    titles = [json.loads(chart.proto.spec)["encoding"]["y"]["title"] for chart in charts]
    assert titles == ["GPU utilisation (%)", "SM active", "power (W)"]
    advice = " ".join(m.value for m in app.markdown)  # type: ignore[attr-defined]
    assert "SMs were active 42%" in advice
    # The profile reproduces the run on its own GPUs.
    assert metrics["Throughput (tokens/s)"] == "176,384"  # 43.06 samples/s x 4,096 tokens, as measured
    app.selectbox(key="runs.estimate_gpu").set_value("A100-80GB").run()  # type: ignore[attr-defined]
    slower = {m.label: m.value for m in app.metric}["Throughput (tokens/s)"]  # type: ignore[attr-defined]
    assert float(slower.replace(",", "")) < float(metrics["Throughput (tokens/s)"].replace(",", ""))


def test_a_malformed_upload_is_one_error_line(clear_app_caches: None) -> None:
    app = _runs_page()
    app.file_uploader(key="runs.files").set_value(  # type: ignore[attr-defined]
        [("smi.csv", b"index, utilization.gpu [%]\n0, 50 %\n0, fifty\n", "text/csv")]
    )
    app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception  # type: ignore[attr-defined]
    assert [e.value for e in app.error] == ["log smi.csv line 3: 'fifty' is not a number"]  # type: ignore[attr-defined]
