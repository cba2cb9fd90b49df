"""`gpuplan calibrate LOG...`: a run's logs as a utilisation report, a calibration profile and right-sizing advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from planner.cli.workload_opts import GlobalBatchOpt, PrecisionOpt, SeqLenOpt
from planner.errors import InputError
from planner.runlogs.readers import FORMATS

# The per-GPU rows of the table view: (label, column).
GPU_COLUMNS = (
    ("GPU", "gpu"),
    ("GPU-hours", "hours"),
    ("busy (%)", "busy_share"),
    ("SM active (%)", "sm_active"),
    ("tensor active (%)", "tensor_active"),
    ("peak memory (GiB)", "memory_peak_gib"),
    ("power (W)", "power_mean_w"),
    ("idle GPU-hours", "idle_hours"),
)


def calibrate(
    logs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="LOG...",
            help="GPU metrics (nvidia-smi CSV, DCGM exporter scrapes, dcgmi dmon) and training logs (HF "
            "trainer_state.json or console, Lightning metrics.csv, Megatron/NeMo, W&B history CSV).",
            show_default=False,
        ),
    ] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", "-w", help="The job's workload (for a profile).")
    ] = None,
    gpu: Annotated[
        str | None, typer.Option("--gpu", "-g", help="The GPU it ran on (default: as the logs name).")
    ] = None,
    gpus: Annotated[
        int | None, typer.Option("--gpus", "-n", help="GPUs of the run (default: as the logs show).")
    ] = None,
    throughput: Annotated[
        float | None,
        typer.Option(
            "--throughput", help="The run's measured throughput (workload unit, all GPUs); replaces the logs'."
        ),
    ] = None,
    precision: PrecisionOpt = "bf16",
    seq_len: SeqLenOpt = None,
    global_batch: GlobalBatchOpt = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="An earlier profile of this job: fit its runs with this one.")
    ] = None,
    price: Annotated[
        float | None, typer.Option("--price", help="USD per GPU-hour (default: the cheapest catalog offering).")
    ] = None,
    log_format: Annotated[
        str | None,
        typer.Option("--log-format", help=f"Read every LOG as this format instead of sniffing: {', '.join(FORMATS)}."),
    ] = None,
    interval: Annotated[
        float | None, typer.Option("--interval", help="Seconds between samples of logs without clock times.")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the profile (JSON) here.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
) -> None:
    """Read a run's logs: how much of the paid GPU time it used, its profile for estimates, and what to change."""
    from planner import report
    from planner.api import calibrate as api_calibrate

    report.check_format(fmt)
    if fmt == "csv":
        raise InputError("--format for calibrate must be table or json")
    fields: dict[str, Any] = {
        name: value for name, value in (("seq_len", seq_len), ("global_batch", global_batch)) if value
    }
    result = api_calibrate(
        list(logs or []),
        workload=workload,
        gpu=gpu,
        gpus=gpus,
        throughput=throughput,
        precision=precision,
        profile=profile,
        price_usd_per_gpu_hour=price,
        log_format=log_format,
        interval_s=interval,
        **fields,
    )
    if output is not None:
        if result.profile is None:
            raise InputError(
                "has no profile to hold: give --workload and a log with throughput (or --throughput)", field="output"
            )
        result.profile.save(output)
    if fmt == "json":
        report.emit(report.to_json(result.to_dict()), None)
        return
    import textwrap

    width = report.terminal_width()
    # The sentences wrap at the terminal's width, continued lines indented under their start.
    text = "".join(
        textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False) + "\n"
        for line in result.summary().splitlines()
    )
    if result.report is not None and result.report.gpu_count > 1:
        frame = result.report.to_frame()
        for share in ("busy_share", "sm_active", "tensor_active"):
            frame[share] = frame[share] * 100.0
        labels = {column: label for label, column in GPU_COLUMNS}
        frame = frame[list(labels)].rename(columns=labels)
        text = report.render_table(frame, title="per GPU", fit=True) + text
    if output is not None:
        text += f"profile written to {output}; use it with gpuplan estimate --profile {output}\n"
    report.emit(text, None)


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `gpuplan calibrate`."""
    app.command("calibrate")(calibrate)
