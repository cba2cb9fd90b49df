"""The "Plan a training run" page: rank every offering for one workload, under a deadline and a budget.

The answer for the default workload shows on first load. The whole form lives in the URL (``st.query_params``):
a link reproduces the answer, and the browser's back button returns to the previous one. Every number on the
page comes from planner.api and planner.report; the page only lays them out.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from planner import report
from planner.cost.rank import RankResult
from planner.cost.result import SPOT_FLOOR_NOTE
from planner.errors import PlannerError
from planner.perf.workloads import RECOMPUTE_HELP, STACK_HELP
from planner.ui.cache import cached_catalog, cached_rank, cached_status, catalog_key
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
from planner.ui.workload_inputs import schedule_inputs, trainable_share_input

KEY = "plan."  # session-state prefix of the form's widgets ("plan.url": the URL they were last loaded from)
# What the results table shows first, so cost, time and $/GPU-hour need no horizontal scroll.
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
    "price_usd_per_hour",
    "cost_low_usd",
    "cost_high_usd",
    "expected_interruptions",
    "pareto",
    "notes",
]
COLUMN_CONFIG = {
    "rank": st.column_config.NumberColumn("#", width="small"),
    "cost_usd": st.column_config.NumberColumn("cost $", format="%,.0f"),
    "time_to_solution_hours": st.column_config.NumberColumn("hours", format="%,.1f"),
    "usd_per_gpu_hour": st.column_config.NumberColumn("$/GPU-h", format="%.2f"),
    "instance_type": st.column_config.TextColumn("instance"),
    "gpus": st.column_config.TextColumn("GPUs"),
    "price_usd_per_hour": st.column_config.NumberColumn("$/h per instance", format="%.2f"),
    "cost_low_usd": st.column_config.NumberColumn("low $", format="%,.0f"),
    "cost_high_usd": st.column_config.NumberColumn("high $", format="%,.0f"),
    "expected_interruptions": st.column_config.NumberColumn("interruptions", format="%.2f"),
}


def markdown_text(text: str) -> str:
    """Catalog text inside Streamlit markdown, shown as typed: every ASCII punctuation mark backslash-escaped.

    CommonMark lets any of them be escaped, which also defuses Streamlit's own ``:color[...]`` and emoji codes.
    """
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in text)


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _inputs(allowed: dict[str, tuple[str, ...]]) -> None:
    """The form; its widgets keep their values in session state under ``plan.<field>``."""
    with st.form("plan"):
        left, middle, right = st.columns(3)
        left.selectbox(
            "Workload",
            allowed["workload"],
            key=KEY + "workload",
            help="A preset, or 'transformer' for your own model (set its shape under Custom model).",
        )
        left.number_input(
            "Amount of work (tokens, images or sequences; 0 = the preset's default)",
            min_value=0.0,
            format="%.3e",
            key=KEY + "work",
        )
        left.radio("Training", allowed["mode"], horizontal=True, key=KEY + "mode", help="pretrain, finetune or LoRA")
        trainable_share_input(left, KEY)
        left.selectbox("Precision", allowed["precision"], key=KEY + "precision")
        left.selectbox("Software", allowed["stack"], help=STACK_HELP, key=KEY + "stack")
        left.radio(
            "Activation checkpointing",
            allowed["recompute"],
            horizontal=True,
            help=RECOMPUTE_HELP,
            key=KEY + "recompute",
        )
        middle.number_input("Deadline, hours (0 = none)", min_value=0.0, step=12.0, key=KEY + "deadline_hours")
        middle.number_input("Budget, USD (0 = none)", min_value=0.0, step=1000.0, key=KEY + "budget_usd")
        middle.radio("Pricing", allowed["pricing"], horizontal=True, key=KEY + "pricing")
        middle.radio("Order by", allowed["by"], horizontal=True, key=KEY + "by")
        right.multiselect("Providers", allowed["providers"], key=KEY + "providers", placeholder="all")
        right.multiselect("Regions", allowed["regions"], key=KEY + "regions", placeholder="all")
        right.multiselect("GPUs", allowed["gpus"], key=KEY + "gpus", placeholder="all")
        right.slider("Max nodes", min_value=1, max_value=MAX_NODES, key=KEY + "max_nodes")
        right.checkbox(
            "Only offerings with capacity now",
            key=KEY + "available_only",
            help="Clouds that report capacity (Lambda) at the last refresh; the others have no capacity figure.",
        )
        with st.expander("Custom model (workload 'transformer', or override a preset's shape; 0 = preset's)"):
            cols = st.columns(5)
            cols[0].number_input("Parameters, billions", min_value=0.0, step=1.0, key=KEY + "params_billions")
            cols[1].number_input("Layers", min_value=0, step=1, key=KEY + "layers")
            cols[2].number_input("Hidden size", min_value=0, step=128, key=KEY + "hidden")
            cols[3].number_input("Attention heads", min_value=0, step=1, key=KEY + "heads")
            cols[4].number_input("Sequence length", min_value=0, step=512, key=KEY + "seq_len")
        with st.expander("Batch and evaluations (0 = the preset's batch, no evaluations)"):
            schedule_inputs(st.columns(3), KEY)
        st.form_submit_button("Rank offerings", type="primary")


def _log_if_wide(values: pd.Series) -> alt.Scale:
    """A log axis when the values span more than a factor of 20, else a linear one from zero."""
    low, high = float(values.min()), float(values.max())
    return alt.Scale(type="log") if low > 0 and high / low > 20 else alt.Scale(zero=True)


def _chart(view: pd.DataFrame) -> alt.Chart:
    """Cost against time, one point per option: colour per GPU, shape per pricing, the Pareto front opaque."""
    gpus = sorted(view["gpu"].unique())
    chart: alt.Chart = (
        alt.Chart(view)
        .mark_point(size=80, filled=True)
        .encode(
            x=alt.X(
                "time_to_solution_hours:Q",
                title="time to solution (hours)",
                scale=_log_if_wide(view["time_to_solution_hours"]),
            ),
            y=alt.Y("cost_usd:Q", title="cost per run (USD)", scale=_log_if_wide(view["cost_usd"])),
            # category20 has a distinct colour for up to 20 GPUs (tableau10 repeats after ten).
            color=alt.Color("gpu:N", title="GPU", scale=alt.Scale(domain=gpus, scheme="category20")),
            shape=alt.Shape(
                "pricing:N",
                title="pricing",
                scale=alt.Scale(domain=["on-demand", "spot"], range=["circle", "triangle"]),
            ),
            opacity=alt.condition("datum.pareto", alt.value(1.0), alt.value(0.35)),
            tooltip=[
                "provider",
                "region",
                "instance_type",
                "gpus",
                "pricing",
                alt.Tooltip("cost_usd:Q", format=",.0f", title="cost $"),
                alt.Tooltip("time_to_solution_hours:Q", format=",.1f", title="hours"),
                alt.Tooltip("usd_per_gpu_hour:Q", format=".2f", title="$/GPU-h"),
            ],
        )
        .properties(height=380)
    )
    return chart


def _price_ages() -> str:
    """'Prices: aws 4 months old (bundled), gcp 5 h old (live), ...' from the catalog status."""
    status = cached_status()
    parts = [
        f"{row['provider']} {report.age_text(float(row['age_hours']))} old ({row['kind']})"
        for row in report.records(status)
    ]
    return "Prices: " + "; ".join(parts) if parts else "No catalog"


def _answer(result: RankResult, form: PlanForm) -> None:
    if result.empty:
        st.warning(result.message or "no option meets these constraints")
        return
    view = report.with_view_columns(result.table)
    best = report.records(view.head(1))[0]
    figures = report.option_headline(best)
    what = f"{best['provider']} {best['instance_type']} in {best['region']}, {best['pricing']}: {figures['gpus']}"
    st.success(f"**Best option ({form.by}):** {markdown_text(what)}")
    labels = ("Cost per run", "Time to solution", "Per GPU-hour", "Price per hour")
    for col, label in zip(st.columns(len(labels)), labels, strict=True):
        col.metric(label, figures[label])
    st.caption(f"Cost range {figures['Cost range']} (spot interruptions and model uncertainty)")
    _headline_pair(result)
    st.subheader(f"{len(view)} options, {int(view['pareto'].sum())} on the cost/time Pareto front")
    st.altair_chart(_chart(view), width="stretch")
    # One row for an offering sold alike in many regions ("us-east-1 +16 more"); the CSV download keeps each region.
    # Ordered by CO2, regions whose grids differ are different answers: their rows stay apart.
    rows = report.collapse_regions(view, (*SHOWN_COLUMNS, "co2_kg") if form.by == "co2" else SHOWN_COLUMNS)
    st.dataframe(rows[[c for c in SHOWN_COLUMNS if c in rows.columns]], hide_index=True, column_config=COLUMN_CONFIG)
    st.download_button("Download CSV", report.to_csv(result.table), file_name="gpu-plan.csv", mime="text/csv")
    with st.expander("Cost lines of the best option"):
        st.dataframe(pd.DataFrame([line.__dict__ for line in result.cost_lines(1)]), hide_index=True)


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
        if row["pricing"] == "spot":
            risk = "; risky: the high scenario more than doubles time or cost" if row["spot_risky"] else ""
            if SPOT_FLOOR_NOTE in str(row.get("notes") or ""):
                risk += f"; {SPOT_FLOOR_NOTE}"
            column.caption(
                f"{float(row['expected_interruptions']):.2g} interruptions expected, "
                f"P(none) {float(row['p_no_interruption']):.0%}{risk}"
            )


def render_plan_page() -> None:
    """Form (from the URL), headline answer, chart, ranked table, exclusions and assumptions."""
    st.title("Plan a training run")
    st.caption("Which offering finishes this job cheapest, or within my deadline, and what will it cost?")
    catalog = cached_catalog()
    allowed = choices(sorted(catalog["region"].unique()), sorted(catalog["gpu"].unique()))
    for problem in load_url_into_widgets(KEY, lambda url: from_query(url, allowed)):
        st.warning(markdown_text(problem))
    _inputs(allowed)
    form = form_from_widgets(KEY, DEFAULT)
    write_url(KEY, to_query(form))
    st.caption(_price_ages())
    try:
        result = cached_rank(form, catalog_key(catalog), catalog)
    except PlannerError as exc:
        st.error(error_text(exc))
        return
    # Warnings (stale prices, a cloud left out for want of a capacity figure) go in one box; other notes as captions.
    warnings = [m.removeprefix(report.WARNING_PREFIX) for m in result.notes if m.startswith(report.WARNING_PREFIX)]
    if warnings:
        st.warning(markdown_text("; ".join(warnings)))
    for message in (m for m in result.notes if not m.startswith(report.WARNING_PREFIX)):
        st.caption(markdown_text(message))
    _answer(result, form)
    if len(result.excluded):
        with st.expander(f"Left out ({len(result.excluded)}) and why"):
            st.dataframe(result.excluded, hide_index=True)
    with st.expander("Assumptions"):
        st.markdown("\n".join(f"- {line}" for line in result.assumptions))
        st.caption(f"Prices as of {result.catalog_as_of}")
    st.caption("Share this answer: the page's address holds the whole form.")


__all__ = ["URL_KEYS", "render_plan_page"]
