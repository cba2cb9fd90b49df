"""The "Estimate" page: one workload on one GPU configuration, with the model's assumptions."""

from __future__ import annotations

import streamlit as st

from planner import api
from planner.errors import PlannerError
from planner.hardware import PRECISIONS, gpu_table
from planner.perf.workloads import STACK_HELP, STACKS, WORKLOADS, get_workload


def render_estimate_page() -> None:
    """Throughput, time to solution, memory fit, MFU and energy for a workload on N GPUs."""
    st.title("Estimate a training run")
    names = list(WORKLOADS)
    left, middle, right = st.columns(3)
    name = left.selectbox("Workload", names, index=names.index("llama-3-8b") if "llama-3-8b" in names else 0)
    gpu = middle.selectbox("GPU", list(gpu_table()), index=list(gpu_table()).index("H100-SXM"))
    gpus = right.number_input("GPUs", min_value=1, max_value=4096, value=8)
    precision = left.selectbox("Precision", PRECISIONS, index=PRECISIONS.index("bf16"))
    work = middle.number_input(
        f"Amount of work ({WORKLOADS[name].work_unit})",
        min_value=1.0,
        value=float(WORKLOADS[name].total_work()),
        format="%.3e",
        key=f"estimate-work-{name}",
    )
    stack = right.selectbox("Software", STACKS, help=STACK_HELP, disabled=not WORKLOADS[name].is_transformer)
    try:
        workload = get_workload(name, work=work, stack=stack if WORKLOADS[name].is_transformer else None)
        result = api.estimate(workload, gpu, int(gpus), precision)
    except PlannerError as exc:
        st.error(str(exc))
        return
    cols = st.columns(4)
    cols[0].metric(f"Throughput ({result.throughput_unit})", f"{result.throughput:,.0f}")
    cols[1].metric("Time to solution", f"{result.time_to_solution_hours:,.1f} h")
    cols[2].metric("Memory per GPU", f"{result.memory_per_gpu_gib:,.1f} GiB")
    cols[3].metric("MFU", f"{result.mfu:.0%}")
    if not result.fits_in_memory:
        st.warning(f"Does not fit: {result.why_not_fits}")
    st.caption(
        f"Band {result.throughput_low:,.0f} to {result.throughput_high:,.0f} {result.throughput_unit}; "
        f"step {result.step_time_s:,.3g} s; energy {result.energy_kwh:,.0f} kWh"
    )
    st.markdown("\n".join(f"- {line}" for line in result.assumptions))
    with st.expander("All fields (JSON)"):
        st.json(result.to_dict())
