"""The band widens with distance from the evidence: an unmeasured precision, a GPU count past the largest run."""

from __future__ import annotations

from planner.perf.model import estimate
from planner.perf.params import PerfParams, default_params, precision_class


def _with(**changes: object) -> PerfParams:
    document = default_params().to_dict()
    document.update(changes)
    return PerfParams.from_dict(document)


def _width(result: object) -> float:
    assert result.throughput and result.throughput_low and result.throughput_high  # type: ignore[attr-defined]
    return (result.throughput_high - result.throughput_low) / result.throughput  # type: ignore[attr-defined]


def test_fp16_and_bf16_are_one_precision_class() -> None:
    assert precision_class("fp16") == precision_class("bf16") == "half"
    assert precision_class("fp8") == "fp8" and precision_class("tf32") == "tf32"


def test_a_precision_the_gpu_was_never_measured_in_widens_the_band_and_says_so() -> None:
    measured = _with(calibrated_precisions={"H100-SXM": ["half"]})
    half = estimate("llama-3-8b", "H100-SXM", 8, "bf16", perf_params=measured)
    fp8 = estimate("llama-3-8b", "H100-SXM", 8, "fp8", perf_params=measured)
    assert half.gpu_calibrated and not fp8.gpu_calibrated
    assert _width(fp8) > _width(half) * 1.1
    assert fp8.calibration_note and "never in fp8" in fp8.calibration_note


def test_each_doubling_past_the_largest_run_widens_the_band() -> None:
    scaled = _with(calibrated_scale={"decoder": 64, "encoder": 8, "cnn": 8}, scale_band_per_doubling=0.05)
    inside = estimate("llama-3-8b", "H100-SXM", 64, "bf16", perf_params=scaled)
    past = estimate("llama-3-8b", "H100-SXM", 256, "bf16", perf_params=scaled)
    plain = estimate("llama-3-8b", "H100-SXM", 256, "bf16", perf_params=_with(scale_band_per_doubling=0.0))
    # Two doublings past 64 GPUs: 0.05 x 2 more on each side than the same run with no widening.
    assert abs(_width(past) - _width(plain) - 0.2) < 1e-9
    assert inside.calibration_note is None or "doublings past" not in inside.calibration_note
    assert past.calibration_note and "2.0 doublings past the largest calibration run" in past.calibration_note
