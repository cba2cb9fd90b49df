"""Which log is which: the formats, content sniffing with an explicit override, and one entry point per kind."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from planner.errors import InputError
from planner.runlogs import gpu_readers, train_readers
from planner.runlogs.gpu_readers import GpuSample, LogInfo
from planner.runlogs.lines import FIELD, LogSource, numbered_lines
from planner.runlogs.train_readers import TrainingLog

GPU_FORMATS: dict[str, Callable[..., Iterator[GpuSample]]] = {
    "nvidia-smi": gpu_readers.read_nvidia_smi,
    "dcgm-prometheus": gpu_readers.read_dcgm_prometheus,
    "dcgmi-dmon": gpu_readers.read_dcgmi_dmon,
}
TRAINING_FORMATS: dict[str, Callable[[LogSource], TrainingLog]] = {
    "hf-trainer-state": train_readers.read_trainer_state,
    "hf-log": train_readers.read_hf_log,
    "lightning-csv": train_readers.read_lightning_csv,
    "megatron": train_readers.read_megatron,
    "wandb-csv": train_readers.read_wandb_csv,
}
FORMATS = (*GPU_FORMATS, *TRAINING_FORMATS)
# Sampling interval assumed where a log has no clock times: dcgmi dmon's -d default (1000 ms), dcgm-exporter's
# collection interval default (30000 ms), nvidia-smi's -l 1 as such loops are usually run.
DEFAULT_INTERVAL_S = {"nvidia-smi": 1.0, "dcgm-prometheus": 30.0, "dcgmi-dmon": 1.0}


def _first_line(head: str) -> str:
    return next((line for line in head.splitlines() if line.strip()), "").strip()


def _csv_header(head: str) -> list[str]:
    return [cell.strip().strip('"').lower() for cell in _first_line(head).split(",")]


# Each format's fingerprint, tried in this order (the first that matches wins).
_SNIFFERS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("hf-trainer-state", lambda head: head.lstrip().startswith("{") and '"log_history"' in head),
    ("dcgm-prometheus", gpu_readers.looks_like_dcgm_prometheus),
    ("dcgmi-dmon", gpu_readers.looks_like_dcgmi_dmon),
    ("nvidia-smi", gpu_readers.looks_like_nvidia_smi),
    ("megatron", lambda head: "elapsed time per iteration (ms)" in head),
    (
        "wandb-csv",
        lambda head: (
            bool({"_step", "_runtime", "_timestamp"} & set(_csv_header(head)))
            or bool(re.match(r'"?step"?,.+ - ', _first_line(head), re.IGNORECASE))
        ),
    ),
    ("lightning-csv", lambda head: {"step", "epoch"} <= set(_csv_header(head))),
    ("hf-log", lambda head: "{'loss'" in head or "'train_runtime'" in head or "train_samples_per_second" in head),
)


def detect_format(source: LogSource) -> str:
    """The log's format from its first 64 KiB; an InputError naming the formats known when none matches."""
    head = source.head()
    for name, matches in _SNIFFERS:
        if matches(head):
            return name
    raise InputError(
        f"{source.name}: not a log format known here ({', '.join(FORMATS)}); name its format explicitly", field=FIELD
    )


def check_format(fmt: str | None, source: LogSource) -> str:
    """``fmt`` checked against FORMATS, or the sniffed one when None."""
    if fmt is None:
        return detect_format(source)
    if fmt not in FORMATS:
        raise InputError(f"must be one of {', '.join(FORMATS)}, got {fmt!r}", field="log_format")
    return fmt


def is_gpu_format(fmt: str) -> bool:
    return fmt in GPU_FORMATS


def gpu_samples(
    source: LogSource, fmt: str, info: LogInfo | None = None, interval_s: float | None = None
) -> Iterator[GpuSample]:
    """The GPU samples of a metrics log, one at a time; ``info`` collects the GPU models it names."""
    reader = GPU_FORMATS[fmt]
    interval = interval_s if interval_s is not None else DEFAULT_INTERVAL_S[fmt]
    return reader(numbered_lines(source), info or LogInfo(source.name), interval)


def training_log(source: LogSource, fmt: str) -> TrainingLog:
    """The steady throughput of a training log."""
    return TRAINING_FORMATS[fmt](source)
