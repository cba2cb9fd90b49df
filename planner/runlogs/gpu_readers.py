"""Readers of GPU metrics logs: nvidia-smi CSV loops, DCGM exporter Prometheus text, ``dcgmi dmon`` output.

Each reader takes numbered lines and yields one GpuSample per GPU and moment, so a day of 1-second samples of a
node is read in the memory of one line. Formats:

- nvidia-smi: ``nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,power.draw,clocks.sm
  --format=csv[,nounits] -l 1``; the header names the fields with their units (``utilization.gpu [%]``), cells
  carry them unless ``nounits`` (``97 %``); ``name`` may be queried too (the GPU model). Timestamps read
  ``2024/05/14 10:21:03.123``. Reference: ``nvidia-smi --help-query-gpu``.
- DCGM exporter: the Prometheus text exposition (``curl :9400/metrics``) saved scrape after scrape; a sample's
  optional trailing timestamp is milliseconds since the epoch, else scrapes are ``interval_s`` apart (the
  exporter collects every 30 s by default). Fields in the dcgm-exporter's default and DCP counter lists.
- dcgmi dmon: ``dcgmi dmon -e 203,1002,1004,1005,252,155 -d 1000``; a ``#Entity`` header with the fields' short
  names (GPUTL, SMACT, TENSO, DRAMA, FBUSD, POWER ...), a units line, one ``GPU <id>`` row per GPU and sample, no
  timestamps: samples are ``interval_s`` apart (the ``-d`` delay, 1000 ms by default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from planner.runlogs.lines import MISSING, bad_line, number_in


class GpuSample(NamedTuple):
    """One GPU at one moment; None where the log does not carry the field. Activities are fractions (0-1)."""

    time_s: float  # seconds since the epoch where the log has clock times, else since its start
    gpu: str  # the GPU's index in the node as the tool names it ("0")
    util_pct: float | None
    sm_active: float | None
    tensor_active: float | None
    dram_active: float | None
    memory_used_mib: float | None
    memory_total_mib: float | None
    power_w: float | None
    sm_clock_mhz: float | None


@dataclass
class LogInfo:
    """What a reader learns about the hardware beside the samples: GPU model names as the tools print them."""

    name: str
    models: set[str] = field(default_factory=set)


# ----------------------------------------------------------------------------------------------- nvidia-smi

# nvidia-smi's query field -> GpuSample field. ``utilization.gpu``: the share of the sample period a kernel ran.
SMI_FIELDS = {
    "timestamp": "time_s",
    "index": "gpu",
    "utilization.gpu": "util_pct",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "power.draw": "power_w",
    "power.draw.instant": "power_w",
    "power.draw.average": "power_w",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "name": "model",
}


def _smi_header(line: str) -> list[str]:
    # "utilization.gpu [%]" -> "utilization.gpu"
    return [cell.strip().split(" [")[0].strip().lower() for cell in line.split(",")]


def looks_like_nvidia_smi(head: str) -> bool:
    first = head.lstrip().splitlines()[0].lower() if head.strip() else ""
    return "utilization.gpu" in first or ("index" in first and "memory.used" in first)


def _smi_time(text: str) -> float:
    # "2024/05/14 10:21:03.123": the dashes make it ISO 8601, which fromisoformat reads fast.
    return datetime.fromisoformat(text.strip().replace("/", "-")).timestamp()


def read_nvidia_smi(lines: Iterable[tuple[int, str]], info: LogInfo, interval_s: float = 1.0) -> Iterator[GpuSample]:
    """Samples of an nvidia-smi ``--query-gpu ... --format=csv`` loop (see the module docstring)."""
    header: list[str] | None = None
    header_line = ""
    counts: dict[str, int] = {}
    for number, line in lines:
        if not line.strip():
            continue
        if header is None or line == header_line:
            if header is None:
                header, header_line = _smi_header(line), line
                if "index" not in header and "utilization.gpu" not in header:
                    raise bad_line(info.name, number, "expected nvidia-smi's CSV header (index, utilization.gpu ...)")
            continue
        cells = line.split(",")
        if len(cells) != len(header):
            raise bad_line(info.name, number, f"{len(cells)} values for the header's {len(header)} fields")
        values: dict[str, float | str | None] = {}
        try:
            for name, cell in zip(header, cells, strict=True):
                target = SMI_FIELDS.get(name)
                if target == "time_s":
                    values[target] = _smi_time(cell)
                elif target in ("gpu", "model"):
                    values[target] = cell.strip()
                elif target is not None:
                    values[target] = number_in(cell)
        except ValueError as exc:
            raise bad_line(info.name, number, str(exc)) from None
        gpu = str(values.get("gpu") or "0")
        model = values.pop("model", None)
        if isinstance(model, str) and model.lower() not in MISSING:
            info.models.add(model)
        if "time_s" not in values:
            counts[gpu] = counts.get(gpu, -1) + 1
            values["time_s"] = counts[gpu] * interval_s
        yield _sample(values)


def _sample(values: dict[str, float | str | None]) -> GpuSample:
    return GpuSample(
        time_s=float(values["time_s"] or 0.0),
        gpu=str(values.get("gpu") or "0"),
        **{name: values.get(name) for name in GpuSample._fields[2:]},  # type: ignore[arg-type]
    )


# ----------------------------------------------------------------------------------------------- DCGM exporter

# The exporter's metric -> GpuSample field. GPU_UTIL and FB_* come from NVML (%, MiB); PROF_* are DCP ratios (0-1).
DCGM_METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": "util_pct",
    "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_active",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
    "DCGM_FI_DEV_FB_USED": "memory_used_mib",
    "DCGM_FI_DEV_FB_FREE": "memory_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
}
_PROM_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_PROM_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def looks_like_dcgm_prometheus(head: str) -> bool:
    return "DCGM_FI_" in head and ("{" in head or "# TYPE" in head)


def read_dcgm_prometheus(
    lines: Iterable[tuple[int, str]], info: LogInfo, interval_s: float = 30.0
) -> Iterator[GpuSample]:
    """Samples of saved DCGM exporter scrapes (see the module docstring); metrics it does not use are skipped."""
    scrape: dict[str, dict[str, float | str | None]] = {}
    label_sets: dict[str | None, tuple[str, dict[str, str]]] = {}
    moment: float | None = None
    scrapes = 0
    for number, line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        found = _PROM_SAMPLE.match(line)
        if found is None:
            raise bad_line(info.name, number, "not a Prometheus sample (metric{labels} value [timestamp])")
        metric, labels, value, stamp = found.groups()
        target = DCGM_METRICS.get(metric)
        if target is None:
            continue
        known = label_sets.get(labels)
        if known is None:
            # Each GPU's label set repeats every scrape: parse it once (a bounded cache).
            if len(label_sets) > 4096:
                label_sets.clear()
            tags = dict(_PROM_LABEL.findall(labels or ""))
            known = label_sets[labels] = (tags.get("gpu", tags.get("device", "0").removeprefix("nvidia")), tags)
        gpu, tags = known
        when = int(stamp) / 1000.0 if stamp else None
        # A new scrape: a later timestamp, or (without timestamps) a GPU's metric seen again.
        if scrape and ((when is not None and when != moment) or (when is None and target in scrape.get(gpu, {}))):
            yield from _flush(scrape, moment if moment is not None else scrapes * interval_s)
            scrapes += 1
        moment = when
        try:
            reading = number_in(value)
        except ValueError as exc:
            raise bad_line(info.name, number, str(exc)) from None
        scrape.setdefault(gpu, {"gpu": gpu})[target] = reading
        if "modelName" in tags:
            info.models.add(tags["modelName"])
    if scrape:
        yield from _flush(scrape, moment if moment is not None else scrapes * interval_s)


def _flush(scrape: dict[str, dict[str, float | str | None]], time_s: float) -> Iterator[GpuSample]:
    for gpu in sorted(scrape, key=_index_order):
        values = scrape[gpu]
        free, used = values.pop("memory_free_mib", None), values.get("memory_used_mib")
        if isinstance(free, float) and isinstance(used, float):
            values["memory_total_mib"] = free + used
        values["time_s"] = time_s
        yield _sample(values)
    scrape.clear()


def _index_order(gpu: str) -> tuple[int, str]:
    return (int(gpu), "") if gpu.isdigit() else (1 << 30, gpu)


# ----------------------------------------------------------------------------------------------- dcgmi dmon

# dcgmi dmon's short column names (``dcgmi dmon -l``) -> GpuSample field; its units are the fields' own.
DMON_COLUMNS = {
    "GPUTL": "util_pct",
    "SMACT": "sm_active",
    "TENSO": "tensor_active",
    "DRAMA": "dram_active",
    "FBUSD": "memory_used_mib",
    "FBTTL": "memory_total_mib",
    "POWER": "power_w",
    "SMCLK": "sm_clock_mhz",
}


_POSITION = {name: index for index, name in enumerate(GpuSample._fields)}
_EMPTY = (None,) * (len(GpuSample._fields) - 2)


def looks_like_dcgmi_dmon(head: str) -> bool:
    return bool(re.search(r"^#\s*Entity\b", head, re.MULTILINE))


def read_dcgmi_dmon(lines: Iterable[tuple[int, str]], info: LogInfo, interval_s: float = 1.0) -> Iterator[GpuSample]:
    """Samples of ``dcgmi dmon`` output (see the module docstring); other entities (NVSwitches, MIG) are skipped."""
    columns: list[str] | None = None
    slots: list[tuple[int, int]] = []
    seen: set[str] = set()
    rounds = 0
    for number, line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            columns = stripped.lstrip("#").split()[1:]  # the first word is "Entity"
            # (GpuSample position, word position in a row) of each column read; a row is "GPU <id> values...".
            slots = [(_POSITION[DMON_COLUMNS[name]], 2 + i) for i, name in enumerate(columns) if name in DMON_COLUMNS]
            continue
        words = stripped.split()
        if words[0] != "GPU":
            continue  # the units line ("ID ... W") and other entities
        if columns is None:
            raise bad_line(info.name, number, "a GPU row before dcgmi dmon's '#Entity' header")
        if len(words) != len(columns) + 2:
            raise bad_line(info.name, number, f"{len(words) - 2} values for the header's {len(columns)} fields")
        gpu = words[1]
        if gpu in seen:
            rounds += 1
            seen.clear()
        seen.add(gpu)
        row: list[float | str | None] = [rounds * interval_s, gpu, *_EMPTY]
        try:
            for slot, column in slots:
                row[slot] = number_in(words[column])
        except ValueError as exc:
            raise bad_line(info.name, number, str(exc)) from None
        yield GpuSample(*row)  # type: ignore[arg-type]
