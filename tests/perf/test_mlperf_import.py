"""scripts/mlperf_results.py on MLLOG lines shaped like the submissions' result files (NeMo LoRA, MXNet ResNet-50)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location("mlperf_results", SCRIPTS / "mlperf_results.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


def _line(time_ms: int, key: str, value: object = None, **metadata: object) -> str:
    event = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value,
             "metadata": {"file": "custom_callbacks.py", "lineno": 1, **metadata}}  # fmt: skip
    return ":::MLLOG " + json.dumps(event)


def test_a_lora_run_gives_its_time_samples_evaluations_and_logged_rate() -> None:
    script = _script()
    t0 = 1_714_861_382_627
    text = "\n".join(
        [
            "unrelated output",
            _line(t0 - 5000, "global_batch_size", 8),
            _line(t0, "run_start"),
            # The first block carries start-up: its rate is the lowest, and the median keeps it out.
            _line(t0 + 139_000, "tracked_stats", {"throughput": 11.0}, step=1536),
            _line(t0 + 139_000, "eval_accuracy", 0.93, samples_count=1536),
            _line(t0 + 178_000, "tracked_stats", {"throughput": 12.57}, step=1920),
            _line(t0 + 178_000, "eval_accuracy", 0.927, samples_count=1920),
            _line(t0 + 217_000, "tracked_stats", {"throughput": 12.54}, step=2304),
            _line(t0 + 217_000, "eval_accuracy", 0.925, samples_count=2304),
            _line(t0 + 240_000, "run_stop", 0.925, samples_count=2304, status="success"),
        ]
    )
    minutes, samples, constants, evaluations, rate = script._run(script._events(text), "llama2_70b_lora")
    assert minutes == pytest.approx(4.0)
    assert samples == 2304 and evaluations == 3
    assert constants["global_batch_size"] == 8
    assert rate == pytest.approx(12.54)


def test_a_run_that_logs_no_rate_has_none_and_the_table_keeps_four_figures() -> None:
    script = _script()
    text = "\n".join(
        [
            _line(0, "run_start"),
            _line(60_000, "epoch_stop", epoch_num=2),
            _line(60_000, "eval_accuracy", 0.5, epoch_num=2),
            _line(120_000, "run_stop", 0.76, epoch=2, status="success"),
        ]
    )
    minutes, samples, _constants, evaluations, rate = script._run(script._events(text), "resnet")
    assert (minutes, samples, evaluations, rate) == (2.0, 2 * script.IMAGENET_TRAIN, 1, None)
    # No exponent in the CSV: four significant figures as plain numbers.
    assert [script._four_figures(v) for v in (57_291.4, 10_098_765.0, 12.5449, 2.155)] == [
        "57290",
        "10100000",
        "12.54",
        "2.155",
    ]
