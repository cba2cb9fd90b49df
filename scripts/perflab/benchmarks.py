"""The published measurements of ``data/benchmarks.csv`` and the model's prediction for each on its published
layout; the sourced CSV readers the checks share."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.priors import FAMILIES
from planner._data import data_dir
from planner.hardware import GpuSpec, gpu_table
from planner.perf.params import PerfParams, default_params
from planner.perf.plan import Plan
from planner.perf.step import throughput_with_plan
from planner.perf.workloads import WORKLOADS, Workload

# benchmarks.csv columns, in order.
COLUMNS = (
    "source",
    "source_date",
    "source_row",
    "workload",
    "family",
    "params",
    "layers",
    "hidden",
    "heads",
    "vocab",
    "seq_len",
    "mode",
    "stack",
    "precision",
    "gpu",
    "gpus",
    "nodes",
    "gpus_per_node",
    "interconnect",
    "network_gbps",
    "tensor_parallel",
    "pipeline_parallel",
    "data_parallel",
    "context_parallel",
    "virtual_pipeline",
    "sharded",
    "recompute",
    "micro_batch",
    "global_batch",
    "throughput_total",
    "throughput_per_gpu",
    "throughput_unit",
    "mfu_reported",
    "use",
    "excluded_reason",
    "notes",
)


@dataclass(frozen=True)
class Benchmark:
    """One published measurement, normalised: the workload, the layout it ran with and its throughput."""

    source: str
    source_date: str
    source_row: int
    workload: Workload | None  # None for a measured job the model does not cover (kept for the record)
    family: str
    precision: str
    gpu: GpuSpec
    gpus: int
    gpus_per_node: int
    interconnect: str
    network_gbps: float | None
    plan: Plan
    throughput_total: float
    throughput_unit: str
    use: bool
    excluded_reason: str

    @property
    def source_name(self) -> str:
        """The source repository without the file path (for leave-one-source-out)."""
        return self.source.split(":")[0]

    @property
    def per_gpu(self) -> float:
        return self.throughput_total / self.gpus


def _int(value: str, default: int = 0) -> int:
    return int(float(value)) if value.strip() else default


def shape(row: dict[str, str]) -> dict[str, Any]:
    """The model-shape fields of a CSV row (benchmarks or external checks), as Workload keyword arguments."""
    shape: dict[str, Any] = {key: _int(row[key]) for key in ("layers", "hidden", "heads", "vocab", "seq_len")}
    shape["params"] = float(row["params"])
    return shape


def load_benchmarks(path: Path | None = None, *, used_only: bool = True) -> list[Benchmark]:
    """Rows of ``data/benchmarks.csv`` (only those used for calibration unless ``used_only`` is False)."""
    table = gpu_table()
    rows: list[Benchmark] = []
    with (path or data_dir() / "benchmarks.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            use = row["use"] == "true"
            if used_only and not use:
                continue
            family = row["family"]
            unit = row["throughput_unit"]
            wl = (
                None
                if family not in FAMILIES
                else Workload(
                    name=row["workload"],
                    kind="cnn" if family == "cnn" else family,
                    **shape(row),
                    work_unit=unit.split("/")[0],
                    mode=row["mode"],
                    stack=row["stack"] or "typical",
                    flops_per_sample=model_flops_per_image(row["workload"]) if family == "cnn" else None,
                    activation_bytes_per_sample=None,
                )
            )
            plan = Plan(
                tp=_int(row["tensor_parallel"], 1),
                pp=_int(row["pipeline_parallel"], 1),
                dp=_int(row["data_parallel"], 1),
                sharded=row["sharded"] == "true",
                recompute=row["recompute"] == "true",
                micro_batch=_int(row["micro_batch"], 1),
                global_batch=_int(row["global_batch"], 1),
                cp=_int(row["context_parallel"], 1),
                vp=_int(row["virtual_pipeline"], 1),
            )
            rows.append(
                Benchmark(
                    source=row["source"],
                    source_date=row["source_date"],
                    source_row=_int(row["source_row"]),
                    workload=wl,
                    family=family,
                    precision=row["precision"],
                    gpu=table[row["gpu"]],
                    gpus=_int(row["gpus"]),
                    gpus_per_node=_int(row["gpus_per_node"], 8),
                    interconnect=row["interconnect"],
                    network_gbps=float(row["network_gbps"]) if row["network_gbps"] else None,
                    plan=plan,
                    throughput_total=float(row["throughput_total"]),
                    throughput_unit=unit,
                    use=use,
                    excluded_reason=row["excluded_reason"],
                )
            )
    return rows


def model_flops_per_image(workload: str) -> float:
    """Training FLOPs per image of a CNN preset."""
    preset = WORKLOADS.get(workload)
    if preset is None or preset.flops_per_sample is None:
        raise ValueError(f"no FLOPs figure for CNN workload {workload!r}")
    return preset.flops_per_sample


def predict(row: Benchmark, perf_params: PerfParams | None = None) -> float:
    """The model's total throughput for the row's workload, GPU, precision and layout (the bundled fit unless
    ``perf_params`` are given)."""
    if row.workload is None:
        raise ValueError(f"row {row.source_row} of {row.source} has no modelled workload")
    return throughput_with_plan(
        row.workload,
        row.gpu,
        row.precision,
        row.plan,
        interconnect=row.interconnect,
        gpus_per_node=row.gpus_per_node,
        network_gbps=row.network_gbps,
        perf_params=perf_params or default_params(),
    )


def predict_with(params: dict[str, Any], rows: Sequence[Benchmark]) -> list[float]:
    """Predictions for ``rows`` under ``params``, a parameter document (the fit's working copy)."""
    fitted = PerfParams.from_dict(params)
    return [predict(row, fitted) for row in rows]


def read_rows(path: Path) -> list[dict[str, str]]:
    """Every row of a sourced data CSV, as text."""
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def miss_with(
    params: dict[str, Any],
    section: str,
    key: str,
    value: float,
    predicted_over_measured: Callable[[PerfParams], float],
) -> float:
    """Log of ``predicted_over_measured`` under ``params`` with ``params[section][key]`` set to ``value`` (in place):
    what the solves of the constants no fitted row informs bisect on."""
    params[section][key] = value
    return math.log(predicted_over_measured(PerfParams.from_dict(params)))
