"""The "Plan a training run" page: rank every offering for one workload, under a deadline and a budget."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from planner import api, report
from planner.cost.result import TABLE_COLUMNS
from planner.errors import PlannerError
from planner.hardware import PRECISIONS
from planner.perf.workloads import STACK_HELP, STACKS, WORKLOADS, get_workload, workload_names
from planner.ui.cache import cached_catalog

SHOWN_COLUMNS = [c for c in TABLE_COLUMNS if c not in ("zone", "price_as_of")]


def _inputs(catalog: pd.DataFrame) -> dict[str, Any] | None:
    """The form; returns the rank() arguments once submitted."""
    names = [n for n in workload_names() if n != "transformer"]
    with st.form("plan"):
        left, middle, right = st.columns(3)
        workload_name = left.selectbox(
            "Workload", names, index=names.index("llama-3-8b") if "llama-3-8b" in names else 0
        )
        preset = WORKLOADS[workload_name]
        unit = preset.work_unit
        default_work = float(preset.total_work())
        work = left.number_input(
            f"Amount of work ({unit})", min_value=1.0, value=default_work, format="%.3e", key=f"work-{workload_name}"
        )
        precision = left.selectbox("Precision", PRECISIONS, index=PRECISIONS.index("bf16"))
        stack = left.selectbox("Software", STACKS, help=STACK_HELP)
        deadline = middle.number_input("Deadline, hours (0 = none)", min_value=0.0, value=0.0, step=12.0)
        budget = middle.number_input("Budget, USD (0 = none)", min_value=0.0, value=0.0, step=1000.0)
        pricing = middle.radio("Pricing", ["both", "on-demand", "spot"], horizontal=True)
        providers = right.multiselect("Providers", ["aws", "gcp", "azure"], default=[])
        gpus = right.multiselect("GPUs", sorted(catalog["gpu"].unique()), default=[])
        max_nodes = right.slider("Max nodes", min_value=1, max_value=16, value=1)
        by = right.radio("Order by", ["cost", "time", "cost-time", "co2"], horizontal=True)
        submitted = st.form_submit_button("Rank offerings", type="primary")
    if not submitted and "plan_args" not in st.session_state:
        return None
    if submitted:
        st.session_state["plan_args"] = {
            "workload": get_workload(workload_name, work=work, stack=stack if preset.is_transformer else None),
            "precision": precision,
            "deadline_hours": deadline or None,
            "budget_usd": budget or None,
            "pricing": pricing,
            "provider": providers or None,
            "gpu": gpus or None,
            "max_nodes": int(max_nodes),
            "by": by,
        }
    return dict(st.session_state["plan_args"])


def _chart(table: pd.DataFrame) -> alt.Chart:
    """Cost against time, one point per option; the Pareto front stands out."""
    chart: alt.Chart = (
        alt.Chart(table)
        .mark_circle(size=70)
        .encode(
            x=alt.X("time_to_solution_hours:Q", title="time to solution (h)", scale=alt.Scale(type="log")),
            y=alt.Y("cost_usd:Q", title="cost per run (USD)", scale=alt.Scale(type="log")),
            color=alt.Color("gpu:N"),
            shape=alt.Shape("pricing:N"),
            opacity=alt.condition("datum.pareto", alt.value(1.0), alt.value(0.35)),
            tooltip=["provider", "region", "instance_type", "nodes", "pricing", "cost_usd", "time_to_solution_hours"],
        )
        .properties(height=360)
    )
    return chart


def render_plan_page() -> None:
    """Form, headline answer, ranked table, chart, exclusions and assumptions."""
    st.title("Plan a training run")
    st.caption("Which offering finishes this job cheapest, or within my deadline, and what will it cost?")
    catalog = cached_catalog()
    args = _inputs(catalog)
    if args is None:
        st.info("Choose a workload and constraints, then press **Rank offerings**.")
        return
    try:
        result = api.rank(args.pop("workload"), catalog=catalog, **args)
    except PlannerError as exc:
        st.error(str(exc))
        return
    for message in result.notes:
        st.caption(message)
    if result.empty:
        st.warning(result.message or "no option meets these constraints")
    else:
        table = result.table
        best = table.iloc[0]
        gpus = int(best["gpus_per_node"] * best["nodes"]) if best["gpus_per_node"] >= 1 else best["gpus_per_node"]
        st.success(
            f"**Best option ({args['by']}):** {best['provider']} `{best['instance_type']}` x{int(best['nodes'])} "
            f"in {best['region']}, {best['pricing']}: {gpus} x {best['gpu']}"
        )
        # The headline pair: the best on-demand option beside the best spot option, with the spot run's risk.
        for column, row in zip(st.columns(2), result.headline(), strict=True):
            if row is None:
                continue
            column.markdown(
                f"**Best {row['pricing']}:** {row['provider']} `{row['instance_type']}` x{int(row['nodes'])}"
            )
            column.metric(
                "Cost per run",
                f"${row['cost_usd']:,.0f}",
                help=f"low-high scenario: ${row['cost_low_usd']:,.0f}-{row['cost_high_usd']:,.0f}",
            )
            column.metric("Time to solution", f"{row['time_to_solution_hours']:,.1f} h")
            if row["pricing"] == "spot":
                risk = "; **risky**: the high scenario more than doubles time or cost" if row["spot_risky"] else ""
                column.caption(
                    f"{row['expected_interruptions']:.2g} interruptions expected, "
                    f"P(none) {row['p_no_interruption']:.0%}{risk}"
                )
        st.subheader(f"{len(table)} options, {int(table['pareto'].sum())} on the cost/time Pareto front")
        st.altair_chart(_chart(table), use_container_width=True)
        st.dataframe(table[[c for c in SHOWN_COLUMNS if c in table.columns]], hide_index=True)
        st.download_button("Download CSV", report.to_csv(table), file_name="gpu-plan.csv", mime="text/csv")
        with st.expander("Cost lines of the best option"):
            st.dataframe(pd.DataFrame([line.__dict__ for line in result.cost_lines(1)]), hide_index=True)
    if len(result.excluded):
        with st.expander(f"Left out ({len(result.excluded)}) and why"):
            st.dataframe(result.excluded, hide_index=True)
    with st.expander("Assumptions"):
        st.markdown("\n".join(f"- {line}" for line in result.assumptions))
        st.caption(f"Prices as of {result.catalog_as_of}")
