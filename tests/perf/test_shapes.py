"""The shapes users train with: pipelines whose stages do not divide the layers, FP4 precisions and packed
sequences."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planner.cli.main import app
from planner.errors import InputError
from planner.hardware import ELEMENT_BYTES, FP4_PRECISIONS, resolve_gpu, supported_precisions
from planner.perf import layout
from planner.perf.model import estimate
from planner.perf.plan import Plan, stage_layers
from planner.perf.step import throughput_with_plan
from planner.perf.workloads import get_workload
from planner.ui.estimate_state import EstimateForm, to_query
from planner.ui.workload_inputs import form_workload

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


def test_fp4_on_a_b200_beats_fp8_by_what_the_recipe_allows() -> None:
    args = ("llama-3-70b", "B200", 64)
    fp8 = estimate(*args, "fp8", stack="tuned", global_batch=128)
    nvfp4 = estimate(*args, "nvfp4", stack="tuned", global_batch=128)
    mxfp4 = estimate(*args, "mxfp4", stack="tuned", global_batch=128)
    assert fp8.throughput and nvfp4.throughput and mxfp4.throughput
    # Twice FP8's tensor-core peak, but BF16 attention, the recipe's BF16 layers and the rest of the step stay.
    assert 1.1 < nvfp4.throughput / fp8.throughput < 1.5
    assert mxfp4.throughput == nvfp4.throughput
    assert nvfp4.precision == "nvfp4"
    assert any("no FP4 run is in the fit" in line for line in nvfp4.assumptions)
    # No FP4 measurement behind it: a band at least as wide as FP8's, relative to the rate.
    fp8_width = (fp8.throughput_high - fp8.throughput_low) / fp8.throughput  # type: ignore[operator]
    fp4_width = (nvfp4.throughput_high - nvfp4.throughput_low) / nvfp4.throughput  # type: ignore[operator]
    assert fp4_width > fp8_width
    # Blackwell Ultra's FP4 is 1.5x Blackwell's; its FP8 is not.
    gb300 = estimate("llama-3-70b", "GB300", 64, "nvfp4", stack="tuned", global_batch=128)
    gb300_fp8 = estimate("llama-3-70b", "GB300", 64, "fp8", stack="tuned", global_batch=128)
    assert gb300.throughput / gb300_fp8.throughput > nvfp4.throughput / fp8.throughput  # type: ignore[operator]


def test_fp4_on_a_gpu_without_it_names_precision_and_what_is_allowed() -> None:
    with pytest.raises(InputError) as caught:
        estimate("llama-3-8b", "H100", 8, "nvfp4")
    assert caught.value.field == "precision"
    assert "fp8" in str(caught.value) and "H100-SXM" in str(caught.value)
    with pytest.raises(InputError, match="transformer"):
        estimate("resnet50", "B200", 8, "mxfp4")


def test_fp4_peaks_are_data_with_both_formats() -> None:
    b200, h100 = resolve_gpu("B200"), resolve_gpu("H100")
    assert b200.peak_tflops("nvfp4") == b200.peak_tflops("mxfp4") == 2 * b200.peak_tflops("fp8")
    assert supported_precisions(b200)[-2:] == FP4_PRECISIONS
    assert not h100.supports("nvfp4")
    assert ELEMENT_BYTES["nvfp4"] == ELEMENT_BYTES["bf16"]


def test_a_packed_bert_fine_tune_counts_real_sequences_and_beats_its_padded_twin() -> None:
    job = {"mode": "finetune", "seq_len": 384, "global_batch": 256}
    padded = estimate("bert-large", "A100-80GB", 8, "fp16", tokens_per_sequence=180, **job)
    packed = estimate("bert-large", "A100-80GB", 8, "fp16", packed=True, tokens_per_sequence=180, **job)
    assert padded.throughput and packed.throughput and padded.time_to_solution_hours
    assert packed.throughput_unit == "sequences/s"
    # Typical BERT scripts run eager attention, the whole masked 384 x 384 matrix: the same steps, each with 384/180
    # real sequences in every packed row.
    assert packed.throughput / padded.throughput == pytest.approx(384 / 180, rel=1e-9)
    assert packed.time_to_solution_hours == pytest.approx(padded.time_to_solution_hours * 180 / 384, rel=1e-9)
    assert any(line.startswith("packed sequences: 2.13 samples") for line in packed.assumptions)
    # Fused attention (NVIDIA's tuned BERT) runs per sample: the sum of the samples' squared lengths.
    tuned = {**job, "stack": "tuned"}
    tuned_padded = estimate("bert-large", "H100", 8, "bf16", tokens_per_sequence=180, **tuned)
    tuned_packed = estimate("bert-large", "H100", 8, "bf16", packed=True, padding_share=1 - 180 / 384, **tuned)
    assert tuned_packed.throughput / tuned_padded.throughput > 384 / 180  # type: ignore[operator]
    # Memory holds sequences of the packed length either way.
    assert packed.memory_per_gpu_gib == padded.memory_per_gpu_gib


def test_packed_llm_fine_tuning_counts_real_tokens() -> None:
    job = {"mode": "finetune", "seq_len": 4096, "tokens": 1e8}
    plain = estimate("llama-3-8b", "H100", 8, **job)
    padded = estimate("llama-3-8b", "H100", 8, tokens_per_sequence=600, **job)
    packed = estimate("llama-3-8b", "H100", 8, packed=True, tokens_per_sequence=600, **job)
    assert plain.throughput and padded.throughput and packed.throughput
    # Padded, 600 of every 4,096 tokens computed are real.
    assert padded.throughput == pytest.approx(plain.throughput * 600 / 4096, rel=1e-9)
    # Packed, every token is real and attention spans 600 keys, not 4,096.
    assert plain.throughput < packed.throughput < plain.throughput * 1.5
    assert packed.time_to_solution_hours < plain.time_to_solution_hours  # type: ignore[operator]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"packed": True}, "packed"),
        ({"tokens_per_sequence": 500}, "tokens_per_sequence"),
        ({"padding_share": 1.0}, "padding_share"),
        ({"tokens_per_sequence": 100, "padding_share": 0.5}, "padding_share"),
        ({"packed": "yes", "tokens_per_sequence": 100}, "packed"),
    ],
)
def test_packing_input_errors_name_their_field(fields: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as caught:
        estimate("bert-base", "A100", 1, seq_len=384, **fields)
    assert caught.value.field == field


def test_packing_does_not_apply_to_images() -> None:
    with pytest.raises(InputError) as caught:
        estimate("resnet50", "A100", 1, tokens_per_sequence=100)
    assert caught.value.field == "tokens_per_sequence"


def test_the_cli_packs_sequences() -> None:
    def throughput(*flags: str) -> float:
        result = CliRunner().invoke(
            app,
            [
                "estimate",
                "-w",
                "bert-large",
                "-g",
                "A100-80GB",
                "-n",
                "8",
                "--mode",
                "finetune",
                "--seq-len",
                "384",
                "-f",
                "json",
                *flags,
            ],
        )
        assert result.exit_code == 0, result.output
        return float(json.loads(result.output)["throughput"])

    padded = throughput("--tokens-per-sequence", "180")
    assert throughput("--packed", "--tokens-per-sequence", "180") == pytest.approx(padded * 384 / 180, rel=1e-9)


def test_the_app_forms_carry_packing_to_the_workload() -> None:
    form = EstimateForm(workload="bert-large", mode="finetune", seq_len=384, tokens_per_sequence=180.0, packed=True)
    built = form_workload(form)
    assert built.packed and built.tokens_per_sequence == 180.0
    assert to_query(form) | {"real_tokens": "180", "packed": "1"} == to_query(form)
    assert not form_workload(EstimateForm()).packed
