"""A calibration profile: the job's measured throughput on the GPUs it ran on, saved as a small JSON file.

``estimate``, ``rank`` and ``compare`` take it as the user's measured/measured_on evidence, so the model's ratios
carry it to other GPUs and counts. Several runs of one job (other GPUs or counts) fit one profile: each run's
measured over modelled throughput is its factor; the profile keeps their geometric mean, expressed as a
measurement on the first run's GPUs, and reports how far each run lies from the factor of the others.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planner import checks
from planner.errors import InputError
from planner.perf.options import ModelOptions

PROFILE_FORMAT = "gpu-planner calibration profile"
PROFILE_VERSION = 1
Estimator = Callable[..., Any]


@dataclass(frozen=True)
class Run:
    """One run of the job: ``throughput`` (workload's unit per second, all GPUs) on ``gpus`` x ``gpu``."""

    gpu: str
    gpus: int
    throughput: float
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", checks.whole("gpus", self.gpus))
        object.__setattr__(self, "throughput", checks.number("throughput", self.throughput))


@dataclass(frozen=True)
class RunFit:
    """A run as the profile fits it: measured, the model's figure, their ratio, and its held-out error."""

    gpu: str
    gpus: int
    measured: float
    model: float
    factor: float
    # (the other runs' factor x the model) over measured, less 1; None with a single run.
    held_out_error: float | None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """What a job measured, in the form every estimate takes (``measured`` on ``measured_on``)."""

    workload: str
    precision: str
    gpu: str
    gpus: int
    throughput: float
    unit: str
    factor: float  # measured over the model's throughput (geometric mean over runs)
    runs: tuple[RunFit, ...]
    workload_fields: Mapping[str, Any] = field(default_factory=dict)
    created: str = ""
    notes: tuple[str, ...] = ()

    @property
    def measured_on(self) -> str:
        return f"{self.gpu}:{self.gpus}"

    @property
    def held_out_error(self) -> float | None:
        """The median absolute leave-one-run-out error; None with a single run."""
        errors = sorted(abs(run.held_out_error) for run in self.runs if run.held_out_error is not None)
        if not errors:
            return None
        middle = len(errors) // 2
        return errors[middle] if len(errors) % 2 else (errors[middle - 1] + errors[middle]) / 2

    def model_options(self) -> ModelOptions:
        return ModelOptions(measured=self.throughput, measured_on=self.measured_on)

    def estimate_options(self) -> dict[str, Any]:
        """``measured`` and ``measured_on`` as keyword arguments of estimate, rank and compare."""
        return self.model_options().as_kwargs()

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["workload_fields"] = dict(self.workload_fields)
        return {"format": PROFILE_FORMAT, "version": PROFILE_VERSION, **payload}

    def save(self, path: Path | str) -> Path:
        where = Path(path)
        where.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return where

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any], name: str = "profile") -> Profile:
        if payload.get("format") != PROFILE_FORMAT:
            raise InputError(f"{name} is not a gpu-planner calibration profile", field="profile")
        try:
            runs = tuple(RunFit(**{**run, "sources": tuple(run.get("sources", ()))}) for run in payload.get("runs", ()))
            return cls(
                workload=str(payload["workload"]),
                precision=str(payload["precision"]),
                gpu=str(payload["gpu"]),
                gpus=int(payload["gpus"]),
                throughput=float(payload["throughput"]),
                unit=str(payload["unit"]),
                factor=float(payload["factor"]),
                runs=runs,
                workload_fields=dict(payload.get("workload_fields", {})),
                created=str(payload.get("created", "")),
                notes=tuple(payload.get("notes", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{name} is missing or garbles a field ({exc})", field="profile") from None

    @classmethod
    def load(cls, path: Path | str) -> Profile:
        where = Path(path)
        try:
            payload = json.loads(where.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{where} does not exist", field="profile") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{where.name} line {exc.lineno}: not valid JSON ({exc.msg})", field="profile") from None
        if not isinstance(payload, dict):
            raise InputError(f"{where.name} is not a gpu-planner calibration profile", field="profile")
        return cls.from_dict(payload, where.name)

    def runs_as_input(self) -> list[Run]:
        """The measured runs, to fit again with a new one."""
        return [Run(run.gpu, run.gpus, run.measured, run.sources) for run in self.runs]


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


def fit_profile(
    workload: str,
    runs: Sequence[Run],
    *,
    precision: str = "bf16",
    workload_fields: Mapping[str, Any] | None = None,
    estimator: Estimator | None = None,
    today: str | None = None,
) -> Profile:
    """The profile of ``runs`` of one job (see the module docstring); ``estimator`` defaults to the model's."""
    if not runs:
        raise InputError("needs at least one run: a training log with throughput, or the measured figure", field="log")
    if estimator is None:
        from planner.perf.model import estimate

        estimator = estimate
    from planner.perf.workloads import resolve_workload

    fields = dict(workload_fields or {})
    # The preset's own name (any case given), which an estimate of the same workload carries.
    name = resolve_workload(workload, **fields).name
    modelled = []
    for run in runs:
        result = estimator(workload, run.gpu, run.gpus, precision, **fields)
        if result.throughput is None:
            raise InputError(
                f"{run.gpus}x {run.gpu}: the model finds that the workload does not fit ({result.why_not_fits}); "
                "check the workload's fields",
                field="gpu",
            )
        modelled.append((result.gpu, float(result.throughput), result.throughput_unit))
    factors = [run.throughput / model for run, (_, model, _) in zip(runs, modelled, strict=True)]
    fits = []
    for index, (run, (gpu, model, _)) in enumerate(zip(runs, modelled, strict=True)):
        others = factors[:index] + factors[index + 1 :]
        error = geometric_mean(others) * model / run.throughput - 1.0 if others else None
        fits.append(RunFit(gpu, run.gpus, run.throughput, model, factors[index], error, tuple(run.sources)))
    factor = geometric_mean(factors)
    first_gpu, first_model, unit = modelled[0]
    # One run: its own figure, so the estimate on its GPUs gives it back; several: the fitted factor on the first.
    throughput = runs[0].throughput if len(runs) == 1 else factor * first_model
    return Profile(
        workload=name,
        precision=precision,
        gpu=first_gpu,
        gpus=runs[0].gpus,
        throughput=throughput,
        unit=unit,
        factor=factor,
        runs=tuple(fits),
        workload_fields=fields,
        created=today or datetime.now(UTC).date().isoformat(),
    )


def profile_evidence(profile: Profile | Path | str, workload_name: str, precision: str) -> dict[str, Any]:
    """A profile (or its file) as ``measured``/``measured_on`` for an estimate of ``workload_name`` at ``precision``.

    The measured figure is in the profiled workload's unit and precision: another workload or precision is an
    InputError rather than a silently wrong rescale.
    """
    loaded = profile if isinstance(profile, Profile) else Profile.load(profile)
    if loaded.workload.strip().lower() != workload_name.strip().lower():
        raise InputError(
            f"is of {loaded.workload}, not {workload_name}: calibrate this workload, or estimate {loaded.workload}",
            field="profile",
        )
    if loaded.precision != str(precision).strip().lower():
        raise InputError(
            f"was measured in {loaded.precision}; estimate in {loaded.precision} or calibrate a {precision} run",
            field="profile",
        )
    return loaded.estimate_options()
