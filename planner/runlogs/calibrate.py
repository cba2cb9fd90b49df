"""From a run's logs to its utilisation report, calibration profile and right-sizing advice (no I/O but the logs)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import InputError, UnknownGpuError
from planner.hardware import lookup
from planner.perf.options import EVIDENCE_FIELDS
from planner.runlogs.advice import Advice, advise
from planner.runlogs.gpu_readers import GpuSample, LogInfo
from planner.runlogs.lines import LogSource
from planner.runlogs.profile import Estimator, Profile, Run, fit_profile
from planner.runlogs.readers import check_format, gpu_samples, is_gpu_format, training_log
from planner.runlogs.report import UtilisationAccumulator, UtilisationReport
from planner.runlogs.train_readers import TrainingLog


@dataclass(frozen=True)
class Calibration:
    """What a run's logs say: GPU use, training throughput, the profile fitted from it, and the advice."""

    report: UtilisationReport | None
    training: tuple[TrainingLog, ...]
    throughput: float | None  # the run's, in the workload's unit per second (all GPUs)
    profile: Profile | None
    advice: tuple[Advice, ...]
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """The CLI's text: the report, the throughput and profile, the advice, the notes."""
        parts = [self.report.summary().rstrip("\n")] if self.report else []
        for log in self.training:
            rate = "no throughput" if log.rate is None else f"{log.rate:,.1f} {log.rate_unit}/s"
            scope = " per GPU" if log.per_gpu else ""
            flops = f"; {log.tflops_per_gpu:.0f} TFLOP/s per GPU" if log.tflops_per_gpu else ""
            parts.append(f"{log.source} ({log.format}): {rate}{scope} ({log.found_in}, {log.readings} readings){flops}")
        if self.profile is not None:
            profile = self.profile
            held_out = (
                f"; leave-one-run-out error {profile.held_out_error:.1%} (median of {len(profile.runs)} runs)"
                if profile.held_out_error is not None
                else ""
            )
            parts.append(
                f"profile: {profile.workload} {profile.throughput:,.1f} {profile.unit} on {profile.gpus}x "
                f"{profile.gpu} ({profile.precision}); {profile.factor:.2f}x the model's figure{held_out}"
            )
        parts.extend(f"- {item.text}" for item in self.advice)
        parts.extend(f"note: {note}" for note in self.notes)
        return "\n".join(parts) + "\n"

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            "report": None if self.report is None else self.report.to_frame().to_dict(orient="records"),
            "training": [asdict(log) for log in self.training],
            "throughput": self.throughput,
            "profile": None if self.profile is None else self.profile.to_dict(),
            "advice": [asdict(item) for item in self.advice],
            "notes": list(self.notes),
        }


def as_sources(logs: Any) -> list[LogSource]:
    """One log or a list of them (paths, or LogSource objects such as the app's uploads) as LogSources."""
    items = [logs] if isinstance(logs, str | Path | LogSource) else list(logs)
    return [item if isinstance(item, LogSource) else LogSource.from_path(item) for item in items]


def earlier_runs(
    profile: Profile | Path | str | None, workload: str | None, fields: Mapping[str, Any]
) -> tuple[str | None, dict[str, Any], list[Run]]:
    """(workload, workload fields, runs) of an earlier profile of this job, to fit this run with; as given without."""
    if profile is None:
        return workload, dict(fields), []
    loaded = profile if isinstance(profile, Profile) else Profile.load(profile)
    if workload is not None and loaded.workload.lower() != workload.strip().lower():
        raise InputError(f"is of {loaded.workload}, not {workload}", field="profile")
    return workload or loaded.workload, {**loaded.workload_fields, **fields}, loaded.runs_as_input()


def _labelled(samples: Iterator[GpuSample], prefix: str) -> Iterator[GpuSample]:
    for sample in samples:
        yield sample._replace(gpu=f"{prefix}/{sample.gpu}")


def read_logs(
    sources: Sequence[Any], *, log_format: str | None = None, interval_s: float | None = None
) -> tuple[UtilisationAccumulator | None, list[TrainingLog], set[str]]:
    """Stream every log once: GPU samples into one accumulator, training logs to their throughput."""
    accumulator: UtilisationAccumulator | None = None
    training: list[TrainingLog] = []
    models: set[str] = set()
    formats = [(source, check_format(log_format, source)) for source in sources]
    gpu_logs = sum(is_gpu_format(fmt) for _, fmt in formats)
    for source, fmt in formats:
        if is_gpu_format(fmt):
            accumulator = accumulator or UtilisationAccumulator()
            info = LogInfo(source.name)
            samples = gpu_samples(source, fmt, info, interval_s)
            # GPUs of several logs (nodes) keep apart: each is named by its log.
            accumulator.add_all(_labelled(samples, source.name) if gpu_logs > 1 else samples)
            models |= info.models
        else:
            training.append(training_log(source, fmt))
    return accumulator, training, models


def _gpu_model(gpu: str | None, models: set[str], memory_gib: float | None, notes: list[str]) -> str | None:
    if gpu is not None:
        return lookup(gpu, field="gpu").spec.id
    known = set()
    for model in models:
        try:
            known.add(lookup(model.removeprefix("Tesla ").strip(), memory_gib).spec.id)
        except UnknownGpuError:
            notes.append(f"the logs name the GPU {model!r}, which is not in the planner's GPU table; give gpu")
    if len(known) > 1:
        raise InputError(f"the logs name several GPU models ({', '.join(sorted(known))}); give gpu", field="gpu")
    return known.pop() if known else None


def in_workload_unit(log: TrainingLog, gpus: int, work_unit: str, seq_len: int) -> tuple[float, str | None]:
    """A training log's run throughput in the workload's unit, and the assumption made converting it."""
    rate = log.run_rate(gpus)
    if rate is None:
        raise InputError(
            f"{log.source} gives TFLOP/s only, not samples or tokens per second; give the measured throughput",
            field="throughput",
        )
    if log.rate_unit == "tokens" and work_unit == "tokens":
        return rate, None
    if log.rate_unit == "samples" and work_unit != "tokens":
        return rate, None
    if log.rate_unit == "samples" and work_unit == "tokens" and seq_len:
        return rate * seq_len, f"{log.source}: samples/s x seq_len {seq_len} = tokens/s (full-length samples)"
    if log.rate_unit == "tokens" and work_unit == "sequences" and seq_len:
        return rate / seq_len, f"{log.source}: tokens/s / seq_len {seq_len} = sequences/s"
    raise InputError(f"{log.source} counts {log.rate_unit}, the workload {work_unit}", field="workload")


def calibrate(
    sources: Sequence[Any],
    *,
    workload: str | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    throughput: float | None = None,
    precision: str = "bf16",
    workload_fields: Mapping[str, Any] | None = None,
    runs: Sequence[Run] = (),
    price_usd_per_gpu_hour: float | None = None,
    prices_usd_per_gpu_hour: Mapping[str, float] | None = None,
    log_format: str | None = None,
    interval_s: float | None = None,
    estimator: Estimator | None = None,
) -> Calibration:
    """The report, throughput, profile and advice of one run's logs (``sources``: LogSource objects).

    ``throughput`` (the workload's unit per second, all GPUs) replaces what the training logs say; ``runs`` are
    earlier runs of the same job (a saved profile's) fitted together with this one.
    """
    from planner.perf.workloads import resolve_workload

    if estimator is None:
        from planner.perf.model import estimate

        estimator = estimate
    notes: list[str] = []
    accumulator, training, models = read_logs(sources, log_format=log_format, interval_s=interval_s)
    memory_gib = None
    if accumulator is not None:
        totals = [s.memory_total_mib for s in accumulator.states.values() if s.memory_total_mib]
        memory_gib = max(totals) / 1024.0 if totals else None
    gpu_id = _gpu_model(gpu, models, memory_gib, notes)
    report = None
    if accumulator is not None:
        from planner.hardware import gpu_table

        tdp = gpu_table()[gpu_id].tdp_w if gpu_id else None
        report = accumulator.report(gpu_id, tdp, [s.name for s in sources])
    count = gpus if gpus is not None else (report.gpu_count if report else None)
    fields = dict(workload_fields or {})
    job = resolve_workload(workload, **fields) if workload else None
    measured = throughput
    if measured is None and training and job is not None:
        if not count:
            raise InputError("is needed to calibrate: no GPU metrics log shows how many GPUs ran", field="gpus")
        converted = []
        for log in training:
            if log.rate is not None:
                value, assumption = in_workload_unit(log, count, job.work_unit, job.seq_len)
                converted.append(value)
                if assumption:
                    notes.append(assumption)
        measured = sorted(converted)[len(converted) // 2] if converted else None
    profile = None
    if workload is None:
        if training or throughput is not None:
            notes.append("give the workload to turn this run's throughput into a profile")
    elif measured is None:
        notes.append("no throughput: give a training log with samples or tokens per second, or the measured figure")
    elif gpu_id is None:
        raise InputError("is needed to calibrate: the logs do not name the GPU model", field="gpu")
    elif not count:
        raise InputError("is needed to calibrate: no GPU metrics log shows how many GPUs ran", field="gpus")
    else:
        run = Run(gpu_id, count, measured, tuple(s.name for s in sources))
        try:
            profile = fit_profile(
                workload, [*runs, run], precision=precision, workload_fields=fields, estimator=estimator
            )
            # The model's physical check of the measurement (above the GPUs' peak?) runs here, not first when the
            # profile is used.
            estimator(workload, gpu_id, count, precision, **fields, **profile.estimate_options())
        except InputError as exc:
            if exc.field not in EVIDENCE_FIELDS:
                raise
            # The model's check of a measurement names `measured`, which a calibrate user never typed: name where
            # the figure came from, the given throughput or the training logs.
            if throughput is not None:
                raise InputError(exc.detail, field="throughput") from None
            logs = ", ".join(log.source for log in training) or "the logs"
            raise InputError(f"{logs}: the throughput read, {exc.detail}", field="log") from None
    advice: tuple[Advice, ...] = ()
    if report is not None:
        price = price_usd_per_gpu_hour
        if price is None and gpu_id and prices_usd_per_gpu_hour:
            price = prices_usd_per_gpu_hour.get(gpu_id)
        if price is None:
            notes.append("no price for this GPU: the advice has no dollars (give price_usd_per_gpu_hour)")
        else:
            given = "as given" if price_usd_per_gpu_hour is not None else "the cheapest catalog offering"
            notes.append(f"priced at ${price:.2f} per GPU-hour ({given})")
        speed_on = None
        if workload is not None and count:
            evidence = profile.estimate_options() if profile else {}

            def speed_on(other: str) -> tuple[float | None, bool]:
                result = estimator(workload, other, count, precision, **fields, **evidence)
                return result.throughput, bool(result.fits_in_memory)

        advice = advise(
            report,
            gpu=gpu_id,
            price_usd_per_gpu_hour=price,
            prices_usd_per_gpu_hour=prices_usd_per_gpu_hour,
            speed_on=speed_on,
        )
    return Calibration(report, tuple(training), measured, profile, advice, tuple(notes))
