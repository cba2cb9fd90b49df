"""The fitted model against a handful of published measurements, and the calibration table's integrity."""

from __future__ import annotations

from typing import Any

import pytest

from planner.hardware import gpu_table
from planner.perf import calibration
from planner.perf.model import estimate

# (workload, gpu, gpus, precision, options, published throughput, tolerance): the model's own layout choice,
# so these check the whole estimate, not only the calibrated core.
PUBLISHED = [
    # Lambda deeplearning-benchmark (2024-07-24): ResNet-50 AMP, 1 GPU, batch 1280.
    ("resnet50", "H100-SXM", 1, "fp16", {"batch_per_gpu": 1280}, 2790.0, 0.25),
    ("resnet50", "A100-80GB", 1, "fp16", {"batch_per_gpu": 1280}, 1582.0, 0.25),
    ("resnet50", "V100-16GB", 1, "fp16", {"batch_per_gpu": 256}, 833.0, 0.25),
    # MosaicML llm-foundry README (2023-06-29): MPT-7B BF16 on 8 x A100-80GB, seq 2048: 4,641 tokens/s/GPU.
    ("mpt-7b", "A100-80GB", 8, "bf16", {"seq_len": 2048}, 8 * 4641.0, 0.3),
]


@pytest.mark.parametrize(("workload", "gpu", "gpus", "precision", "options", "published", "tolerance"), PUBLISHED)
def test_estimate_near_published(
    workload: str, gpu: str, gpus: int, precision: str, options: dict[str, Any], published: float, tolerance: float
) -> None:
    predicted = estimate(workload, gpu, gpus, precision, **options).throughput
    assert predicted == pytest.approx(published, rel=tolerance)


def test_calibrated_rows_median_error_is_small() -> None:
    rows = calibration.load_benchmarks()
    errors = sorted(calibration.ape(calibration.predict(row), row.throughput_total) for row in rows)
    assert errors[len(errors) // 2] < 15.0


def test_every_row_is_sourced_and_uses_known_gpus() -> None:
    rows = calibration.load_benchmarks(used_only=False)
    assert len(rows) > 1000
    known = gpu_table()
    for row in rows:
        assert row.source and row.source_date
        assert row.gpu.id in known
        assert row.throughput_total > 0
        assert row.use or row.excluded_reason


def test_flagged_implausible_rows_are_excluded_with_reason() -> None:
    flagged = [r for r in calibration.load_benchmarks(used_only=False) if "implausible" in r.excluded_reason]
    assert flagged and all(not r.use for r in flagged)


def test_peak_flops_baseline_is_worse_than_the_model() -> None:
    rows = [r for r in calibration.load_benchmarks() if r.family == "cnn"]
    baseline = calibration.baseline_predictions(rows, lambda row: row.gpu.id)
    model_errors = sorted(calibration.ape(calibration.predict(rows[i]), rows[i].throughput_total) for i in baseline)
    base_errors = sorted(calibration.ape(p, rows[i].throughput_total) for i, p in baseline.items())
    assert model_errors[len(model_errors) // 2] < base_errors[len(base_errors) // 2] / 2
