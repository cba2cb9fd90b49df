"""The "Your runs" page: uploaded GPU metrics and training logs as utilisation charts, advice and a profile.

The logs are read as the library reads them (``planner.calibrate``); the estimate below uses the profile the run gives.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import streamlit as st

from planner import api, report
from planner.errors import PlannerError
from planner.hardware import gpu_table
from planner.perf.workloads import workload_names
from planner.runlogs.calibrate import Calibration
from planner.runlogs.lines import LogSource
from planner.runlogs.readers import FORMATS
from planner.runlogs.report import UtilisationReport
from planner.ui.messages import error_text

KEY = "runs."  # session-state prefix of the page's widgets
FROM_LOGS = "(from the logs)"
NO_WORKLOAD = "(none: report only)"


def _inputs() -> dict[str, Any]:
    left, middle, right = st.columns(3)
    workload = left.selectbox("Workload", [NO_WORKLOAD, *workload_names()], key=KEY + "workload")
    gpu = middle.selectbox("GPU", [FROM_LOGS, *gpu_table()], key=KEY + "gpu")
    gpus = right.number_input("GPUs (0 = as the logs show)", min_value=0, max_value=4096, key=KEY + "gpus")
    throughput = left.number_input(
        "Measured throughput (workload unit/s, all GPUs; 0 = the training log's)", min_value=0.0, key=KEY + "throughput"
    )
    price = middle.number_input(
        "Price per GPU-hour, USD (0 = the cheapest catalog offering)", min_value=0.0, key=KEY + "price"
    )
    fmt = right.selectbox("Log format", ["(sniff)", *FORMATS], key=KEY + "format")
    return {
        "workload": None if workload == NO_WORKLOAD else workload,
        "gpu": None if gpu == FROM_LOGS else gpu,
        "gpus": int(gpus) or None,
        "throughput": float(throughput) or None,
        "price_usd_per_gpu_hour": float(price) or None,
        "log_format": None if fmt == "(sniff)" else fmt,
    }


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _charts(usage: UtilisationReport) -> None:
    series = usage.series_frame()
    series["minutes"] = series["time_s"] / 60.0
    base = alt.Chart(series).encode(x=alt.X("minutes:Q", title="minutes since the start"), color="gpu:N")
    util = base.mark_line().encode(y=alt.Y("util_pct:Q", title="GPU utilisation (%)"))
    st.altair_chart(util, width="stretch")
    if series["sm_active"].notna().any():
        st.altair_chart(base.mark_line().encode(y=alt.Y("sm_active:Q", title="SM active")), width="stretch")
    if series["power_w"].notna().any():
        st.altair_chart(base.mark_line().encode(y=alt.Y("power_w:Q", title="power (W)")), width="stretch")


def _report(usage: UtilisationReport) -> None:
    node = usage.node
    cols = st.columns(4)
    cols[0].metric("Busy (GPU utilisation)", _share(node.busy_share))
    cols[1].metric("SM active", _share(node.sm_active))
    memory = "-" if node.memory_peak_gib is None else f"{node.memory_peak_gib:,.1f} GiB"
    cols[2].metric("Peak memory", memory)
    cols[3].metric("Idle GPU-hours", f"{node.idle_hours:,.2f} of {node.hours:,.2f}")
    st.caption(usage.summary().replace("\n", "; ").strip("; "))
    _charts(usage)
    st.dataframe(usage.to_frame(), hide_index=True)


def _estimate(result: Calibration) -> None:
    profile = result.profile
    if profile is None:
        return
    st.subheader("Estimates with this run's profile")
    st.write(
        f"{profile.workload}: {profile.throughput:,.0f} {profile.unit} on {profile.gpus}x {profile.gpu} "
        f"({profile.factor:.2f}x the model's figure)"
    )
    left, right = st.columns(2)
    ids = list(gpu_table())
    gpu = left.selectbox("Estimate on", ids, index=ids.index(profile.gpu), key=KEY + "estimate_gpu")
    gpus = right.number_input("GPUs", min_value=1, max_value=4096, value=profile.gpus, key=KEY + "estimate_gpus")
    try:
        estimate = api.estimate(profile.workload, gpu, int(gpus), profile.precision, **profile.workload_fields,
                                profile=profile)  # fmt: skip
    except PlannerError as exc:
        st.error(error_text(exc))
        return
    cols = st.columns(2)
    cols[0].metric(f"Throughput ({estimate.throughput_unit})", f"{estimate.throughput or 0:,.0f}")
    cols[1].metric("Time to solution", f"{estimate.time_to_solution_hours or 0:,.1f} h")
    st.download_button(
        "Download the profile (JSON)",
        report.to_json(profile.to_dict()),
        file_name="gpu-profile.json",
        mime="application/json",
    )


def render_runlogs_page() -> None:
    """Upload a run's logs; see how much of the paid GPU time it used, what to change, and its profile."""
    st.title("Your runs")
    st.caption(
        "GPU metrics: nvidia-smi --query-gpu CSV loops, DCGM exporter scrapes, dcgmi dmon. Training logs: Hugging "
        "Face trainer_state.json or console output, Lightning metrics.csv, Megatron/NeMo, W&B history CSV."
    )
    files = st.file_uploader("Logs of one run", accept_multiple_files=True, key=KEY + "files")
    options = _inputs()
    if not files:
        st.info("Upload a run's logs to see its utilisation.")
        return
    sources = [LogSource.from_bytes(upload.name, upload.getvalue()) for upload in files]
    try:
        result = api.calibrate(sources, **options)
    except PlannerError as exc:
        st.error(error_text(exc))
        return
    if result.report is not None:
        _report(result.report)
    for log in result.training:
        rate = "TFLOP/s only" if log.rate is None else f"{log.rate:,.1f} {log.rate_unit}/s"
        st.write(f"{log.source} ({log.format}): {rate}{' per GPU' if log.per_gpu else ''}")
    if result.advice:
        st.subheader("What to change")
        st.markdown("\n".join(f"- {item.text}" for item in result.advice))
    for note in result.notes:
        st.caption(note)
    _estimate(result)
