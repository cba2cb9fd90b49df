"""The shapes users train with: pipelines whose stages do not divide the layers, FP4 precisions and packed
sequences."""

from __future__ import annotations

import pytest

from planner.hardware import resolve_gpu
from planner.perf import layout
from planner.perf.model import estimate
from planner.perf.plan import Plan, stage_layers
from planner.perf.step import throughput_with_plan
from planner.perf.workloads import get_workload

LLAMA_405B = get_workload("llama-3.1-405b", stack="tuned")


def test_the_busiest_rank_of_an_uneven_pipeline_sets_the_step() -> None:
    # 126 layers over 8 stages: ranks of 15 and 16 layers; in 64 chunks of 1 or 2 layers, 8 chunks a rank.
    assert stage_layers(126, 8) == 16
    assert stage_layers(126, 8, 8) == 16
    assert stage_layers(126, 9, 7) == 14
    assert stage_layers(126, 1) == 126
    b200 = resolve_gpu("B200")
    even = get_workload("llama-3.1-405b", layers=128, params=405e9 * 128 / 126, stack="tuned")
    plan = Plan(tp=4, pp=8, dp=2, cp=2, vp=8, micro_batch=1, global_batch=64)
    # 126 layers take the step of 128 of the same size split evenly: the busiest rank holds 16 either way.
    uneven_rate = throughput_with_plan(LLAMA_405B, b200, "fp8", plan)
    even_rate = throughput_with_plan(even, b200, "fp8", plan)
    # (only the gradient sync of the larger model's weights differs); split as 15.75 layers a rank it was 1.6% faster.
    assert uneven_rate == pytest.approx(even_rate, rel=0.005)


def test_a_126_layer_model_over_8_stages_is_searched_interleaved() -> None:
    plans = layout.candidate_plans(LLAMA_405B, 128, 8)
    eight = {p.vp for p in plans if p.pp == 8}
    assert eight == {4}
    # Through estimate(), as a user asks it: a pipelined, interleaved layout (NVIDIA runs pp 8, vp 8).
    found = estimate("llama-3.1-405b", "B200", 128, "fp8", stack="tuned", global_batch=64)
    assert found.parallelism["pipeline"] > 1
    assert found.parallelism["interleaved_stages"] > 1
    assert not found.parallelism["sharded"]
