"""The "Estimate" page: one workload on one GPU configuration, with the model's assumptions.

Like the plan page, the whole form lives in the URL: a link reproduces the estimate.
"""

from __future__ import annotations

import streamlit as st

from planner import api, report
from planner.errors import PlannerError
from planner.hardware import gpu_table
from planner.perf.workloads import RECOMPUTE_HELP, STACK_HELP, WORKLOADS
from planner.ui.estimate_state import DEFAULT, MAX_GPUS, choices, from_query, to_query
from planner.ui.messages import error_text
from planner.ui.url_widgets import form_from_widgets, load_url_into_widgets, write_url
from planner.ui.workload_inputs import form_workload, packing_inputs, schedule_inputs, trainable_share_input

KEY = "estimate."  # session-state prefix of the page's widgets ("estimate.url": the URL they were loaded from)


def _workload_changed() -> None:
    """A new workload starts from its own amount of work and shape; a CNN has no mode or checkpointing to keep."""
    st.session_state[KEY + "work"] = 0.0
    st.session_state[KEY + "seq_len"] = 0
    if not WORKLOADS[st.session_state[KEY + "workload"]].is_transformer:
        st.session_state[KEY + "mode"] = DEFAULT.mode
        st.session_state[KEY + "recompute"] = DEFAULT.recompute


def _inputs(allowed: dict[str, tuple[str, ...]]) -> None:
    """The form; its widgets keep their values in session state under ``estimate.<field>``."""
    left, middle, right = st.columns(3)
    left.selectbox("Workload", allowed["workload"], key=KEY + "workload", on_change=_workload_changed)
    preset = WORKLOADS[st.session_state[KEY + "workload"]]
    middle.selectbox("GPU", allowed["gpu"], key=KEY + "gpu")
    right.number_input("GPUs", min_value=1, max_value=MAX_GPUS, key=KEY + "gpus")
    if preset.is_transformer:
        left.radio("Training", allowed["mode"], horizontal=True, key=KEY + "mode", help="pretrain, finetune or LoRA")
        if st.session_state[KEY + "mode"] == "lora":
            trainable_share_input(left, KEY)
    left.selectbox("Precision", allowed["precision"], key=KEY + "precision")
    middle.number_input(
        f"Amount of work ({preset.work_unit}; 0 = the preset's for the mode)",
        min_value=0.0,
        format="%.3e",
        key=KEY + "work",
    )
    right.selectbox("Software", allowed["stack"], help=STACK_HELP, key=KEY + "stack")
    if preset.is_transformer:
        middle.radio(
            "Activation checkpointing",
            allowed["recompute"],
            horizontal=True,
            help=RECOMPUTE_HELP,
            key=KEY + "recompute",
        )
    with st.expander("Batch, sequence length and evaluations (0 = the preset's, no evaluations)"):
        columns = st.columns(4)
        if preset.is_transformer:
            columns[0].number_input("Sequence length (0 = preset's)", min_value=0, step=512, key=KEY + "seq_len")
        schedule_inputs(columns[1:], KEY)
        if preset.is_transformer:
            packing_inputs(st.columns(4), KEY)


def render_estimate_page() -> None:
    """Throughput, time to solution, memory fit, MFU and energy for a workload on N GPUs."""
    st.title("Estimate a training run")
    allowed = choices(list(gpu_table()))
    for problem in load_url_into_widgets(KEY, lambda url: from_query(url, allowed)):
        st.warning(problem)
    _inputs(allowed)
    form = form_from_widgets(KEY, DEFAULT)
    write_url(KEY, to_query(form))
    try:
        result = api.estimate(form_workload(form), form.gpu, form.gpus, form.precision)
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
    fields = result.to_dict()
    # The same JSON as `gpuplan estimate --format json`: one writer for both faces.
    st.download_button("Download JSON", report.to_json(fields), file_name="gpu-estimate.json", mime="application/json")
    with st.expander("All fields (JSON)"):
        st.json(fields)
    st.caption("Share this estimate: the page's address holds the whole form.")
