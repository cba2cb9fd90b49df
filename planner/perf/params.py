"""The performance model's fitted parameters as one frozen value.

``data/perf_params.json`` is fitted by ``scripts/fit_perf.py``; ``default_params()`` reads it once. Every function of
the model that needs a coefficient takes a ``PerfParams``; a refit (or a variant a test or the fitting lab tries)
builds a new one with ``PerfParams.from_dict`` and passes it in. Nothing is swapped in module state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

from planner._data import data_dir


def _frozen(value: Any) -> Any:
    """``value`` with every dict a read-only mapping and every list a tuple."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    return value


def _thawed(value: Any) -> Any:
    """The JSON document back from ``_frozen``: plain dicts and lists."""
    if isinstance(value, Mapping):
        return {key: _thawed(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thawed(item) for item in value]
    return value


@dataclass(frozen=True, eq=False)
class PerfParams:
    """The fitted coefficients and the fit's record, read-only. Sections are those of ``data/perf_params.json``."""

    transformer: Mapping[str, float]
    cnn: Mapping[str, float]
    memory: Mapping[str, float]
    comm: Mapping[str, float]
    # Low/high band per kind of model ("cnn", "encoder", "decoder", and "transformer" for either).
    band: Mapping[str, tuple[float, float]]
    network_gbps_by_architecture: Mapping[str, float]
    # What the fit measured: GPUs, their architectures, and per GPU the kinds of model (a GPU missing here, as in a
    # parameter set without the per-kind record, counts as measured for every kind).
    calibrated_gpus: frozenset[str]
    calibrated_architectures: frozenset[str]
    calibrated_kinds: Mapping[str, tuple[str, ...]]
    uncalibrated_band_factor: float
    # Per GPU the precision classes the fit measured it in (``precision_class``); a GPU missing here counts as measured
    # in every precision.
    calibrated_precisions: Mapping[str, tuple[str, ...]]
    # Per kind of model the largest GPU count the fit measured it on, and how much each side of the band widens per
    # doubling past it (solved on the held-out scale-out runs, scripts/fit_perf.py).
    calibrated_scale: Mapping[str, int]
    scale_band_per_doubling: float
    # What the runs kept out of the fit say: per GPU and kind (Lambda's round 2), and at scale (MLPerf).
    held_out_checks: Mapping[str, Mapping[str, Mapping[str, Any]]]
    scale_out_checks: Mapping[str, Mapping[str, Any]]
    _document: Mapping[str, Any] = field(repr=False)
    _key: str = field(repr=False)

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> PerfParams:
        """A value from the JSON document's shape (the bundled file, or a fit's working copy)."""
        frozen = _frozen(document)
        return cls(
            transformer=frozen["transformer"],
            cnn=frozen["cnn"],
            memory=frozen["memory"],
            comm=frozen["comm"],
            band=frozen["band"],
            network_gbps_by_architecture=frozen["network_gbps_by_architecture"],
            calibrated_gpus=frozenset(frozen.get("calibrated_gpus", ())),
            calibrated_architectures=frozenset(frozen.get("calibrated_architectures", ())),
            calibrated_kinds=frozen.get("calibrated_kinds", MappingProxyType({})),
            uncalibrated_band_factor=float(frozen.get("uncalibrated_band_factor", 1.5)),
            calibrated_precisions=frozen.get("calibrated_precisions", MappingProxyType({})),
            calibrated_scale=frozen.get("calibrated_scale", MappingProxyType({})),
            scale_band_per_doubling=float(frozen.get("scale_band_per_doubling", 0.0)),
            held_out_checks=frozen.get("held_out_checks", MappingProxyType({})),
            scale_out_checks=frozen.get("scale_out_checks", MappingProxyType({})),
            _document=frozen,
            _key=json.dumps(document, sort_keys=True),
        )

    def to_dict(self) -> dict[str, Any]:
        """A fresh, mutable copy of the JSON document (what the fitting lab starts a variant from)."""
        thawed: dict[str, Any] = _thawed(self._document)
        return thawed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerfParams) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)


# Precisions that run on the same tensor-core rate count as one for what the fit has measured.
PRECISION_CLASSES = {"fp16": "half", "bf16": "half"}


def precision_class(precision: str) -> str:
    """The class of ``precision`` for the calibration record: FP16 and BF16 are one, every other its own."""
    return PRECISION_CLASSES.get(precision, precision)


@cache
def default_params() -> PerfParams:
    """The bundled fit, ``data/perf_params.json``, read once."""
    with (data_dir() / "perf_params.json").open(encoding="utf-8") as handle:
        return PerfParams.from_dict(json.load(handle))
