"""Spot interruptions priced from published traces: hazard bands, correlated reclaims, Young/Daly checkpointing.

A spot job on N nodes is stopped at a rate of ``node hazard x N**exponent`` per hour (reclaims arrive together, so
the job hazard grows slower than N). It writes a checkpoint every Young/Daly interval, and each stop costs the
work since the last checkpoint, a restart (provisioning, framework start-up, reading the checkpoint back) and an
unbilled wait for capacity. The expected exposed time is Daly's (2006) closed form for exponential failures.

The numbers live in data/spot_hazard.csv (bands), data/spot_bands.csv (which band a provider's label selects)
and data/spot_model.csv (exponent, capacity waits, checkpoint size and bandwidth, warning bounds), each sourced.
Every function here is vectorised over numpy arrays.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner._data import data_dir

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

SCENARIOS = ("low", "expected", "high")
# A spot run whose expected held time exceeds this many times its work is taken never to finish (the closed form
# stays finite far beyond any useful answer, e.g. 1e170 hours).
RUNAWAY_FACTOR = 100.0


@dataclass(frozen=True)
class HazardBand:
    """Reclaims per node-hour of one band: (low, expected, high) and where the figures come from."""

    name: str
    low: float
    expected: float
    high: float
    source: str
    as_of: str

    def rates(self) -> tuple[float, float, float]:
        return (self.low, self.expected, self.high)


@dataclass(frozen=True)
class SpotModel:
    """The constants of the spot model (data/spot_model.csv), with their sources."""

    correlation_exponent: float
    capacity_wait_hours: tuple[float, float, float]  # low, expected, high scenario
    checkpoint_bytes_per_param: float
    # A LoRA run checkpoints its adapters only; a restart reloads the frozen base model from its published weights.
    frozen_weight_bytes_per_param: float
    checkpoint_storage_gbps: float
    spot_warning_hours: float
    risky_ratio: float
    sources: dict[str, str]


@functools.cache
def hazard_bands() -> dict[str, HazardBand]:
    """The hazard bands by name (low, mid, high)."""
    with open(data_dir() / "spot_hazard.csv", encoding="utf-8", newline="") as handle:
        return {
            row["band"]: HazardBand(
                name=row["band"],
                low=float(row["hazard_low_per_node_hour"]),
                expected=float(row["hazard_per_node_hour"]),
                high=float(row["hazard_high_per_node_hour"]),
                source=row["source"],
                as_of=row["as_of"],
            )
            for row in csv.DictReader(handle)
        }


@functools.cache
def _band_rows() -> tuple[tuple[str, str, str], ...]:
    with open(data_dir() / "spot_bands.csv", encoding="utf-8", newline="") as handle:
        return tuple((row["provider"], row["label"], row["band"]) for row in csv.DictReader(handle))


def spot_labels() -> tuple[str, ...]:
    """Every interruption label a provider publishes (Spot Advisor buckets, Azure eviction bands), in table order."""
    seen: dict[str, None] = {}
    for provider, label, _ in _band_rows():
        if provider != "*" and label:
            seen.setdefault(label, None)
    return tuple(seen)


def default_band() -> str:
    """The band of offerings without a published label."""
    return next(band for provider, _, band in _band_rows() if provider == "*")


def band_for(provider: str, label: str | None) -> str:
    """The band a provider's interruption label selects; the default band for no label or an unknown one."""
    for row_provider, row_label, band in _band_rows():
        if row_provider == provider and row_label == label:
            return band
    return default_band()


@functools.cache
def spot_model() -> SpotModel:
    with open(data_dir() / "spot_model.csv", encoding="utf-8", newline="") as handle:
        rows = {row["name"]: row for row in csv.DictReader(handle)}

    def value(name: str) -> float:
        return float(rows[name]["value"])

    return SpotModel(
        correlation_exponent=value("correlation_exponent"),
        capacity_wait_hours=(
            value("capacity_wait_low_hours"),
            value("capacity_wait_hours"),
            value("capacity_wait_high_hours"),
        ),
        checkpoint_bytes_per_param=value("checkpoint_bytes_per_param"),
        frozen_weight_bytes_per_param=value("frozen_weight_bytes_per_param"),
        checkpoint_storage_gbps=value("checkpoint_storage_gbps"),
        spot_warning_hours=value("spot_warning_hours"),
        risky_ratio=value("risky_ratio"),
        sources={name: row["source"] for name, row in rows.items()},
    )


def job_hazard(node_hazard: FloatArray, nodes: FloatArray, exponent: float) -> FloatArray:
    """Stops per hour of a job on ``nodes`` nodes: node hazard x nodes**exponent (1 would be independent nodes)."""
    import numpy as np

    result: FloatArray = node_hazard * np.power(nodes, exponent)
    return result


def checkpoint_hours(params: float, nodes: FloatArray, storage_gbps: float, bytes_per_param: float) -> FloatArray:
    """Hours to write one checkpoint: the resumable state (bytes per parameter) written by every node in parallel."""
    import numpy as np

    bits = params * bytes_per_param * 8.0
    result: FloatArray = bits / (storage_gbps * 1e9 * np.asarray(nodes, dtype=float)) / 3600.0
    return result


def reload_hours(params: float, storage_gbps: float, bytes_per_param: float) -> float:
    """Hours for each node to read ``params`` weights it holds whole (a frozen base model every data-parallel node
    loads in full), at ``storage_gbps`` per node."""
    return params * bytes_per_param * 8.0 / (storage_gbps * 1e9) / 3600.0


def young_daly_interval(checkpoint: FloatArray, hazard: FloatArray) -> FloatArray:
    """Hours of work between checkpoints that minimise the expected run time.

    Daly (2006), first order: sqrt(2 C M) - C for C < M / 2 with M = 1 / hazard the mean time between stops,
    else M; Young's (1974) sqrt(2 C M) without the correction. Infinite (never checkpoint) without interruptions.
    """
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        mtbf = np.where(hazard > 0, 1.0 / hazard, np.inf)
        interval = np.where(checkpoint < mtbf / 2.0, np.sqrt(2.0 * checkpoint * mtbf) - checkpoint, mtbf)
    result: FloatArray = np.where(hazard > 0, np.maximum(interval, 1e-6), np.inf)
    return result


def p_no_interruption(hazard: FloatArray, exposed_hours: FloatArray) -> FloatArray:
    """Probability that a job exposed for ``exposed_hours`` is never stopped: exp(-H t)."""
    import numpy as np

    result: FloatArray = np.exp(-hazard * exposed_hours)
    return result


@dataclass(frozen=True)
class SpotRun:
    """Expected figures of runs on spot capacity (arrays of one shape)."""

    exposed_hours: FloatArray  # time the nodes are held: work, checkpoint writes, rework and restarts
    checkpoint_write_hours: FloatArray  # writing checkpoints (no interruption counted)
    wait_hours: FloatArray  # waiting for capacity after stops, nodes released (unbilled)
    interruptions: FloatArray
    p_no_interruption: FloatArray


def run_on_spot(
    work_hours: FloatArray,
    hazard: FloatArray,
    interval: FloatArray,
    checkpoint: FloatArray,
    restart_hours: FloatArray,
    wait_hours: float,
) -> SpotRun:
    """Expected time of ``work_hours`` of work under ``hazard`` stops per hour, checkpointing every ``interval``.

    The work is cut into segments of ``interval`` hours, each followed by a checkpoint of ``checkpoint`` hours
    (one segment, no checkpoint, when the interval covers the work). A segment that is stopped is redone after
    ``restart_hours``; stops also hit restarts. Daly (2006): each segment of length s takes
    exp(H R) (exp(H s) - 1) / H hours on average, and the stops number H times the exposed time (Wald).
    Infinite where that exceeds RUNAWAY_FACTOR x the work: such a run would never finish.
    """
    import numpy as np

    whole = interval >= work_hours
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        segments = np.where(whole, 1.0, work_hours / interval)
        segment = np.where(whole, work_hours, interval + checkpoint)
        writes = np.where(whole, 0.0, segments * checkpoint)
        per_segment = np.where(
            hazard > 0, np.exp(hazard * restart_hours) * np.expm1(hazard * segment) / hazard, segment
        )
        exposed = segments * per_segment
        stops = np.where(hazard > 0, hazard * exposed, 0.0)
    exposed = np.where(np.isfinite(exposed) & (exposed <= RUNAWAY_FACTOR * (work_hours + writes)), exposed, np.inf)
    return SpotRun(
        exposed_hours=exposed,
        checkpoint_write_hours=writes,
        wait_hours=stops * wait_hours,
        interruptions=stops,
        p_no_interruption=p_no_interruption(hazard, work_hours + writes),
    )
