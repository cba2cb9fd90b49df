"""`gpuplan estimate`: throughput, time to solution, memory fit, MFU and energy of one workload on one GPU setup."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from planner.cli.groups import with_groups
from planner.cli.workload_opts import (
    EvidenceFlags,
    PrecisionOpt,
    ProfileOpt,
    WorkloadFlags,
    WorkloadOpt,
    profile_keyword,
)
from planner.errors import InputError

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table or json.")]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")]

# Rows of the human view: (label, field).
TABLE_ROWS = (
    ("throughput", "throughput"),
    ("throughput per GPU", "throughput_per_gpu"),
    ("band (low)", "throughput_low"),
    ("band (high)", "throughput_high"),
    ("step time (s)", "step_time_s"),
    ("time to solution (h)", "time_to_solution_hours"),
    ("memory per GPU (GiB)", "memory_per_gpu_gib"),
    ("GPU memory (GiB)", "gpu_memory_gib"),
    ("fits in memory", "fits_in_memory"),
    ("GPU in calibration data", "gpu_calibrated"),
    ("MFU", "mfu"),
    ("energy (kWh)", "energy_kwh"),
)


def render_estimate(result: dict[str, Any], fmt: str) -> str:
    """JSON (one object) or a two-column table with the assumptions below it."""
    from planner import report

    report.check_format(fmt)
    if fmt == "json":
        # The envelope every JSON report carries; an estimate reads no prices, so it names no snapshot.
        return report.to_json(report.envelope(result, snapshots=[], ages_days={}))
    if fmt == "csv":
        raise InputError("--format for estimate must be table or json")
    import pandas as pd

    unit = result["throughput_unit"]
    rows = [{"quantity": label, "value": result[key]} for label, key in TABLE_ROWS]
    for row in rows:
        if row["quantity"].startswith(("throughput", "band")):
            row["quantity"] = f"{row['quantity']} ({unit})"
        if row["value"] is None:
            # Numbers that did not happen are not shown: the configuration does not fit in memory.
            row["value"] = "- (does not fit)"
        elif isinstance(row["value"], float):
            row["value"] = f"{row['value']:.3g}" if abs(row["value"]) < 1000 else f"{row['value']:,.0f}"
    title = f"{result['workload']} on {result['gpus']}x {result['gpu']} ({result['precision']})"
    text = report.render_table(pd.DataFrame(rows), title=title, columns=("quantity", "value"))
    lines = [text.rstrip("\n")]
    if result["why_not_fits"]:
        lines.append(f"does not fit: {result['why_not_fits']}")
    shown = None
    if not result.get("gpu_calibrated", True):
        shown = result["calibration_note"]
        lines.append(f"not calibrated: {shown}")
    # The note above is not repeated in the list (JSON keeps it in both places).
    lines.extend(f"- {item}" for item in result["assumptions"] if item != shown)
    return "\n".join(lines) + "\n"


@with_groups
def estimate(
    *,
    workload: WorkloadOpt,
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="GPU name, any spelling (e.g. H100, A100-80GB, L4).")],
    gpus: Annotated[int, typer.Option("--gpus", "-n", help="Number of GPUs (above 8: nodes of 8).")] = 1,
    precision: PrecisionOpt = "bf16",
    job: WorkloadFlags,
    gpus_per_node: Annotated[int | None, typer.Option("--gpus-per-node", help="GPUs per node (default 8).")] = None,
    interconnect: Annotated[
        str | None, typer.Option("--interconnect", help="GPU link inside a node: nvswitch, nvlink or pcie.")
    ] = None,
    network_gbps: Annotated[
        float | None, typer.Option("--network-gbps", help="Network per node between nodes, in Gbps.")
    ] = None,
    evidence: EvidenceFlags,
    profile: ProfileOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
) -> None:
    """Estimate throughput, time to solution, memory, MFU and energy for a training workload."""
    from planner import report
    from planner.api import estimate as api_estimate

    report.check_format(fmt)
    if fmt == "csv":
        raise InputError("--format for estimate must be table or json")
    built = job.workload(workload)
    result = api_estimate(
        built,
        gpu,
        gpus,
        precision,
        gpus_per_node=gpus_per_node,
        interconnect=interconnect,
        network_gbps=network_gbps,
        **evidence.options().as_kwargs(),
        **profile_keyword(profile),
    )
    report.emit(render_estimate(result.to_dict(), fmt), output)


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `gpuplan estimate`."""
    app.command("estimate")(estimate)
