"""The Streamlit app, run headless through Streamlit's own AppTest harness (no browser)."""

from __future__ import annotations

import re
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


def _unescaped(markdown: str) -> str:
    return markdown.replace("\\", "")


def test_plan_page_answers_on_first_load(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    assert "Plan a training run" in [t.value for t in app.title]
    assert app.success[0].value.startswith("**Best option (cost):**")  # no click needed
    metrics = {m.label: m.value for m in app.metric}
    assert set(metrics) == {"Cost per run", "Time to solution", "Per GPU-hour", "Price per hour"}
    assert app.query_params == {}  # the default form is the bare URL
    ages = [c.value for c in app.caption if c.value.startswith("Prices:")]
    assert ages and all(p in ages[0] for p in ("aws", "gcp", "azure")) and "old (live)" in ages[0]
    # The amount-of-work box says what its 0 stands for, in numbers.
    help_text = app.number_input(key="plan.work").help or ""
    assert "0 trains the preset's default: " in help_text and "tokens" in help_text


def test_plan_page_ranks_offerings(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    app.selectbox(key="plan.workload").set_value("llama-2-7b")
    app.number_input(key="plan.work").set_value(1e9)
    app.button[0].click().run()
    assert not app.exception, app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Cost per run"].startswith("$")
    headline = _unescaped(app.success[0].value)
    assert headline.startswith("**Best option (cost):**")
    assert any(name in headline for name in ("p5.48xlarge", "p4d.24xlarge", "Standard_NC40ads_H100_v5"))
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert list(table["rank"])[:3] == [1, 2, 3]
    assert table["cost_usd"].is_monotonic_increasing
    # Cost, time and $/GPU-hour come first, before any column that would need a horizontal scroll.
    assert list(table.columns)[:4] == ["rank", "cost_usd", "time_to_solution_hours", "usd_per_gpu_hour"]
    assert app.query_params == {"w": "llama-2-7b", "work": "1e+09"}


def test_a_spot_price_at_its_floor_is_said_beside_the_best_spot_option(
    isolated_store: Path, no_bundled_catalog: Path, clear_app_caches: None
) -> None:
    from planner.cost.result import SPOT_FLOOR_NOTE

    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws", [make_offer(spot_price_usd_per_hour=5.504)], source="fixture", as_of="2026-11-01T00:00:00+00:00"
        )
    # The app's caches are per process, not per store (clear_app_caches).
    app = _app().run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    captions = [c.value for c in app.caption if "interruptions expected" in c.value]
    assert captions and SPOT_FLOOR_NOTE in captions[0]


def test_the_url_is_the_form(fixture_catalog: Path) -> None:
    app = _app()
    app.query_params.update(  # type: ignore[attr-defined]
        {"w": "llama-2-7b", "mode": "lora", "region": "us-east-1", "pricing": "on-demand", "nodes": "2"}
    )
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    assert app.selectbox(key="plan.workload").value == "llama-2-7b"
    assert app.radio(key="plan.mode").value == "lora"
    assert app.multiselect(key="plan.regions").value == ["us-east-1"]
    assert app.slider(key="plan.max_nodes").value == 2
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert set(table["region"]) == {"us-east-1"} and set(table["pricing"]) == {"on-demand"}
    assert any("default lora budget" in m.value for m in app.markdown)
    # Changing the form rewrites the URL, so the link shared next gives this answer.
    app.radio(key="plan.pricing").set_value("spot")
    app.button[0].click().run()
    assert app.query_params["pricing"] == "spot" and app.query_params["mode"] == "lora"


def test_activation_checkpointing_and_the_tuned_cnn_stack_reach_the_ranking(fixture_catalog: Path) -> None:
    app = _app()
    app.query_params.update({"w": "mpt-7b", "work": "1e+09", "recompute": "on"})  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    assert app.radio(key="plan.recompute").value == "on"
    assert any("activation checkpointing on" in m.value for m in app.markdown)
    # The tuned stack is not switched off for a CNN: the app answers what the CLI and library answer.
    app.selectbox(key="plan.workload").set_value("resnet50")
    app.button[0].click().run()
    # A CNN keeps its activations; the line names the input, not the library's argument.
    assert app.error[0].value.startswith("'Activation checkpointing' on applies to transformer workloads only")
    app.radio(key="plan.recompute").set_value("auto")
    app.number_input(key="plan.work").set_value(0.0)
    app.selectbox(key="plan.stack").set_value("tuned")
    app.button[0].click().run()
    assert not app.exception, app.exception
    assert not any("uses the typical stack" in i.value for i in app.info)
    assert any("NVIDIA-tuned CNN recipe" in m.value for m in app.markdown)


def test_the_batch_and_the_evaluation_schedule_reach_the_ranking_and_the_link(fixture_catalog: Path) -> None:
    app = _app()
    app.query_params.update({"w": "resnet50", "prec": "fp16", "batch": "1024"})  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    assert app.number_input(key="plan.global_batch").value == 1024
    lines = [_unescaped(m.value) for m in app.markdown]
    assert any("global batch 1024" in line for line in lines), lines

    def fastest_hours() -> float:
        table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
        return float(table["time_to_solution_hours"].min())

    before = fastest_hours()
    # An evaluation schedule lengthens the run and says so; the link carries it.
    app.number_input(key="plan.evaluations").set_value(90)
    app.number_input(key="plan.eval_samples").set_value(50_000)
    app.button[0].click().run()
    assert not app.exception, app.exception
    assert app.query_params["evals"] == "90" and app.query_params["eval_samples"] == "50000"
    assert any("evaluation: 90 passes of 50000 samples" in _unescaped(m.value) for m in app.markdown)
    assert fastest_hours() > before
    # Half a schedule is one line that names the missing field, not a ranking.
    app.number_input(key="plan.eval_samples").set_value(0)
    app.button[0].click().run()
    assert not app.exception and app.error[0].value.startswith(
        "'Samples per evaluation' must be given, above zero, with 'Evaluation passes'"
    )


def test_a_bad_link_value_is_ignored_with_a_warning(fixture_catalog: Path) -> None:
    app = _app()
    app.query_params.update({"deadline_h": "nan", "gpu": "H100-SXM,Z9000", "w": "llama-2-7b"})  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception
    warnings = [_unescaped(w.value) for w in app.warning]
    assert any("ignored deadline_h='nan'" in w for w in warnings), warnings
    assert any("unknown Z9000" in w for w in warnings), warnings
    assert app.success  # still an answer, for the rest of the link


def test_custom_model_inputs(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    app.selectbox(key="plan.workload").set_value("transformer")
    app.number_input(key="plan.layers").set_value(24)
    app.number_input(key="plan.hidden").set_value(2048)
    app.number_input(key="plan.seq_len").set_value(2048)
    app.number_input(key="plan.work").set_value(1e9)
    app.button[0].click().run()
    assert not app.exception, app.exception
    assert app.success
    assert app.query_params["layers"] == "24" and app.query_params["w"] == "transformer"


def test_chart_shapes_pricing_and_colours_each_gpu(fixture_catalog: Path) -> None:
    import json

    app = _app().run()  # type: ignore[attr-defined]
    chart = app.get("vega_lite_chart")[0]  # type: ignore[attr-defined]
    spec = json.loads(chart.proto.spec)
    encoding = spec["encoding"]
    assert encoding["shape"]["field"] == "pricing"
    assert encoding["shape"]["scale"]["domain"] == ["on-demand", "spot"]
    assert encoding["color"]["field"] == "gpu" and encoding["color"]["scale"]["scheme"] == "category20"
    assert encoding["x"]["title"] == "time to solution (hours)" and encoding["y"]["title"] == "cost per run (USD)"


def test_plan_page_explains_an_impossible_deadline(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    app.selectbox(key="plan.workload").set_value("llama-2-7b")
    app.number_input(key="plan.deadline_hours").set_value(0.01)  # deadline: 36 seconds
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


def test_estimate_page_takes_the_mode_the_batch_and_the_evaluations(fixture_catalog: Path) -> None:
    app = _app()
    app.switch_page("planner/ui/pages/estimate.py")  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    assert not app.query_params  # the defaults are a bare URL
    # LoRA's default budget is not pre-training's: with the amount of work at 0, it follows the mode.
    app.radio(key="estimate.mode").set_value("lora").run()
    assert not app.exception, app.exception
    assert any("default lora budget" in m.value for m in app.markdown)
    assert app.query_params["mode"] == "lora"
    # LoRA asks the share the adapters train (0: the model's 1%); the assumptions say which.
    assert any("the adapters train 0.01 of the parameters (1%; the default" in m.value for m in app.markdown)
    app.number_input(key="estimate.trainable_share").set_value(0.00065).run()
    assert any("the adapters train 0.00065 of the parameters (0.065%; as given)" in m.value for m in app.markdown)
    assert app.query_params["share"] == "0.00065"
    app.number_input(key="estimate.trainable_share").set_value(0.6).run()
    assert app.error[0].value.startswith("'LoRA trainable share' must be a share of the parameters above 0")
    app.number_input(key="estimate.trainable_share").set_value(0.0).run()
    app.radio(key="estimate.mode").set_value("pretrain").run()
    assert not any(w.key == "estimate.trainable_share" for w in app.number_input)  # LoRA's alone
    app.radio(key="estimate.mode").set_value("lora").run()
    app.selectbox(key="estimate.workload").set_value("resnet50").run()  # a CNN does not keep LoRA
    assert not app.exception and not app.error, [e.value for e in app.error]
    app.selectbox(key="estimate.workload").set_value("llama-3-8b").run()
    app.number_input(key="estimate.global_batch").set_value(512).run()
    app.number_input(key="estimate.evaluations").set_value(20).run()
    app.number_input(key="estimate.eval_samples").set_value(10_000).run()
    assert not app.exception, app.exception
    assert any("global batch 512" in m.value for m in app.markdown)
    assert any("evaluation: 20 passes of 10000 samples" in m.value for m in app.markdown)
    assert app.query_params["batch"] == "512" and "mode" not in app.query_params  # pretrain is the default
    app.number_input(key="estimate.evaluations").set_value(0).run()
    assert app.error[0].value.startswith("'Evaluation passes' must be given, above zero, with 'Samples per evaluation'")


def test_an_estimate_link_reproduces_the_estimate(fixture_catalog: Path) -> None:
    app = _app()
    app.switch_page("planner/ui/pages/estimate.py")  # type: ignore[attr-defined]
    app.query_params.update(  # type: ignore[attr-defined]
        {"w": "resnet50", "gpu": "A100-80GB", "n": "4", "prec": "fp16", "stack": "tuned", "evals": "90",
         "eval_samples": "50000"}
    )  # fmt: skip
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    assert app.selectbox(key="estimate.workload").value == "resnet50"
    assert app.number_input(key="estimate.gpus").value == 4
    lines = [m.value for m in app.markdown]
    assert any("NVIDIA-tuned CNN recipe" in line for line in lines), lines
    assert any("evaluation: 90 passes of 50000 samples" in line for line in lines), lines
    assert app.metric[0].label == "Throughput (images/s)"
    # The estimate downloads as the CLI's JSON.
    download = app.get("download_button")[0]  # type: ignore[attr-defined]
    assert download.proto.label == "Download JSON"
    # A CNN has no training mode or checkpointing to choose; a new workload starts from its own amount of work.
    assert not [r for r in app.radio if r.label == "Training"]
    app.number_input(key="estimate.work").set_value(1e8).run()
    app.selectbox(key="estimate.workload").set_value("bert-large").run()
    assert not app.exception, app.exception
    assert app.number_input(key="estimate.work").value == 0.0 and app.radio(key="estimate.mode").value == "pretrain"
    assert app.metric[0].label == "Throughput (sequences/s)"
    # A value a link cannot hold is ignored, with one line, and the page still answers.
    bad = _app()
    bad.switch_page("planner/ui/pages/estimate.py")  # type: ignore[attr-defined]
    bad.query_params.update({"n": "0", "gpu": "Z9000"})  # type: ignore[attr-defined]
    bad = bad.run()  # type: ignore[attr-defined]
    assert not bad.exception, bad.exception
    warnings = [w.value for w in bad.warning]
    assert any("ignored n='0' from the link (1 to 4096)" in w for w in warnings) and any(
        "ignored gpu='Z9000'" in w for w in warnings
    ), warnings
    assert bad.metric[0].value != "does not fit"


def test_catalog_page_renders_offerings_freshness_and_history(fixture_catalog: Path) -> None:
    app = _app()
    app.switch_page("planner/ui/pages/catalog.py")  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception
    frames = [element.value for element in app.dataframe]
    status = next(f for f in frames if "age_hours" in f.columns)
    assert set(status["provider"]) == {"aws", "gcp", "azure"}
    ages = {m.label: m.value for m in app.metric}
    assert set(ages) == {"aws (live)", "gcp (live)", "azure (live)"}
    assert all(value.endswith(" days") for value in ages.values())
    offers = next(f for f in frames if "instance_type" in f.columns)
    assert {"p5.48xlarge", "g2-standard-8"} <= set(offers["instance_type"])
    assert app.get("vega_lite_chart")  # type: ignore[attr-defined]
    assert any("snapshot holds this offering" in c.value for c in app.caption)
    provider = next(box for box in app.multiselect if box.label == "Provider")
    assert {"lambda", "paperspace"} <= set(provider.options)


def test_catalog_page_explains_a_spot_price_at_its_floor(
    isolated_store: Path, no_bundled_catalog: Path, clear_app_caches: None
) -> None:
    with CatalogStore(seed=False) as store:
        floor = make_offer(price_usd_per_hour=10.0, spot_price_usd_per_hour=1.0, flags="spot_at_floor")
        store.write_snapshot("aws", [floor], source="fixture", as_of="2026-11-01T00:00:00+00:00")
    app = _app()
    app.switch_page("planner/ui/pages/catalog.py")  # type: ignore[attr-defined]
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception
    offers = next(f.value for f in app.dataframe if "instance_type" in f.value.columns)
    assert list(offers["spot_note"]) == ["FLOOR"]
    assert any("90%-off floor" in c.value for c in app.caption)


def test_one_price_in_many_regions_is_one_row_of_the_table(fixture_catalog: Path, clear_app_caches: None) -> None:
    lam = {"provider": "lambda", "instance_type": "gpu_8x_h100_sxm5", "zone": "", "price_usd_per_hour": 23.92,
           "spot_price_usd_per_hour": None, "spot_interruption": None, "network_gbps": None}  # fmt: skip
    with CatalogStore(seed=False) as store:
        store.write_snapshot("lambda", [make_offer(**lam, region=r) for r in ("us-east-1", "us-west-1", "us-south-1")],
                             source="fixture", as_of="2026-11-01T00:00:00+00:00")  # fmt: skip
    app = _app().run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    lambda_rows = table[table["provider"] == "lambda"]
    assert len(lambda_rows) == 1 and lambda_rows["region"].iloc[0].endswith(" +2 more")


def test_the_answer_comes_first_and_the_form_sits_in_the_sidebar(fixture_catalog: Path) -> None:
    from planner import __version__

    app = _app().run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    # The form is in the sidebar: the main area opens with the title and the headline.
    assert app.sidebar.number_input(key="plan.work") is not None
    assert not app.main.number_input and not app.main.selectbox
    main = [getattr(node, "type", "") for node in app.main]
    assert main[1:3] == ["title", "success"], main
    # A value reads as given: the default 0 as 0 (not 0.000e+00), 1e9 as 1e+09.
    assert (
        app.number_input(key="plan.work").proto.default == 0 and app.number_input(key="plan.work").proto.format == "%g"
    )
    # The headline gives the price's date when it is older than two weeks (the fixture's: 2026-11-01).
    assert "price from 2026-11-01, " in _unescaped(app.success[0].value)
    # The release that gave the answer.
    assert any(c.value == f"gpu-planner {__version__}" for c in app.sidebar.caption)


def test_the_headline_passes_over_a_spot_price_at_its_floor(
    isolated_store: Path, no_bundled_catalog: Path, clear_app_caches: None
) -> None:
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws",
            [make_offer(spot_price_usd_per_hour=5.504, flags="spot_at_floor"),
             make_offer(region="us-west-2", zone="usw2-az1", spot_price_usd_per_hour=20.0)],
            source="fixture", as_of="2026-11-01T00:00:00+00:00",
        )  # fmt: skip
    app = _app().run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    headline = _unescaped(app.success[0].value)
    assert headline.startswith("**Best option (cost):** aws p5.48xlarge in us-west-2, spot")
    captions = [_unescaped(c.value) for c in app.caption]
    assert any("passed over #1 aws p5.48xlarge spot (us-east-1)" in c and "at the spot floor" in c for c in captions)
    # The table marks the floor price where its number stands; all columns add the notes.
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert "notes" not in table.columns and table["pricing"].iloc[0] == "spot FLOOR"
    app.toggle(key="plan_table.all").set_value(True).run()
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert {"notes", "cost_low_usd", "expected_interruptions"} <= set(table.columns)


def test_chart_legends_show_both_pricings_and_the_catalog_plots_price_dates(fixture_catalog: Path) -> None:
    import json

    app = _app().run()  # type: ignore[attr-defined]
    encoding = json.loads(app.get("vega_lite_chart")[0].proto.spec)["encoding"]  # type: ignore[attr-defined]
    # Above the chart, where the GPU legend cannot push the spot triangle out of sight.
    assert encoding["shape"]["legend"]["orient"] == "top"
    assert encoding["color"]["legend"]["orient"] == "bottom"
    catalog = _app()
    catalog.switch_page("planner/ui/pages/catalog.py")  # type: ignore[attr-defined]
    catalog = catalog.run()  # type: ignore[attr-defined]
    spec = json.loads(catalog.get("vega_lite_chart")[0].proto.spec)  # type: ignore[attr-defined]
    assert spec["encoding"]["x"]["field"] == "as_of" and spec["encoding"]["x"]["title"] == "price as of"


def test_a_price_age_limit_refuses_older_prices_as_the_cli_does(fixture_catalog: Path) -> None:
    app = _app().run()  # type: ignore[attr-defined]
    app.number_input(key="plan.max_age_days").set_value(1.0)
    app.button[0].click().run()
    assert not app.exception, app.exception
    # The fixture's prices are from 2026-11-01: older than a day, so no answer but the reason and what to do.
    assert app.error and "older than the allowed 24 h" in app.error[0].value, [e.value for e in app.error]
    assert app.query_params["max_age_d"] == "1"
    app.number_input(key="plan.max_age_days").set_value(3650.0)
    app.button[0].click().run()
    assert not app.error and app.success


def test_a_spot_headline_names_its_expected_interruptions_and_stale_prices_name_the_command(
    isolated_store: Path, no_bundled_catalog: Path, clear_app_caches: None
) -> None:
    """The headline of a long spot run says how often it will be stopped where the answer stands, and the stale-price
    warning names the command that refreshes, not a library call."""
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws",
            [make_offer(spot_price_usd_per_hour=20.0, as_of="2026-01-01T00:00:00+00:00")],
            source="fixture",
            as_of="2026-01-01T00:00:00+00:00",
        )
    app = _app()
    app.query_params["work"] = "3e11"  # a long run: several reclaims expected
    app = app.run()  # type: ignore[attr-defined]
    assert not app.exception, app.exception
    headline = _unescaped(app.success[0].value or app.warning[0].value)
    assert re.search(r"spot with [\d,]+ interruptions expected: ", headline), headline
    stale = [_unescaped(w.value) for w in app.warning if "prices older than" in w.value]
    assert stale and re.search(r"`\S*gpuplan catalog refresh` updates them", stale[0]), stale


def test_committed_pricing_and_the_plan_section(fixture_catalog: Path) -> None:
    from planner.catalog.store import CatalogStore

    row = {"provider": "aws", "instance_type": "p5.48xlarge", "region": "us-east-1", "commitment": "reserved-standard",
           "term_years": 1, "payment": "no-upfront", "upfront_usd": 0, "hourly_usd_per_hour": 30.0,
           "price_source": "fixture RI", "as_of": "2026-11-01T00:00:00+00:00"}  # fmt: skip
    with CatalogStore() as store:  # the fixture store: a snapshot of its aws offerings, with this price
        offerings = store.read_current()
        aws = offerings[offerings["provider"] == "aws"].to_dict("records")
        store.write_snapshot("aws", aws, source="fixture", as_of="2026-11-01T00:00:00+00:00", commitments=[row])
    app = _app().run()  # type: ignore[attr-defined]
    app.selectbox(key="plan.workload").set_value("llama-2-7b")
    app.number_input(key="plan.work").set_value(1e9)
    app.radio(key="plan.pricing").set_value("committed-1y")
    app.slider(key="plan.utilisation").set_value(0.5)
    app.number_input(key="plan.runs_per_month").set_value(30.0)
    app.button[0].click().run()
    assert not app.exception, app.exception
    table = next(e.value for e in app.dataframe if "cost_usd" in e.value.columns)
    assert list(table["pricing"].unique()) == ["committed-1y"]
    plan = next(e.value for e in app.dataframe if "total_usd_per_month" in e.value.columns)
    assert list(plan["instance_type"]) == ["p5.48xlarge"] and list(plan["price_basis"]) == ["committed-1y"]
    assert any(s.value.startswith("Plan: 30 runs a month at 50% utilisation") for s in app.subheader)
    assert app.query_params["util"] == "0.5" and app.query_params["pricing"] == "committed-1y"
