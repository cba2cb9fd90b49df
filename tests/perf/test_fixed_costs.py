"""Fixed costs across nodes: every step's, and every evaluation pass's, whatever its size (issue 39: a few-minute run
on dozens of nodes came out far too fast)."""

from __future__ import annotations

import pytest

from planner.perf.model import Estimate, estimate
from planner.perf.params import PerfParams, default_params

LORA = {"mode": "lora", "tokens": 128 * 8192 * 100, "global_batch": 128, "stack": "tuned"}


def _without(*keys: str) -> PerfParams:
    document = default_params().to_dict()
    for key in keys:
        document["comm"][key] = 0.0
    return PerfParams.from_dict(document)


def _hours(result: Estimate) -> float:
    assert result.time_to_solution_hours is not None
    return result.time_to_solution_hours


def test_the_bundled_fit_states_both_fixed_costs() -> None:
    comm = default_params().comm
    assert 1e-3 <= comm["step_fixed_s"] <= 1e-2
    assert 0.1 <= comm["eval_fixed_s"] <= 10.0


def test_a_short_run_on_dozens_of_nodes_pays_each_evaluation_pass_a_fixed_cost() -> None:
    # Llama-2-70B LoRA on 32 nodes of H100s, ten passes over 173 sequences: a few minutes in all.
    asked = {**LORA, "evaluations": 10, "eval_samples": 173}
    with_costs = estimate("llama-2-70b", "H100-SXM", 256, **asked)
    without = estimate("llama-2-70b", "H100-SXM", 256, perf_params=_without("eval_fixed_s"), **asked)
    assert with_costs.nodes == 32 and _hours(with_costs) * 60 < 15
    assert (_hours(with_costs) - _hours(without)) * 3600 == pytest.approx(10 * default_params().comm["eval_fixed_s"])
    # The passes' own work is unchanged: the difference is the fixed cost alone.
    assert with_costs.throughput == without.throughput


def test_one_node_pays_no_fixed_cost_per_pass_or_step() -> None:
    asked = {**LORA, "evaluations": 10, "eval_samples": 173}
    one_node = estimate("llama-2-70b", "H100-SXM", 8, **asked)
    plain = estimate("llama-2-70b", "H100-SXM", 8, perf_params=_without("eval_fixed_s", "step_fixed_s"), **asked)
    assert one_node.time_to_solution_hours == plain.time_to_solution_hours
    assert one_node.step_time_s == plain.step_time_s


def test_every_step_across_nodes_pays_a_fixed_cost() -> None:
    # ResNet-50 on 316 nodes steps every few milliseconds: the fixed cost is most of what the model lacked.
    fixed = default_params().comm["step_fixed_s"]
    wide = estimate("resnet50", "H100-SXM", 2528, stack="tuned", global_batch=40448)
    plain = estimate(
        "resnet50", "H100-SXM", 2528, stack="tuned", global_batch=40448, perf_params=_without("step_fixed_s")
    )
    assert wide.step_time_s is not None and plain.step_time_s is not None
    assert wide.step_time_s - plain.step_time_s == pytest.approx(fixed)
    assert wide.step_time_s > 1.5 * plain.step_time_s


def test_recipes_that_evaluate_inside_the_training_loop_pay_only_their_samples() -> None:
    # NVIDIA's tuned ResNet-50 keeps its evaluation set on the GPUs: 0.06 s a pass on 316 nodes (MLPerf v4.0).
    asked = {"stack": "tuned", "global_batch": 40448, "evaluations": 18, "eval_samples": 50000}
    tuned = estimate("resnet50", "H100-SXM", 2528, **asked)
    plain = estimate("resnet50", "H100-SXM", 2528, perf_params=_without("eval_fixed_s"), **asked)
    assert tuned.time_to_solution_hours == plain.time_to_solution_hours
    typical = {**asked, "stack": "typical"}
    assert _hours(estimate("resnet50", "H100-SXM", 2528, **typical)) > _hours(
        estimate("resnet50", "H100-SXM", 2528, perf_params=_without("eval_fixed_s"), **typical)
    )


def test_the_evaluation_note_names_the_fixed_cost_per_pass() -> None:
    asked = {**LORA, "evaluations": 10, "eval_samples": 173}
    note = next(a for a in estimate("llama-2-70b", "H100-SXM", 256, **asked).assumptions if a.startswith("evaluation:"))
    assert "1 s a pass across nodes, whatever its size" in note
    one_node = estimate("llama-2-70b", "H100-SXM", 8, **asked).assumptions
    assert not any("a pass across nodes" in a for a in one_node)
