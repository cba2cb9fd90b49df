"""The "Estimate" page: one workload on one GPU configuration, with the model's assumptions."""

from __future__ import annotations

import streamlit as st

from planner import api
from planner.errors import PlannerError
from planner.hardware import PRECISIONS, gpu_table
from planner.perf.workloads import MODES, RECOMPUTE, RECOMPUTE_HELP, STACK_HELP, STACKS, WORKLOADS, get_workload
from planner.ui.messages import error_text
from planner.ui.workload_inputs import schedule_fields, schedule_inputs

KEY = "estimate."  # session-state prefix of the page's widgets


def render_estimate_page() -> None:
    """Throughput, time to solution, memory fit, MFU and energy for a workload on N GPUs."""
    st.title("Estimate a training run")
    names = list(WORKLOADS)
    left, middle, right = st.columns(3)
    name = left.selectbox("Workload", names, index=names.index("llama-3-8b") if "llama-3-8b" in names else 0)
    gpu = middle.selectbox("GPU", list(gpu_table()), index=list(gpu_table()).index("H100-SXM"))
    gpus = right.number_input("GPUs", min_value=1, max_value=4096, value=8)
    preset = WORKLOADS[name]
    mode, recompute, seq_len = preset.mode, "auto", 0
    if preset.is_transformer:
        mode = left.radio("Training", MODES, horizontal=True, index=MODES.index(preset.mode), key=f"{KEY}mode-{name}")
    precision = left.selectbox("Precision", PRECISIONS, index=PRECISIONS.index("bf16"))
    # The default amount of work follows the mode (a LoRA run's budget is not a pre-training's).
    default_work = float(get_workload(name, mode=mode).total_work())
    work = middle.number_input(
        f"Amount of work ({preset.work_unit})",
        min_value=1.0,
        value=default_work,
        format="%.3e",
        key=f"{KEY}work-{name}-{mode}",
    )
    stack = right.selectbox("Software", STACKS, help=STACK_HELP)
    if preset.is_transformer:
        recompute = middle.radio("Activation checkpointing", RECOMPUTE, horizontal=True, help=RECOMPUTE_HELP)
    with st.expander("Batch, sequence length and evaluations (0 = the preset's, no evaluations)"):
        columns = st.columns(4)
        schedule_inputs(columns[1:], KEY)
        if preset.is_transformer:
            seq_len = columns[0].number_input(
                "Sequence length (0 = preset's)", min_value=0, step=512, key=f"{KEY}seq_len-{name}"
            )
    try:
        workload = get_workload(
            name,
            work=work,
            mode=mode,
            stack=stack,
            recompute=recompute,
            seq_len=int(seq_len) or None,
            **schedule_fields(KEY),
        )
        result = api.estimate(workload, gpu, int(gpus), precision)
    except PlannerError as exc:
        st.error(error_text(exc))
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
    shown = None
    if not result.gpu_calibrated:
        shown = result.calibration_note
        st.info(f"Not calibrated: {shown}")
    st.markdown("\n".join(f"- {line}" for line in result.assumptions if line != shown))
    with st.expander("All fields (JSON)"):
        st.json(result.to_dict())
