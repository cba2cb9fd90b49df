"""The utilisation report: how much of the paid GPU time a run used, accumulated sample by sample.

Busy share is the mean of the tool's GPU utilisation (the share of each sample period a kernel ran, so a GPU
running one small kernel reads 100%); DCGM's SM and tensor-pipe activity say how much of the GPU those kernels used.
Samples are taken as evenly spaced, as the tools write them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from planner.runlogs.gpu_readers import GpuSample

if TYPE_CHECKING:
    import pandas as pd

# An idle stretch: at least IDLE_MIN_S of samples with GPU utilisation below IDLE_BELOW_PCT.
IDLE_BELOW_PCT = 5.0
IDLE_MIN_S = 60.0
# Points kept per GPU for the chart over time: buckets double in width past this, so memory stays bounded.
SERIES_POINTS = 720
MIB_PER_GIB = 1024.0


class _Mean:
    __slots__ = ("count", "total")

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, value: float | None) -> None:
        if value is not None:
            self.total += value
            self.count += 1

    @property
    def value(self) -> float | None:
        return self.total / self.count if self.count else None


class _GpuState:
    """Running figures of one GPU."""

    def __init__(self) -> None:
        self.samples = 0
        self.first_s = math.inf
        self.last_s = -math.inf
        self.util, self.sm, self.tensor, self.dram, self.power = _Mean(), _Mean(), _Mean(), _Mean(), _Mean()
        self.power_max_w = 0.0
        self.memory_peak_mib = 0.0
        self.memory_total_mib: float | None = None
        self.idle_start_s: float | None = None
        self.idle_stretches = 0
        self.idle_s = 0.0
        self.longest_idle_s = 0.0
        # bucket index -> [util sum, util n, sm sum, sm n, power sum, power n, memory peak]
        self.buckets: dict[int, list[float]] = {}

    def end_idle(self, until_s: float, min_idle_s: float) -> None:
        if self.idle_start_s is None:
            return
        length = until_s - self.idle_start_s
        if length >= min_idle_s:
            self.idle_stretches += 1
            self.idle_s += length
            self.longest_idle_s = max(self.longest_idle_s, length)
        self.idle_start_s = None


@dataclass(frozen=True)
class GpuUsage:
    """One GPU's (or, as ``gpu="node"``, all GPUs') use of the paid time. Shares are fractions (0-1)."""

    gpu: str
    samples: int
    hours: float  # paid GPU-hours the log covers
    busy_share: float | None  # mean GPU utilisation
    sm_active: float | None
    tensor_active: float | None
    dram_active: float | None
    memory_peak_gib: float | None
    memory_total_gib: float | None
    power_mean_w: float | None
    power_max_w: float | None
    power_share_of_tdp: float | None
    idle_stretches: int
    idle_hours: float
    longest_idle_s: float


@dataclass(frozen=True)
class UtilisationReport:
    """What a run's GPU metrics say: per GPU, for the node, and a bounded series over time for charts."""

    gpus: tuple[GpuUsage, ...]
    node: GpuUsage
    gpu_model: str | None  # the canonical GPU id, where the logs name a model the planner knows
    tdp_w: float | None
    interval_s: float
    series: tuple[tuple[float, str, float | None, float | None, float | None, float | None], ...]
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def to_frame(self) -> pd.DataFrame:
        """One row per GPU and one for the node."""
        import pandas as pd

        return pd.DataFrame([asdict(usage) for usage in (*self.gpus, self.node)])

    def series_frame(self) -> pd.DataFrame:
        """The chart series: time since the start (s), GPU, utilisation (%), SM active, power (W), memory (GiB)."""
        import pandas as pd

        columns = ["time_s", "gpu", "util_pct", "sm_active", "power_w", "memory_used_gib"]
        return pd.DataFrame(list(self.series), columns=columns)

    def summary(self) -> str:
        """The report in a few sentences, for the CLI."""
        node = self.node
        what = f"{self.gpu_count}x {self.gpu_model or 'GPU'}"
        lines = [f"{what}, {node.hours / max(self.gpu_count, 1):.2f} h: {node.hours:.2f} paid GPU-hours"]
        parts = []
        if node.busy_share is not None:
            parts.append(f"busy {node.busy_share:.0%} of the time (GPU utilisation)")
        if node.sm_active is not None:
            parts.append(f"SMs active {node.sm_active:.0%}")
        if node.tensor_active is not None:
            parts.append(f"tensor pipes active {node.tensor_active:.0%}")
        if parts:
            lines.append("; ".join(parts))
        if node.memory_peak_gib is not None:
            total = (
                f" of {node.memory_total_gib:.0f} GiB, {node.memory_total_gib - node.memory_peak_gib:.1f} GiB headroom"
                if node.memory_total_gib
                else ""
            )
            lines.append(f"peak memory {node.memory_peak_gib:.1f} GiB{total} (highest GPU)")
        if node.power_mean_w is not None:
            tdp = f" of the {self.tdp_w:.0f} W TDP ({node.power_share_of_tdp:.0%})" if node.power_share_of_tdp else ""
            lines.append(f"power {node.power_mean_w:.0f} W mean per GPU{tdp}, {node.power_max_w:.0f} W peak")
        lines.append(
            f"idle (>= {IDLE_MIN_S:.0f} s below {IDLE_BELOW_PCT:.0f}% utilisation): {node.idle_stretches} stretches, "
            f"{node.idle_hours:.2f} GPU-hours ({node.idle_hours / node.hours if node.hours else 0:.0%})"
        )
        return "\n".join([*lines, *self.notes]) + "\n"


class UtilisationAccumulator:
    """Adds GpuSamples one at a time and reports; memory grows with GPUs and chart points, not with samples."""

    def __init__(self, min_idle_s: float = IDLE_MIN_S, idle_below_pct: float = IDLE_BELOW_PCT) -> None:
        self.min_idle_s = min_idle_s
        self.idle_below_pct = idle_below_pct
        self.states: dict[str, _GpuState] = {}
        self.start_s: float | None = None
        self.bucket_s = 1.0

    def add_all(self, samples: Iterable[GpuSample]) -> None:
        for sample in samples:
            self.add(sample)

    def add(self, sample: GpuSample) -> None:
        state = self.states.get(sample.gpu)
        if state is None:
            state = self.states[sample.gpu] = _GpuState()
        if self.start_s is None:
            self.start_s = sample.time_s
        now = sample.time_s
        state.samples += 1
        state.first_s = min(state.first_s, now)
        state.last_s = max(state.last_s, now)
        state.util.add(sample.util_pct)
        state.sm.add(sample.sm_active)
        state.tensor.add(sample.tensor_active)
        state.dram.add(sample.dram_active)
        state.power.add(sample.power_w)
        if sample.power_w is not None:
            state.power_max_w = max(state.power_max_w, sample.power_w)
        if sample.memory_used_mib is not None:
            state.memory_peak_mib = max(state.memory_peak_mib, sample.memory_used_mib)
        if sample.memory_total_mib:
            state.memory_total_mib = sample.memory_total_mib
        if sample.util_pct is not None:
            if sample.util_pct < self.idle_below_pct:
                if state.idle_start_s is None:
                    state.idle_start_s = now
            else:
                state.end_idle(now, self.min_idle_s)
        self._bucket(state, sample)

    def _bucket(self, state: _GpuState, sample: GpuSample) -> None:
        index = int((sample.time_s - (self.start_s or 0.0)) // self.bucket_s)
        cell = state.buckets.get(index)
        if cell is None:
            cell = state.buckets[index] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
            if len(state.buckets) > SERIES_POINTS:
                self._widen()
                cell = state.buckets.setdefault(index // 2, [0.0] * 7)
        for slot, value in ((0, sample.util_pct), (2, sample.sm_active), (4, sample.power_w)):
            if value is not None:
                cell[slot] += value
                cell[slot + 1] += 1
        if sample.memory_used_mib is not None:
            cell[6] = max(cell[6], sample.memory_used_mib)

    def _widen(self) -> None:
        """Double every GPU's bucket width, merging neighbours."""
        self.bucket_s *= 2
        for state in self.states.values():
            merged: dict[int, list[float]] = {}
            for index, cell in state.buckets.items():
                into = merged.setdefault(index // 2, [0.0] * 7)
                for slot in range(6):
                    into[slot] += cell[slot]
                into[6] = max(into[6], cell[6])
            state.buckets = merged

    def interval_s(self) -> float:
        """The typical time between one GPU's samples."""
        spans = [(s.last_s - s.first_s) / (s.samples - 1) for s in self.states.values() if s.samples > 1]
        return sorted(spans)[len(spans) // 2] if spans else 1.0

    def report(
        self, gpu_model: str | None = None, tdp_w: float | None = None, sources: Iterable[str] = ()
    ) -> UtilisationReport:
        if not self.states:
            from planner.errors import InputError

            raise InputError("holds no GPU samples", field="log")
        interval = self.interval_s()
        usages = []
        for gpu in sorted(self.states, key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0, name)):
            state = self.states[gpu]
            # Each sample stands for one interval: a GPU's paid time is its samples' span plus the last one's.
            state.end_idle(state.last_s + interval, self.min_idle_s)
            hours = (state.last_s - state.first_s + interval) / 3600.0
            power = state.power.value
            usages.append(
                GpuUsage(
                    gpu=gpu,
                    samples=state.samples,
                    hours=hours,
                    busy_share=None if state.util.value is None else state.util.value / 100.0,
                    sm_active=state.sm.value,
                    tensor_active=state.tensor.value,
                    dram_active=state.dram.value,
                    memory_peak_gib=state.memory_peak_mib / MIB_PER_GIB if state.memory_peak_mib else None,
                    memory_total_gib=None if state.memory_total_mib is None else state.memory_total_mib / MIB_PER_GIB,
                    power_mean_w=power,
                    power_max_w=state.power_max_w if state.power.count else None,
                    power_share_of_tdp=power / tdp_w if power is not None and tdp_w else None,
                    idle_stretches=state.idle_stretches,
                    idle_hours=state.idle_s / 3600.0,
                    longest_idle_s=state.longest_idle_s,
                )
            )
        return UtilisationReport(
            gpus=tuple(usages),
            node=_node(usages, tdp_w),
            gpu_model=gpu_model,
            tdp_w=tdp_w,
            interval_s=interval,
            series=self._series(),
            sources=tuple(sources),
        )

    def _series(self) -> tuple[tuple[float, str, float | None, float | None, float | None, float | None], ...]:
        rows = []
        for gpu, state in self.states.items():
            for index in sorted(state.buckets):
                cell = state.buckets[index]
                rows.append(
                    (
                        index * self.bucket_s,
                        gpu,
                        cell[0] / cell[1] if cell[1] else None,
                        cell[2] / cell[3] if cell[3] else None,
                        cell[4] / cell[5] if cell[5] else None,
                        cell[6] / MIB_PER_GIB if cell[6] else None,
                    )
                )
        return tuple(rows)


def _weighted(usages: list[GpuUsage], name: str) -> float | None:
    """The GPU-hour weighted mean of one figure over the GPUs that have it."""
    pairs = [(getattr(u, name), u.hours) for u in usages if getattr(u, name) is not None]
    hours = sum(weight for _, weight in pairs)
    return sum(value * weight for value, weight in pairs) / hours if pairs and hours else None


def _most(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return max(present) if present else None


def _node(usages: list[GpuUsage], tdp_w: float | None) -> GpuUsage:
    power = _weighted(usages, "power_mean_w")
    return GpuUsage(
        gpu="node",
        samples=sum(u.samples for u in usages),
        hours=sum(u.hours for u in usages),
        busy_share=_weighted(usages, "busy_share"),
        sm_active=_weighted(usages, "sm_active"),
        tensor_active=_weighted(usages, "tensor_active"),
        dram_active=_weighted(usages, "dram_active"),
        memory_peak_gib=_most(u.memory_peak_gib for u in usages),
        memory_total_gib=_most(u.memory_total_gib for u in usages),
        power_mean_w=power,
        power_max_w=_most(u.power_max_w for u in usages),
        power_share_of_tdp=power / tdp_w if power is not None and tdp_w else None,
        idle_stretches=sum(u.idle_stretches for u in usages),
        idle_hours=sum(u.idle_hours for u in usages),
        longest_idle_s=max(u.longest_idle_s for u in usages),
    )
