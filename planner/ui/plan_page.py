"""The "Plan a training run" page: rank every offering for one workload, under a deadline and a budget.

The answer for the default workload shows on first load. The whole form lives in the URL (``st.query_params``):
a link reproduces the answer, and the browser's back button returns to the previous one. Every number on the
page comes from planner.api and planner.report; the page only lays them out.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from planner import report
from planner.catalog.tpu import is_tpu
from planner.cost.rank import RankResult
from planner.cost.result import caveat_marks, caveats, price_age_text
from planner.errors import LIBRARY_CALLS, PlannerError
from planner.perf.workloads import RECOMPUTE_HELP, STACK_HELP, get_workload
from planner.ui.cache import cached_catalog, cached_plan, cached_rank, cached_status, catalog_key
from planner.ui.messages import error_text
from planner.ui.plan_state import (
    DEFAULT,
    MAX_NODES,
    URL_KEYS,
    PlanForm,
    choices,
    from_query,
    to_query,
)
from planner.ui.url_widgets import form_from_widgets, load_url_into_widgets, write_url
from planner.ui.workload_inputs import packing_inputs, schedule_inputs, trainable_share_input

KEY = "plan."  # session-state prefix of the form's widgets ("plan.url": the URL they were last loaded from)
# What the results table shows: cost, time and $/GPU-hour first; columns whose widths below sum to less than the main
# area at 1440 px beside the sidebar (about 1,000 px), so no column is cut at the edge. "All columns" adds the rest.
SHOWN_COLUMNS = [
    "rank",
    "cost_usd",
    "time_to_solution_hours",
    "usd_per_gpu_hour",
    "provider",
    "instance_type",
    "gpus",
    "pricing",
    "region",
]
MORE_COLUMNS = ["price_usd_per_hour", "cost_low_usd", "cost_high_usd", "expected_interruptions", "pareto", "notes"]
COLUMN_CONFIG = {
    "rank": st.column_config.NumberColumn("#", width=40),
    "cost_usd": st.column_config.NumberColumn("cost $", format="%,.0f", width=75),
    "time_to_solution_hours": st.column_config.NumberColumn("hours", format="%,.1f", width=70),
    "usd_per_gpu_hour": st.column_config.NumberColumn("$/GPU-h", format="%.2f", width=70),
    "provider": st.column_config.TextColumn("provider", width=80),
    "instance_type": st.column_config.TextColumn("instance", width=200),
    "gpus": st.column_config.TextColumn("GPUs", width=160),
    "pricing": st.column_config.TextColumn("pricing", width=115),
    "region": st.column_config.TextColumn("region", width=160),
    "price_usd_per_hour": st.column_config.NumberColumn("$/h per instance", format="%.2f"),
    "cost_low_usd": st.column_config.NumberColumn("low $", format="%,.0f"),
    "cost_high_usd": st.column_config.NumberColumn("high $", format="%,.0f"),
    "expected_interruptions": st.column_config.NumberColumn("interruptions", format="%.2f"),
}


def in_app_words(text: str) -> str:
    """A library message for the app's reader: the refresh call named as the command of the app's own environment
    (the one `bash scripts/dev.sh app` installed), which a reader can paste into a shell."""
    command = f"`{Path(sys.executable).with_name('gpuplan')} catalog refresh`"
    return text.replace(LIBRARY_CALLS["refresh"], command)


def markdown_text(text: str) -> str:
    """Catalog text inside Streamlit markdown, shown as typed: every ASCII punctuation mark backslash-escaped.

    CommonMark lets any of them be escaped, which also defuses Streamlit's own ``:color[...]`` and emoji codes.
    """
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in text)


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _default_work_text() -> str:
    """What 0 in the amount-of-work box stands for, for the workload and mode last ranked."""
    mode = st.session_state.get(KEY + "mode")
    try:
        workload = get_workload(st.session_state.get(KEY + "workload", "llama-3-8b"))
        if mode and workload.is_transformer:
            workload = get_workload(workload.name, mode=mode)
    except PlannerError:
        return "the preset's amount for its mode"
    return workload.default_work_text()


def _inputs(allowed: dict[str, tuple[str, ...]]) -> None:
    """The form, in the sidebar so that the answer is the first thing on the page; its widgets keep their values in
    session state under ``plan.<field>``."""
    with st.sidebar.form("plan"):
        st.form_submit_button("Rank offerings", type="primary")
        st.selectbox(
            "Workload",
            allowed["workload"],
            key=KEY + "workload",
            help="A preset, or 'transformer' for your own model (set its shape under Custom model).",
        )
        # %g: a value reads as given (1e+09, 160600000000.0 would be 1.606e+11), 0 as 0; "%.3e" showed 0.000e+00.
        st.number_input(
            "Amount of work (tokens, images or sequences; 0 = the preset's default)",
            min_value=0.0,
            format="%g",
            key=KEY + "work",
            help=f"0 trains the preset's default: {_default_work_text()}",
        )
        st.number_input("Deadline, hours (0 = none)", min_value=0.0, step=12.0, format="%g", key=KEY + "deadline_hours")
        st.number_input("Budget, USD (0 = none)", min_value=0.0, step=1000.0, format="%g", key=KEY + "budget_usd")
        st.radio("Pricing", allowed["pricing"], horizontal=True, key=KEY + "pricing")
        st.slider(
            "Utilisation of committed hours",
            min_value=0.05,
            max_value=1.0,
            step=0.05,
            key=KEY + "utilisation",
            help="The share of a commitment's hours your team fills; prices committed-1y/3y and the plan.",
        )
        st.number_input(
            "Runs a month (plan view; 0 = none)",
            min_value=0.0,
            step=1.0,
            format="%g",
            key=KEY + "runs_per_month",
            help="Commit for the base load, on demand or spot for the rest: monthly and yearly totals.",
        )
        st.radio("Order by", allowed["by"], horizontal=True, key=KEY + "by")
        st.slider("Max nodes", min_value=1, max_value=MAX_NODES, key=KEY + "max_nodes")
        st.multiselect("Providers", allowed["providers"], key=KEY + "providers", placeholder="all")
        st.multiselect("Regions", allowed["regions"], key=KEY + "regions", placeholder="all")
        st.multiselect("GPUs", allowed["gpus"], key=KEY + "gpus", placeholder="all")
        st.radio(
            "Accelerators",
            allowed["accelerator"],
            horizontal=True,
            key=KEY + "accelerator",
            help="GPU offerings, Cloud TPU slices (Google Cloud), or any: both ranked side by side.",
        )
        st.checkbox(
            "Only offerings with capacity now",
            key=KEY + "available_only",
            help="Clouds that report capacity (Lambda) at the last refresh; the others have no capacity figure.",
        )
        st.number_input(
            "Max price age, days (0 = any)",
            min_value=0.0,
            step=7.0,
            format="%g",
            key=KEY + "max_age_days",
            help="Refuse prices older than this; narrow the providers to those refreshed recently.",
        )
        with st.expander("Training, precision and software"):
            st.radio("Training", allowed["mode"], horizontal=True, key=KEY + "mode", help="pretrain, finetune or LoRA")
            trainable_share_input(st, KEY)
            st.selectbox("Precision", allowed["precision"], key=KEY + "precision")
            st.selectbox("Software", allowed["stack"], help=STACK_HELP, key=KEY + "stack")
            st.radio(
                "Activation checkpointing",
                allowed["recompute"],
                horizontal=True,
                help=RECOMPUTE_HELP,
                key=KEY + "recompute",
            )
        with st.expander("Custom model (workload 'transformer', or override a preset's shape; 0 = preset's)"):
            st.number_input("Parameters, billions", min_value=0.0, step=1.0, format="%g", key=KEY + "params_billions")
            st.number_input("Layers", min_value=0, step=1, key=KEY + "layers")
            st.number_input("Hidden size", min_value=0, step=128, key=KEY + "hidden")
            st.number_input("Attention heads", min_value=0, step=1, key=KEY + "heads")
            st.number_input("Sequence length", min_value=0, step=512, key=KEY + "seq_len")
            packing_inputs([st, st], KEY)
        with st.expander("Batch and evaluations (0 = the preset's batch, no evaluations)"):
            schedule_inputs([st, st, st], KEY)


# What the chart draws and its tooltips show: only these are serialised to the browser (the whole table took most of
# a re-rank's time).
CHART_COLUMNS = ["time_to_solution_hours", "cost_usd", "gpu", "pricing", "pareto", "provider", "region",
                 "instance_type", "gpus", "usd_per_gpu_hour"]  # fmt: skip


def _log_if_wide(values: pd.Series) -> dict[str, Any]:
    """A log axis when the values span more than a factor of 20, else a linear one from zero."""
    low, high = float(values.min()), float(values.max())
    return {"type": "log"} if low > 0 and high / low > 20 else {"zero": True}


def _chart(view: pd.DataFrame) -> dict[str, Any]:
    """Cost against time, one point per option: colour per GPU, shape per pricing, the Pareto front opaque.

    A Vega-Lite spec written out: built through altair, its schema validation cost 0.15-0.25 s of every re-rank.
    """
    gpus = sorted(view["gpu"].unique())
    return {
        "mark": {"type": "point", "size": 80, "filled": True},
        "height": 380,
        "encoding": {
            "x": {
                "field": "time_to_solution_hours",
                "type": "quantitative",
                "title": "time to solution (hours)",
                "scale": _log_if_wide(view["time_to_solution_hours"]),
            },
            "y": {
                "field": "cost_usd",
                "type": "quantitative",
                "title": "cost per run (USD)",
                "scale": _log_if_wide(view["cost_usd"]),
            },
            # category20 has a distinct colour for up to 20 GPUs (tableau10 repeats after ten); the legend below the
            # chart in columns: to its right, a list of 20-odd GPUs ran past the chart's foot.
            "color": {
                "field": "gpu",
                "type": "nominal",
                "title": "GPU",
                "scale": {"domain": gpus, "scheme": "category20"},
                "legend": {"orient": "bottom", "columns": 6, "symbolLimit": 0},
            },
            # Its legend on top: below the GPU legend it fell outside the chart, and the spot triangle with it.
            "shape": {
                "field": "pricing",
                "type": "nominal",
                "title": "pricing",
                "scale": {"domain": ["on-demand", "spot"], "range": ["circle", "triangle"]},
                "legend": {"orient": "top"},
            },
            "opacity": {"condition": {"test": "datum.pareto", "value": 1.0}, "value": 0.35},
            "tooltip": [
                *(
                    {"field": name, "type": "nominal"}
                    for name in ("provider", "region", "instance_type", "gpus", "pricing")
                ),
                {"field": "cost_usd", "type": "quantitative", "format": ",.0f", "title": "cost $"},
                {"field": "time_to_solution_hours", "type": "quantitative", "format": ",.1f", "title": "hours"},
                {"field": "usd_per_gpu_hour", "type": "quantitative", "format": ".2f", "title": "$/GPU-h"},
            ],
        },
    }


def _price_ages() -> str:
    """'Prices: aws 4 months old (bundled), gcp 5 h old (live), ...' from the catalog status."""
    status = cached_status()
    parts = [
        f"{row['provider']} {report.age_text(float(row['age_hours']))} old ({row['kind']})"
        for row in report.records(status)
    ]
    return "Prices: " + "; ".join(parts) if parts else "No catalog"


def _headline(result: RankResult, form: PlanForm) -> None:
    """The answer first: what stops every option finishing within a year (if anything), the best option a buyer can
    act on, with what stops it in its first words and its price's age, its figures, and what was passed over."""
    if result.year_note:
        st.error(markdown_text(result.year_note))
    best = result.best()
    if best is None:
        return
    option: dict[str, Any] = {str(k): v for k, v in best.items()}
    figures = report.option_headline(option)
    words, sentences = caveats(best)
    pricing = str(best["pricing"])
    if pricing == "spot" and float(best["expected_interruptions"]) >= 1:
        # Reclaims priced in but many: said where the answer stands, not only in the figures below it.
        pricing += f" with {float(best['expected_interruptions']):,.0f} interruptions expected"
    what = f"{best['provider']} {best['instance_type']} in {best['region']}, {pricing}: {figures['gpus']}"
    said = "".join(f", {word.upper()}" for word in words)
    lines = [f"**Best option ({form.by}){said}:** {markdown_text(what)}"]
    details = [*sentences, *filter(None, [price_age_text(best)])]
    if details:
        lines.append(markdown_text("; ".join(details)))
    (st.warning if words else st.success)("  \n".join(lines))
    labels = ("Cost per run", "Time to solution", "Per GPU-hour", "Price per hour")
    # A TPU slice is priced per chip: the metric says so where a GPU's would say GPU-hour.
    shown = {"Per GPU-hour": "Per chip-hour"} if is_tpu(best["gpu"]) else {}
    for col, label in zip(st.columns(len(labels)), labels, strict=True):
        col.metric(shown.get(label, label), figures[label])
    passed = result.passed_over()
    st.caption(
        f"Cost range {figures['Cost range']} (spot interruptions and model uncertainty)"
        + (f"; {markdown_text(passed)}" if passed else "")
    )


def _answer(result: RankResult, form: PlanForm) -> None:
    if result.empty:
        st.warning(result.message or "no option meets these constraints")
        return
    view = report.with_view_columns(result.table)
    _headline_pair(result)
    st.subheader(f"{len(view)} options, {int(view['pareto'].sum())} on the cost/time Pareto front")
    drawn = view[[c for c in CHART_COLUMNS if c in view.columns]]
    st.vega_lite_chart(drawn, _chart(drawn), width="stretch")
    # One row for an offering sold alike in many regions ("us-east-1 +16 more"); the CSV download keeps each region.
    # Ordered by CO2, regions whose grids differ are different answers: their rows stay apart.
    listed = [*SHOWN_COLUMNS, *MORE_COLUMNS]
    rows = report.collapse_regions(view, (*listed, "co2_kg") if form.by == "co2" else listed)
    # The pricing cell says where a spot number may not hold (RISKY, FLOOR), as the CLI's table does.
    rows["pricing"] = rows["pricing"] + caveat_marks(rows)
    every = st.toggle("All columns", key="plan_table.all", help="Price per instance, cost range, interruptions, notes")
    shown = [c for c in (listed if every else SHOWN_COLUMNS) if c in rows.columns]
    st.dataframe(rows[shown], hide_index=True, column_config=COLUMN_CONFIG)
    # Written when clicked, not on every answer: the CSV of a thousand options took 0.15 s of each re-rank.
    table = result.table
    st.download_button("Download CSV", lambda: report.to_csv(table), file_name="gpu-plan.csv", mime="text/csv")
    best = result.best()
    if best is not None:
        with st.expander("Cost lines of the best option"):
            lines = result.cost_lines(int(best["rank"]))
            st.dataframe(pd.DataFrame([line.__dict__ for line in lines]), hide_index=True)


def _headline_pair(result: RankResult) -> None:
    """The best on-demand option beside the best spot option, with the spot run's risk."""
    for column, row in zip(st.columns(2), result.headline(), strict=True):
        if row is None:
            continue
        option: dict[str, Any] = {str(k): v for k, v in row.items()}
        figures = report.option_headline(option)
        column.markdown(
            markdown_text(f"Best {row['pricing']}: {row['provider']} {row['instance_type']}, {figures['gpus']}")
        )
        column.metric("Cost per run", figures["Cost per run"], help=f"low-high scenario: {figures['Cost range']}")
        column.metric("Time to solution", figures["Time to solution"])
        # What stops a buyer (RISKY, a floor price, an uncalibrated GPU) and the price's age, as in the headline.
        _words, sentences = caveats(row)
        said = [*sentences, *filter(None, [price_age_text(row)])]
        if row["pricing"] == "spot":
            said.insert(
                0,
                f"{float(row['expected_interruptions']):.2g} interruptions expected, "
                f"P(none) {float(row['p_no_interruption']):.0%}",
            )
        if said:
            column.caption("; ".join(said))


# The plan view's columns in the app (the library's DataFrame has them all; docs/commitments.md says each).
PLAN_COLUMNS = ["provider", "region", "instance_type", "price_basis", "committed_usd_per_hour",
                "on_demand_usd_per_hour",
                "break_even_vs_on_demand", "break_even_vs_spot", "committed_instances", "flex_pricing",
                "total_usd_per_month", "total_usd_per_year", "all_on_demand_usd_per_month"]  # fmt: skip


def _plan_section(form: PlanForm, catalog: pd.DataFrame) -> None:
    """N runs a month: the cheapest mix of committed and on-demand or spot instances per offering with a commitment."""
    try:
        plan = cached_plan(form, catalog_key(catalog), catalog)
    except PlannerError as exc:
        st.error(error_text(exc))
        return
    st.subheader(f"Plan: {form.runs_per_month:g} runs a month at {form.utilisation:.0%} utilisation")
    if plan.empty:
        st.caption("No offering for this job has a commitment price in the catalog.")
        return
    st.dataframe(plan[PLAN_COLUMNS].head(10), hide_index=True)
    st.caption(
        "Committed prices are per hour of the term (upfront fees spread over it), used or not. A break-even is the "
        "utilisation above which the commitment costs less than on demand or spot (expected interruptions included)."
    )


def render_plan_page() -> None:
    """Form (from the URL, in the sidebar), headline answer, chart, ranked table, exclusions and assumptions."""
    st.title("Plan a training run")
    catalog = cached_catalog()
    allowed = choices(sorted(catalog["region"].unique()), sorted(catalog["gpu"].unique()))
    for problem in load_url_into_widgets(KEY, lambda url: from_query(url, allowed)):
        st.warning(markdown_text(problem))
    _inputs(allowed)
    form = form_from_widgets(KEY, DEFAULT)
    write_url(KEY, to_query(form))
    try:
        result = cached_rank(form, catalog_key(catalog), catalog)
    except PlannerError as exc:
        st.error(error_text(exc))
        return
    if not result.empty:
        _headline(result, form)
    # Warnings (stale prices, a cloud left out for want of a capacity figure) go in one box; other notes as captions.
    warnings = [
        in_app_words(m.removeprefix(report.WARNING_PREFIX)) for m in result.notes if m.startswith(report.WARNING_PREFIX)
    ]
    if warnings:
        st.warning(markdown_text("; ".join(warnings)))
    st.caption(_price_ages())
    for message in (m for m in result.notes if not m.startswith(report.WARNING_PREFIX)):
        st.caption(markdown_text(message))
    _answer(result, form)
    if form.runs_per_month > 0:
        _plan_section(form, catalog)
    if len(result.excluded):
        with st.expander(f"Left out ({len(result.excluded)}) and why"):
            st.dataframe(result.excluded, hide_index=True)
    with st.expander("Assumptions"):
        st.markdown("\n".join(f"- {line}" for line in result.assumptions))
        st.caption(f"Prices as of {result.catalog_as_of}")
    st.caption("Share this answer: the page's address holds the whole form.")


__all__ = ["URL_KEYS", "render_plan_page"]
