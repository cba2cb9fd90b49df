"""Published runs that are not in the calibration data (data/external_checks.csv): loading and the checks that hold."""

from __future__ import annotations

import pytest

from planner.perf import calibration
from planner.perf.model import estimate


def test_reported_tflops_become_tokens_per_second_with_the_authors_flop_count() -> None:
    checks = {(c.row["model"], int(c.row["gpus"])): c for c in calibration.load_external_checks()}
    assert len(checks) == 12
    for check in checks.values():
        assert check.row["source"] and check.row["source_date"]
    # Megatron-LM 1T on 3,072 A100: 163 TFLOP/s per GPU counting recomputation, 96 l h^2 (1 + s/6h + V/16lh) a token.
    trillion = checks[("gpt-1t", 3072)]
    per_token = 96 * 128 * 25600**2 * (1 + 2048 / (6 * 25600) + 51200 / (16 * 128 * 25600))
    assert trillion.measured_per_gpu == pytest.approx(163e12 / per_token)
    # Llama 3.1 405B: model FLOPs, 6N plus attention.
    llama = checks[("llama-3.1-405b", 16384)]
    assert llama.measured_per_gpu == pytest.approx(400e12 / (6 * 405e9 + 12 * 126 * 16384 * 8192))


def test_llama_3_405b_estimate_matches_metas_throughput() -> None:
    # The Llama 3 Herd of Models, Table 4: 400-430 BF16 TFLOP/s per H100 on 8,192 and 16,384 GPUs.
    for check in calibration.load_external_checks():
        if check.row["model"] == "llama-3.1-405b":
            result = estimate(check.workload, check.row["gpu"], int(check.row["gpus"]))
            assert result.throughput_per_gpu == pytest.approx(check.measured_per_gpu, rel=0.15)


def test_megatron_layouts_are_predicted_in_the_right_range() -> None:
    # Narayanan et al. SC21, Table 1, on the published layouts: the model is within a factor of 1.35 at every scale
    # from 32 to 3,072 GPUs (bench/external.py prints the figures; the median miss is about 20% high).
    for check in calibration.load_external_checks():
        if check.row["source"].startswith("Narayanan"):
            ratio = calibration.layout_prediction(check) / check.measured_per_gpu
            assert 0.8 < ratio < 1.35, (check.row["model"], ratio)
