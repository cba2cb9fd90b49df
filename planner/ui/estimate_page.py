"""The "Estimate" page: one workload on one GPU configuration, with the model's assumptions."""

from __future__ import annotations

import streamlit as st

from planner import api
from planner.errors import PlannerError
from planner.hardware import PRECISIONS, gpu_table
from planner.perf.workloads import RECOMPUTE, RECOMPUTE_HELP, STACK_HELP, STACKS, WORKLOADS, get_workload


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
    stack = right.selectbox("Software", STACKS, help=STACK_HELP)
    recompute = "auto"
    if WORKLOADS[name].is_transformer:
        recompute = left.radio("Activation checkpointing", RECOMPUTE, horizontal=True, help=RECOMPUTE_HELP)
    try:
        workload = get_workload(name, work=work, stack=stack, recompute=recompute)
        result = api.estimate(workload, gpu, int(gpus), precision)
    except PlannerError as exc:
        st.error(str(exc))
        return
    cols = st.columns(4)
    if result.throughput is None:
        # Numbers that did not happen are not shown: no throughput, time or MFU for a job that does not fit.
        cols[0].metric(f"Throughput ({result.throughput_unit})", "does not fit")
        cols[1].metric("Time to solution", "-")
        cols[2].metric("Memory per GPU", f"{result.memory_per_gpu_gib:,.1f} GiB")
        cols[3].metric("Fits from", f"{result.min_gpus_to_fit} GPUs" if result.min_gpus_to_fit else "-")
        st.warning(f"Does not fit: {result.why_not_fits}")
    else:
        cols[0].metric(f"Throughput ({result.throughput_unit})", f"{result.throughput:,.0f}")
        cols[1].metric("Time to solution", f"{result.time_to_solution_hours or 0:,.1f} h")
        cols[2].metric("Memory per GPU", f"{result.memory_per_gpu_gib:,.1f} GiB")
        cols[3].metric("MFU", f"{result.mfu or 0:.0%}")
        st.caption(
            f"Band {result.throughput_low or 0:,.0f} to {result.throughput_high or 0:,.0f} {result.throughput_unit}; "
            f"step {result.step_time_s or 0:,.3g} s; energy {result.energy_kwh or 0:,.0f} kWh"
        )
    if not result.gpu_calibrated:
        st.info(f"Not calibrated: {result.calibration_note}")
    st.markdown("\n".join(f"- {line}" for line in result.assumptions))
    with st.expander("All fields (JSON)"):
        st.json(result.to_dict())
