"""Energy and carbon of a run: node wall power from MLPerf Training power logs, provider PUE, region grid intensity.

node power (kW) = GPUs per node x GPU TDP x node factor; the node factor (median, with min-max band) is fitted on
measured nodes (data/node_power.csv: measured node power / the GPUs' summed TDP). Facility energy = node energy x
the provider's PUE (data/provider_pue.csv). kgCO2e = facility kWh x the region's grid carbon intensity
(data/region_carbon.csv: Google's region-carbon-info for Google Cloud, Cloud Carbon Footprint's factors for AWS
and Azure); regions missing from the table use the provider's average row ("*").
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner._data import data_dir

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import numpy.typing as npt
    import pandas as pd

    FloatArray = npt.NDArray[np.float64]

# Used where a provider has no PUE row: the highest of the three published figures, to err on the high side.
FALLBACK_PUE = 1.185


@dataclass(frozen=True)
class NodeFactor:
    """Measured node power / the GPUs' summed TDP: the median of the fit points and their range."""

    low: float
    expected: float
    high: float
    points: int


@functools.cache
def node_factor() -> NodeFactor:
    """The node power factor fitted on data/node_power.csv."""
    import statistics

    with open(data_dir() / "node_power.csv", encoding="utf-8", newline="") as handle:
        ratios = [
            float(row["node_power_kw"]) * 1000.0 / (float(row["gpus"]) * float(row["gpu_tdp_w"]))
            for row in csv.DictReader(handle)
        ]
    return NodeFactor(min(ratios), statistics.median(ratios), max(ratios), len(ratios))


@functools.cache
def provider_pue() -> dict[str, float]:
    with open(data_dir() / "provider_pue.csv", encoding="utf-8", newline="") as handle:
        return {row["provider"]: float(row["pue"]) for row in csv.DictReader(handle)}


@functools.cache
def _carbon_table() -> dict[tuple[str, str], float]:
    with open(data_dir() / "region_carbon.csv", encoding="utf-8", newline="") as handle:
        return {(row["provider"], row["region"]): float(row["grid_gco2e_per_kwh"]) for row in csv.DictReader(handle)}


def carbon_providers() -> set[str]:
    """The providers the carbon table has figures for."""
    return {provider for provider, _ in _carbon_table()}


def carbon_intensity(provider: str, region: str) -> tuple[float, bool]:
    """Grid gCO2e per kWh of a region, and whether it is the region's own figure (False: the provider's average)."""
    table = _carbon_table()
    found = table.get((provider, region))
    if found is not None:
        return found, True
    return table.get((provider, "*"), float("nan")), False


def carbon_intensities(providers: Sequence[str], regions: Sequence[str]) -> FloatArray:
    """gCO2e per kWh for each (provider, region) pair; NaN for an unknown provider.

    One vectorised lookup per provider (a handful) rather than one per pair: a ranking asks for thousands.
    """
    import numpy as np
    import pandas as pd

    asked = np.asarray(providers, dtype=object)
    where = np.asarray(regions, dtype=object)
    values = np.full(len(asked), np.nan)
    for provider in pd.unique(asked):
        at = asked == provider
        regions_of, figures = _provider_regions(str(provider))
        found = regions_of.get_indexer(where[at])
        average = _provider_averages().get(str(provider), np.nan)
        values[at] = np.where(found >= 0, figures[found], average)
    result: FloatArray = values
    return result


@functools.cache
def _provider_averages() -> dict[str, float]:
    """The provider's average row ("*") of the carbon table, which a region missing from it uses."""
    return {provider: value for (provider, region), value in _carbon_table().items() if region == "*"}


@functools.cache
def _provider_regions(provider: str) -> tuple[pd.Index, FloatArray]:
    """The regions of ``provider`` with a figure of their own (the average row "*" apart) and their figures."""
    import numpy as np
    import pandas as pd

    own = {region: value for (name, region), value in _carbon_table().items() if name == provider and region != "*"}
    return pd.Index(list(own), dtype=object), np.array([*own.values(), np.nan], dtype=float)


def node_energy_kwh(tdp_w: Any, gpus: Any, hours: Any, factor: float) -> Any:
    """Energy at the nodes' wall, kWh: GPUs x TDP x the node factor x hours (numbers or arrays alike).

    The one formula: the performance model's estimate and ranking's facility energy (which multiplies in the
    provider's PUE) both use it.
    """
    return tdp_w * gpus * factor * hours / 1000.0


def gpu_tdp_w(gpus: Sequence[str]) -> FloatArray:
    """Each GPU's TDP, W (NaN for a GPU without specs)."""
    import numpy as np

    from planner.hardware import gpu_table

    specs = gpu_table()
    return np.array([specs[str(g)].tdp_w if str(g) in specs else np.nan for g in gpus], dtype=float)


def facility_pue(providers: Sequence[str]) -> FloatArray:
    """Each provider's PUE, FALLBACK_PUE where it publishes none."""
    import numpy as np

    pue = provider_pue()
    return np.array([pue.get(str(p), FALLBACK_PUE) for p in providers], dtype=float)


def node_power_kw(gpus: Sequence[str], gpus_per_node: FloatArray, providers: Sequence[str]) -> FloatArray:
    """Facility power of one node at the node factor 1: GPUs x TDP x PUE, kW (NaN for a GPU without specs)."""
    import numpy as np

    wall: FloatArray = node_energy_kwh(gpu_tdp_w(gpus), np.asarray(gpus_per_node, dtype=float), 1.0, 1.0)
    result: FloatArray = wall * facility_pue(providers)
    return result
