"""Readers of training logs that carry throughput: Hugging Face Trainer, PyTorch Lightning, Megatron/NeMo, W&B.

Formats:

- Hugging Face ``trainer_state.json``: ``log_history`` holds the logged dicts; the last carries
  ``train_samples_per_second`` (all processes together, over ``train_runtime``) and, with
  ``include_tokens_per_second``, ``train_tokens_per_second``.
- Hugging Face log lines: the dicts the Trainer prints (``{'train_runtime': 3600.1, 'train_samples_per_second': ...}``)
  and the ``***** train metrics *****`` block of ``trainer.log_metrics`` (``train_samples_per_second = 35.55``).
- PyTorch Lightning ``CSVLogger`` ``metrics.csv``: one column per logged metric, sparse rows; the
  ``ThroughputMonitor`` callback logs ``train/samples_per_sec`` and ``train/items_per_sec`` (all devices) and
  ``train/device/...`` (one device).
- Megatron-LM / NeMo iteration lines: ``iteration 100/ 10000 | consumed samples: 102400 | elapsed time per
  iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 402.1 | ... | global batch size: 1024 | ...``.
- Weights & Biases run history as CSV (``run.history().to_csv()`` or the UI's export): ``_step``, ``_runtime``,
  ``_timestamp`` and one column per metric; a panel export's ``<run> - <metric>`` columns (``__MIN``/``__MAX``
  ignored).

Throughput columns are recognised by name (``tokens_per_second``, ``samples/s``, ``images_per_sec`` ...);
evaluation speeds (``eval_samples_per_second``) are not training throughput and are skipped.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from planner.runlogs.lines import BoundedSample, LogSource, bad_line, number_in, numbered_lines

# Which throughput a name is, in order of preference: what all GPUs together did is the run's own figure.
RATE_KINDS = (("tokens", False), ("tokens", True), ("samples", False), ("samples", True))
_TOKENS = re.compile(r"(tokens?|tok|items)(_per_|/|_)s(ec(ond)?)?\b")
_SAMPLES = re.compile(r"(samples?|sequences?|seqs?|images?|imgs?|examples?)(_per_|/|_)s(ec(ond)?)?\b")
_PER_GPU = re.compile(r"(device/|per_gpu|per_device|/gpu\b|_gpu\b|gpu/)")
_NOT_TRAINING = re.compile(r"(^|[/_ ])(eval|val|valid|validation|test|predict)[/_]")


@dataclass(frozen=True)
class TrainingLog:
    """A training log's steady throughput: the median after the first tenth of its readings."""

    source: str
    format: str
    rate: float | None  # in ``rate_unit`` per second; None where the log has only TFLOP/s
    rate_unit: str  # "tokens" or "samples" (images or sequences, as the workload counts them)
    per_gpu: bool  # the rate is one GPU's (multiply by the GPU count for the run's)
    tflops_per_gpu: float | None
    readings: int
    found_in: str  # the column or field the rate came from

    def run_rate(self, gpus: int) -> float | None:
        """All GPUs together, in ``rate_unit`` per second."""
        if self.rate is None:
            return None
        return self.rate * gpus if self.per_gpu else self.rate


def rate_kind(name: str) -> tuple[str, bool] | None:
    """("tokens"|"samples", per GPU) for a throughput metric's name; None for anything else."""
    key = name.strip().lower().replace(" ", "_")
    if _NOT_TRAINING.search(key) or "flop" in key or key.startswith("eval"):
        return None
    for unit, pattern in (("tokens", _TOKENS), ("samples", _SAMPLES)):
        if pattern.search(key):
            return unit, bool(_PER_GPU.search(key))
    return None


class _Rates:
    """Bounded samples of each throughput a log reports, and the TFLOP/s per GPU."""

    def __init__(self) -> None:
        self.rates: dict[tuple[str, bool], tuple[str, BoundedSample]] = {}
        self.tflops = BoundedSample()

    def add(self, name: str, value: float | None) -> None:
        if value is None or value <= 0:
            return
        kind = rate_kind(name)
        if kind is not None:
            self.rates.setdefault(kind, (name, BoundedSample()))[1].add(value)
        elif "tflop" in name.lower() and ("gpu" in name.lower() or "device" in name.lower()):
            self.tflops.add(value)
        elif name.lower().endswith("device/flops_per_sec"):
            self.tflops.add(value / 1e12)

    def result(self, source: LogSource, fmt: str) -> TrainingLog:
        for kind in RATE_KINDS:
            if kind in self.rates:
                name, sample = self.rates[kind]
                return TrainingLog(
                    source.name, fmt, sample.steady(), kind[0], kind[1], self.tflops.steady(), sample.seen, name
                )
        if self.tflops.seen:
            return TrainingLog(source.name, fmt, None, "samples", False, self.tflops.steady(), self.tflops.seen, "")
        raise bad_line(source.name, 1, f"no training throughput found in this {fmt} log")


def read_trainer_state(source: LogSource) -> TrainingLog:
    """A Hugging Face ``trainer_state.json``: one JSON document (small: one dict per logging step)."""
    with source.open() as handle:
        try:
            state = json.load(handle)
        except json.JSONDecodeError as exc:
            raise bad_line(source.name, exc.lineno, f"not valid JSON ({exc.msg})") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise bad_line(source.name, 1, "no log_history list: not a Hugging Face trainer_state.json")
    rates = _Rates()
    for entry in history:
        if isinstance(entry, dict):
            for name, value in entry.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    rates.add(name, float(value))
    return rates.result(source, "hf-trainer-state")


_METRIC_LINE = re.compile(r"^\s*([A-Za-z_][\w/.]*)\s*=\s*(\S+)\s*$")


def read_hf_log(source: LogSource) -> TrainingLog:
    """Hugging Face Trainer console output: printed dicts and ``log_metrics`` blocks; other lines are skipped."""
    rates = _Rates()
    for number, line in numbered_lines(source):
        start = line.find("{'")
        if start >= 0 and line.rstrip().endswith("}"):
            try:
                logged = ast.literal_eval(line[start : line.rstrip().rfind("}") + 1])
            except (ValueError, SyntaxError):
                raise bad_line(source.name, number, "a logged dict that does not parse") from None
            if isinstance(logged, dict):
                for name, value in logged.items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        rates.add(str(name), float(value))
            continue
        found = _METRIC_LINE.match(line)
        if found and rate_kind(found.group(1)):
            try:
                rates.add(found.group(1), number_in(found.group(2)))
            except ValueError as exc:
                raise bad_line(source.name, number, str(exc)) from None
    return rates.result(source, "hf-log")


def _csv_rates(source: LogSource, fmt: str, rename: Iterable[tuple[re.Pattern[str], str]] = ()) -> TrainingLog:
    lines = numbered_lines(source)
    rates = _Rates()
    header: list[str] | None = None
    for number, row in _csv_rows(lines):
        if header is None:
            header = [_renamed(name, rename) for name in row]
            continue
        if len(row) != len(header):
            raise bad_line(source.name, number, f"{len(row)} cells for the header's {len(header)} columns")
        for name, cell in zip(header, row, strict=True):
            if name and cell:
                try:
                    rates.add(name, number_in(cell))
                except ValueError as exc:
                    raise bad_line(source.name, number, f"{name}: {exc}") from None
    return rates.result(source, fmt)


def _csv_rows(lines: Iterable[tuple[int, str]]) -> Iterable[tuple[int, list[str]]]:
    numbers: list[int] = []

    def text() -> Iterable[str]:
        for number, line in lines:
            numbers.append(number)
            if len(numbers) > 1:
                del numbers[0]
            yield line

    for row in csv.reader(text()):
        if row:
            yield numbers[-1], row


def _renamed(name: str, rename: Iterable[tuple[re.Pattern[str], str]]) -> str:
    for pattern, replacement in rename:
        name = pattern.sub(replacement, name)
    return name


def read_lightning_csv(source: LogSource) -> TrainingLog:
    """A Lightning ``CSVLogger`` ``metrics.csv``."""
    return _csv_rates(source, "lightning-csv")


# A panel export names columns "<run name> - <metric>" and adds "__MIN"/"__MAX" bands: those are not readings.
_WANDB_RENAME = ((re.compile(r"^.* - "), ""), (re.compile(r"^.*__(MIN|MAX)$"), ""))


def read_wandb_csv(source: LogSource) -> TrainingLog:
    """A Weights & Biases run history (or panel) CSV export."""
    return _csv_rates(source, "wandb-csv", _WANDB_RENAME)


_MEGATRON = {
    "elapsed_ms": re.compile(r"elapsed time per iteration \(ms\):\s*([-\d.eE+]+)"),
    "tflops": re.compile(r"(?:throughput per GPU \(TFLOP/s/GPU\)|TFLOPs):\s*([-\d.eE+]+)"),
    "global_batch": re.compile(r"global batch size:\s*(\d+)"),
    "consumed": re.compile(r"consumed samples:\s*(\d+)"),
    "iteration": re.compile(r"iteration\s+(\d+)\s*/"),
}


def read_megatron(source: LogSource) -> TrainingLog:
    """Megatron-LM/NeMo training-log lines; samples per second = global batch / time per iteration."""
    rates = _Rates()
    last: tuple[float, float] | None = None  # (iteration, consumed samples) of the previous line
    for number, line in numbered_lines(source):
        if "elapsed time per iteration" not in line:
            continue
        found = {key: pattern.search(line) for key, pattern in _MEGATRON.items()}
        try:
            got = {key: float(match.group(1)) for key, match in found.items() if match}
        except ValueError:
            raise bad_line(source.name, number, "a number in the iteration line does not parse") from None
        if "elapsed_ms" not in got or got["elapsed_ms"] <= 0:
            raise bad_line(source.name, number, "no positive 'elapsed time per iteration (ms)'")
        rates.add("throughput per GPU (TFLOP/s/GPU)", got.get("tflops"))
        batch = got.get("global_batch")
        if batch is None and "consumed" in got and "iteration" in got and last is not None:
            # Without the batch size, the samples consumed since the last line over its iterations.
            steps = got["iteration"] - last[0]
            batch = (got["consumed"] - last[1]) / steps if steps > 0 else None
        if "consumed" in got and "iteration" in got:
            last = (got["iteration"], got["consumed"])
        if batch:
            rates.add("samples_per_second", batch / (got["elapsed_ms"] / 1000.0))
    return rates.result(source, "megatron")
