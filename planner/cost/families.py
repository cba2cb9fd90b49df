"""Offering families (one instance type's hardware, sold in many regions and zones) and the model's answer for each.

The performance model runs once per distinct configuration (GPU, GPUs per node, nodes, interconnect, network);
every region and zone of a family shares that answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.catalog.owned import OWNED
from planner.errors import InputError
from planner.perf.options import EVIDENCE_FIELDS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    from planner.cost.request import Estimator, RankRequest
    from planner.perf.workloads import Workload

    FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Families:
    """The offering families of a catalog slice: each row's family code and each family's hardware."""

    code: npt.NDArray[np.int64]
    provider: npt.NDArray[np.object_]
    instance_type: npt.NDArray[np.object_]
    gpu: npt.NDArray[np.object_]
    gpu_count: FloatArray
    interconnect: npt.NDArray[np.object_]
    network_gbps: FloatArray
    # An owned server's own PUE and wall power at training load (planner.cost.owned); NaN: the provider's PUE and
    # the GPUs' TDP x the node factor.
    pue: FloatArray | None = None
    node_power_kw: FloatArray | None = None

    def __len__(self) -> int:
        return len(self.provider)


@dataclass(frozen=True)
class ModelGrid:
    """The model's answer per (family, nodes - 1): hours of training (NaN where there is none) and why not."""

    hours: FloatArray
    hours_low: FloatArray
    hours_high: FloatArray
    energy_kwh: FloatArray
    reasons: dict[tuple[int, int], str] = field(default_factory=dict)
    # Families whose GPU has no calibration data: their times carry a wider band, and the options say so.
    uncalibrated: npt.NDArray[np.bool_] | None = None
    # Per family, where its GPU is uncalibrated: the model's median error on held-out runs of it (NaN: none).
    held_out_pct: FloatArray | None = None
    # Per family, the fewest instances that would hold the job where it does not fit (NaN: fits, or no count does).
    min_nodes: FloatArray | None = None
    # Per (family, nodes - 1), where the layout takes short steps across many nodes: measured over predicted time of
    # the held-out MLPerf runs in that regime (NaN: outside it).
    slower_at_scale: FloatArray | None = None


@dataclass
class ConfigEstimate:
    """The performance model's answer for one configuration, or why it has none."""

    hours: float = math.nan
    hours_low: float = math.nan
    hours_high: float = math.nan
    energy_kwh: float = math.nan
    reason: str | None = None
    calibrated: bool = True
    held_out_pct: float = math.nan
    # Short steps across many nodes (evidence.short_steps_across_nodes): held-out MLPerf runs took this many times
    # the model's time (NaN: outside that regime).
    slower_at_scale: float = math.nan
    # The model's own InputError, when it refused the input rather than the configuration.
    error: InputError | None = None
    # Where the job does not fit in memory: the fewest GPUs that would hold it (None: no count does).
    min_gpus: int | None = None


def estimate_config(
    estimator: Estimator, workload: Workload, fams: Families, family: int, nodes: int, request: RankRequest
) -> ConfigEstimate:
    """The model's answer for ``nodes`` instances of family ``family``, or why it has none."""
    gpu, gpus_per_node = str(fams.gpu[family]), float(fams.gpu_count[family])
    network_gbps = float(fams.network_gbps[family])
    total = gpus_per_node * nodes
    if not float(gpus_per_node).is_integer() or total < 1:
        return ConfigEstimate(reason=f"a fraction of a GPU ({gpus_per_node:g} per instance) is not modelled")
    if nodes > 1 and fams.provider[family] == OWNED:
        return ConfigEstimate(reason="an owned server is ranked as one server, never joined to others")
    if nodes > 1 and not (network_gbps > 0):
        return ConfigEstimate(reason="no network bandwidth known for joining instances")
    try:
        result = estimator(
            workload,
            gpu,
            int(total),
            request.precision,
            # The catalog stores GPU counts as floats (fractional GPUs exist); the model wants whole numbers.
            gpus_per_node=int(gpus_per_node),
            interconnect=str(fams.interconnect[family]),
            network_gbps=None if network_gbps != network_gbps else network_gbps,
            **request.model.as_kwargs(),
        )
    except InputError as exc:
        if exc.field in EVIDENCE_FIELDS:
            raise  # about the user's own measurement, not this configuration: the same everywhere
        return ConfigEstimate(reason=str(exc), error=exc)
    if not result.fits_in_memory:
        why, needed = result.why_not_fits, result.min_gpus_to_fit
        text = why or "the model does not fit in GPU memory"
        if needed and not why:
            text += f" (needs at least {needed} GPUs)"
        return ConfigEstimate(reason=text, min_gpus=needed)
    hours = float(result.time_to_solution_hours or math.nan)
    if not (hours > 0 and math.isfinite(hours)):
        return ConfigEstimate(reason="the performance model gave no time to solution")
    throughput, low_tp, high_tp = result.throughput, result.throughput_low, result.throughput_high
    # Time scales inversely with throughput: the optimistic throughput gives the short (cheap) end.
    hours_low = hours * throughput / high_tp if throughput and high_tp else hours
    hours_high = hours * throughput / low_tp if throughput and low_tp else hours
    energy = result.energy_kwh
    return ConfigEstimate(
        calibrated=bool(result.gpu_calibrated),
        held_out_pct=math.nan if result.held_out_error_pct is None else float(result.held_out_error_pct),
        slower_at_scale=math.nan if result.slower_at_scale is None else float(result.slower_at_scale),
        hours=hours,
        hours_low=min(hours_low, hours),
        hours_high=max(hours_high, hours),
        energy_kwh=float(energy) if energy is not None else math.nan,
    )


def family_codes(
    offers: pd.DataFrame,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], dict[str, npt.NDArray[np.object_]]]:
    """One code per offering family (provider, instance type and its hardware), shared by its regions and zones.

    Returns the code of each row, the first row of each family, and each family's provider, instance type and GPU
    (read from the codes: taking text from the catalog's Arrow columns costs more). Fast path: an instance type of
    one provider and GPU has one GPU count, interconnect and network everywhere; rows that disagree on the numbers
    fall back to grouping by every hardware column.
    """
    import numpy as np
    import pandas as pd

    codes = np.zeros(len(offers), dtype=np.int64)
    read: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.object_]]] = {}
    for column in ("instance_type", "gpu", "provider"):
        column_codes, uniques = pd.factorize(offers[column])
        codes = codes * (len(uniques) + 1) + column_codes
        # -1 (missing) picks the appended None.
        read[column] = (column_codes, np.array([*np.asarray(uniques, dtype=object).tolist(), None], dtype=object))
    family: npt.NDArray[np.int64] = pd.factorize(codes)[0].astype(np.int64)
    first = np.zeros(int(family.max()) + 1, dtype=np.int64)
    first[family[::-1]] = np.arange(len(family))[::-1]
    for column in ("gpu_count", "network_gbps"):
        values = offers[column].to_numpy(dtype=float, na_value=np.nan)
        expected = values[first][family]
        if not np.array_equal(values, expected, equal_nan=True):
            columns = ["provider", "instance_type", "gpu", "gpu_count", "interconnect", "network_gbps"]
            family = np.asarray(offers.groupby(columns, sort=False, dropna=False).ngroup(), dtype=np.int64)
            first = np.zeros(int(family.max()) + 1, dtype=np.int64)
            first[family[::-1]] = np.arange(len(family))[::-1]
            break
    return family, first, {column: names[row_codes[first]] for column, (row_codes, names) in read.items()}


def families(offers: pd.DataFrame) -> Families:
    """Group ``offers`` into families and read each family's hardware from its first row."""
    import numpy as np

    code, first, names = family_codes(offers)
    return Families(
        code=code,
        provider=names["provider"],
        instance_type=names["instance_type"],
        gpu=names["gpu"],
        gpu_count=offers["gpu_count"].to_numpy(dtype=float, na_value=np.nan)[first],
        interconnect=offers["interconnect"].take(first).to_numpy(dtype=object),
        network_gbps=offers["network_gbps"].to_numpy(dtype=float, na_value=np.nan)[first],
        pue=_optional_column(offers, "pue", first),
        node_power_kw=_optional_column(offers, "node_power_kw", first),
    )


def _optional_column(offers: pd.DataFrame, column: str, first: npt.NDArray[np.int64]) -> FloatArray | None:
    """A number column only some catalogs carry (owned servers'), at each family's first row; None without it."""
    import numpy as np

    if column not in offers.columns:
        return None
    values: FloatArray = offers[column].to_numpy(dtype=float, na_value=np.nan)[first]
    return values


def model_grid(fams: Families, estimator: Estimator, workload: Workload, request: RankRequest) -> ModelGrid:
    """Ask the model about every family at 1..``request.max_nodes`` instances, once per distinct configuration.

    Raises the model's InputError when every configuration fails with the same complaint about the input.
    """
    import numpy as np

    max_nodes = request.max_nodes
    shape = (len(fams), max_nodes)
    hours, low, high, energy, slower = (np.full(shape, np.nan) for _ in range(5))
    reasons: dict[tuple[int, int], str] = {}
    uncalibrated = np.zeros(len(fams), dtype=bool)
    held_out = np.full(len(fams), np.nan)
    min_nodes = np.full(len(fams), np.nan)
    cache: dict[tuple[Any, ...], ConfigEstimate] = {}
    for f in range(len(fams)):
        network = float(fams.network_gbps[f])
        for n in range(1, max_nodes + 1):
            # One instance never uses the network between instances: its answer is the same whatever the NIC.
            key = (
                fams.gpu[f],
                fams.gpu_count[f],
                n,
                fams.interconnect[f],
                None if n == 1 or math.isnan(network) else network,
            )
            found = cache.get(key)
            if found is None:
                found = estimate_config(estimator, workload, fams, f, n, request)
                cache[key] = found
            if found.reason is not None:
                reasons[(f, n - 1)] = found.reason
                if found.min_gpus:
                    min_nodes[f] = math.ceil(found.min_gpus / float(fams.gpu_count[f]))
            else:
                hours[f, n - 1], low[f, n - 1] = found.hours, found.hours_low
                high[f, n - 1], energy[f, n - 1] = found.hours_high, found.energy_kwh
                slower[f, n - 1] = found.slower_at_scale
                uncalibrated[f] |= not found.calibrated
                if not math.isnan(found.held_out_pct):
                    held_out[f] = found.held_out_pct
    errors = [c.error for c in cache.values()]
    fields = {e.field if e is not None else None for e in errors}
    if errors and len(fields) == 1 and None not in fields:
        # Every configuration refused the same input field (a bad option, or a precision none of these GPUs has):
        # the complaint is about the input, not the offerings.
        raise next(e for e in errors if e is not None)
    return ModelGrid(
        hours=hours,
        hours_low=low,
        hours_high=high,
        energy_kwh=energy,
        reasons=reasons,
        uncalibrated=uncalibrated,
        held_out_pct=held_out,
        min_nodes=min_nodes,
        slower_at_scale=slower,
    )
