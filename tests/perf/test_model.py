"""Properties of the performance model that must hold whatever the fitted coefficients."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import InputError
from planner.hardware import resolve_gpu
from planner.perf.model import Estimate, estimate
from planner.perf.params import default_params
from planner.perf.plan import Plan
from planner.perf.step import attention_matmul_passes, throughput_with_plan
from planner.perf.workloads import WORKLOADS, Workload, get_workload

DATACENTER = [
    "V100-16GB",
    "T4",
    "A10G",
    "L4",
    "A100-40GB",
    "A100-80GB",
    "L40S",
    "H100-SXM",
    "H100-PCIe",
    "H200",
    "B200",
]


@pytest.mark.parametrize("workload", ["resnet50", "bert-large", "mpt-7b", "llama-2-13b"])
@pytest.mark.parametrize("gpu", ["A100-80GB", "H100-SXM", "L40S"])
def test_more_gpus_in_one_node_never_lower_total_throughput(workload: str, gpu: str) -> None:
    # Counts that do not fit have no throughput (None); from the first that fits, more GPUs never slow the job.
    rates = [r for r in (estimate(workload, gpu, n).throughput for n in (1, 2, 4, 8)) if r is not None]
    assert rates, "fits on at least 8 GPUs"
    assert all(b >= a * 0.999 for a, b in itertools.pairwise(rates)), rates


@pytest.mark.parametrize("workload", ["mpt-7b", "llama-2-7b", "bert-large"])
def test_faster_gpu_is_not_slower_on_compute_bound_work(workload: str) -> None:
    order = ["V100-32GB", "A100-80GB", "H100-SXM", "B200"]
    rates = [estimate(workload, gpu, 8, "fp16").throughput for gpu in order]
    assert rates == sorted(rates), dict(zip(order, rates, strict=True))


def test_h100_over_a100_on_resnet50_tracks_bandwidth_not_flops() -> None:
    ratio = (
        estimate("resnet50", "H100-SXM", 1, "fp16").throughput / estimate("resnet50", "A100-80GB", 1, "fp16").throughput
    )
    assert 1.4 < ratio < 2.2


def test_fp8_gain_over_bf16_is_well_below_two() -> None:
    ratio = estimate("llama-2-7b", "H100-SXM", 8, "fp8").throughput / estimate("llama-2-7b", "H100-SXM", 8).throughput
    assert 1.05 < ratio < 1.6


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(4, 48), hidden_units=st.integers(4, 48))
def test_memory_grows_with_parameters(layers: int, hidden_units: int) -> None:
    hidden = hidden_units * 128
    small = get_workload("transformer", layers=layers, hidden=hidden, seq_len=2048)
    large = get_workload("transformer", layers=layers * 2, hidden=hidden, seq_len=2048)
    a = estimate(small, "H100-SXM", 1, batch_per_gpu=1)
    b = estimate(large, "H100-SXM", 1, batch_per_gpu=1)
    assert large.params > small.params
    assert b.memory_per_gpu_gib > a.memory_per_gpu_gib


@settings(max_examples=30, deadline=None)
@given(
    workload=st.sampled_from(sorted(WORKLOADS)),
    gpu=st.sampled_from(DATACENTER),
    gpus=st.sampled_from([1, 2, 8, 16, 64]),
    tokens=st.floats(1e6, 1e12),
)
def test_time_equals_work_over_throughput(workload: str, gpu: str, gpus: int, tokens: float) -> None:
    result = estimate(workload, gpu, gpus, "fp16", work=tokens)
    assert result.work == pytest.approx(tokens)
    if result.throughput is None:
        # Does not fit: no number as if it ran, and the reason with the GPU count that would fit.
        assert not result.fits_in_memory and result.why_not_fits
        assert result.time_to_solution_hours is None and result.mfu is None and result.energy_kwh is None
        return
    assert result.time_to_solution_hours == pytest.approx(tokens / result.throughput / 3600.0, rel=1e-9)
    assert result.throughput_low < result.throughput < result.throughput_high
    assert 0 < result.mfu < 1
    assert result.energy_kwh > 0
    assert result.nodes == math.ceil(gpus / 8)


def test_cnn_mfu_counts_two_flops_per_multiply_add() -> None:
    # ResNet-50 v1.5 is 4.1 G multiply-adds forward (He et al. call them FLOPs): 8.2 GFLOP, 24.6 per training image.
    assert WORKLOADS["resnet50"].flops_per_sample == pytest.approx(3 * 2 * 4.1e9)
    result = estimate("resnet50", "A100-80GB", 8, "fp16")
    assert result.throughput is not None and result.mfu is not None
    assert result.mfu == pytest.approx(result.throughput * 24.6e9 / (8 * 312e12), rel=1e-6)


def test_default_work_is_twenty_tokens_per_parameter() -> None:
    result = estimate("llama-2-7b", "H100", 8)
    assert result.work == pytest.approx(20 * WORKLOADS["llama-2-7b"].params)
    assert result.throughput_unit == "tokens/s"
    assert estimate("resnet50", "A100-80GB").throughput_unit == "images/s"
    assert estimate("bert-base", "A100-80GB").throughput_unit == "sequences/s"


def test_model_that_does_not_fit_reports_why_and_minimum_gpus() -> None:
    result = estimate("llama-2-70b", "A100-80GB", 1)
    assert isinstance(result, Estimate)
    assert result.fits_in_memory is False
    assert result.why_not_fits and "GiB" in result.why_not_fits
    assert result.min_gpus_to_fit is not None and result.min_gpus_to_fit > 1
    bigger = estimate("llama-2-70b", "A100-80GB", result.min_gpus_to_fit)
    assert bigger.fits_in_memory


def test_lora_needs_less_memory_than_full_finetuning() -> None:
    full = estimate("llama-2-7b", "A100-80GB", 1, mode="finetune", batch_per_gpu=1)
    lora = estimate("llama-2-7b", "A100-80GB", 1, mode="lora", batch_per_gpu=1)
    assert lora.memory_per_gpu_gib < full.memory_per_gpu_gib / 2
    assert lora.fits_in_memory and not full.fits_in_memory


def test_the_lora_share_sets_what_carries_optimizer_state() -> None:
    # Adam's 16 bytes per trained parameter: a 1% share of Llama-2-7B holds 16 x 67M bytes, a 0.1% share a tenth.
    def gib(share: float | None) -> float:
        return estimate(
            "llama-2-7b", "A100-80GB", 1, mode="lora", batch_per_gpu=1, trainable_share=share
        ).memory_per_gpu_gib

    params = get_workload("llama-2-7b").params
    assert gib(None) == pytest.approx(gib(0.01))
    assert gib(0.01) - gib(0.001) == pytest.approx(16 * params * 0.009 / 2**30, rel=1e-6)
    # Full training trains every parameter: a share there is refused, one line naming the field.
    with pytest.raises(InputError, match="applies to lora only") as error:
        estimate("llama-2-7b", "A100-80GB", 1, mode="finetune", trainable_share=0.01)
    assert error.value.field == "trainable_share"


def test_a_distributed_optimizer_does_not_shard_lora_s_frozen_weights() -> None:
    # Only what trains has optimizer state to split; each rank holds its tensor/pipeline share of the frozen model
    # (short sequences: the activations are small beside it).
    lora = estimate("llama-2-70b", "H100-SXM", 8, "bf16", mode="lora", stack="tuned", seq_len=512, global_batch=8)
    layout = lora.parallelism
    frozen_gib = get_workload("llama-2-70b").params * 2.0 / (layout["tensor"] * layout["pipeline"]) / 2**30
    assert lora.fits_in_memory and lora.memory_per_gpu_gib > frozen_gib


def test_nvidia_s_fp8_lora_recipe_keeps_the_frozen_weights_in_fp8() -> None:
    # NeMo's MLPerf Llama-2-70B LoRA configs set fp8_params with FP8: one byte per frozen weight, not two.
    def memory(precision: str) -> tuple[float, dict[str, object]]:
        result = estimate("llama-2-70b", "B200", 8, precision, mode="lora", stack="tuned", seq_len=8192, global_batch=8)
        return result.memory_per_gpu_gib, result.parallelism

    (fp8, fp8_layout), (bf16, bf16_layout) = memory("fp8"), memory("bf16")
    assert fp8_layout["tensor"] == bf16_layout["tensor"] and fp8_layout["pipeline"] == bf16_layout["pipeline"]
    shards = int(str(fp8_layout["tensor"])) * int(str(fp8_layout["pipeline"]))
    assert bf16 - fp8 == pytest.approx(get_workload("llama-2-70b").params / shards / 2**30, rel=0.01)


def test_multi_node_uses_the_network() -> None:
    fast = estimate("llama-2-7b", "H100-SXM", 64, network_gbps=3200)
    slow = estimate("llama-2-7b", "H100-SXM", 64, network_gbps=100)
    assert fast.nodes == 8
    assert slow.throughput < fast.throughput
    assert slow.throughput_per_gpu < estimate("llama-2-7b", "H100-SXM", 8).throughput_per_gpu


def test_efficiency_sets_the_mfu_and_measured_rescales() -> None:
    mine = estimate("llama-2-7b", "A100-80GB", 8, efficiency=0.2)
    assert mine.mfu == pytest.approx(0.2)
    model_a100 = estimate("llama-2-7b", "A100-80GB", 2, batch_per_gpu=1).throughput
    assert model_a100 is not None
    rescaled = estimate(
        "llama-2-7b", "H100-SXM", 2, batch_per_gpu=1, measured=model_a100 / 2, measured_on="A100-80GB:2"
    )
    plain = estimate("llama-2-7b", "H100-SXM", 2, batch_per_gpu=1).throughput
    assert plain is not None
    assert rescaled.throughput == pytest.approx(plain / 2, rel=0.02)
    with pytest.raises(InputError, match="does not fit there"):
        estimate("llama-2-7b", "H100-SXM", 2, measured=100.0, measured_on="A100-80GB:1")


def test_result_is_plain_python() -> None:
    data = estimate("mpt-7b", "H100", 16).to_dict()
    for key in ("throughput", "step_time_s", "time_to_solution_hours", "memory_per_gpu_gib", "mfu", "energy_kwh"):
        assert type(data[key]) is float
    assert type(data["fits_in_memory"]) is bool
    assert all(isinstance(item, str) for item in data["assumptions"])


def test_bf16_on_a_gpu_without_it_falls_back_to_fp16_with_a_note() -> None:
    result = estimate("bert-base", "V100", 1, "bf16")
    assert result.precision == "fp16"
    assert any("BF16" in note for note in result.assumptions)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"workload": "mpt-7b", "gpu": "V100", "precision": "fp8"}, "fp8"),
        ({"workload": "mpt-7b", "gpu": "H100", "gpus": 0}, "gpus"),
        ({"workload": "mpt-7b", "gpu": "H100", "gpus": -3}, "gpus"),
        ({"workload": "mpt-7b", "gpu": "H100", "precision": "int4"}, "precision"),
        ({"workload": "nope", "gpu": "H100"}, "unknown workload"),
        ({"workload": "mpt-7b", "gpu": "H900"}, "unknown GPU"),
        ({"workload": "mpt-7b", "gpu": "H100", "seq_len": 0}, "seq_len"),
        ({"workload": "mpt-7b", "gpu": "H100", "interconnect": "ethernet"}, "interconnect"),
        ({"workload": "mpt-7b", "gpu": "H100", "efficiency": 1.5}, "efficiency"),
        ({"workload": "mpt-7b", "gpu": "H100", "measured": 100.0}, "measured"),
        ({"workload": "resnet50", "gpu": "H100", "seq_len": 128}, "seq_len"),
        ({"workload": "transformer", "gpu": "H100", "hidden": 1024}, "layers"),
        ({"workload": "mpt-7b", "gpu": "H100", "batch_per_gpu": 8, "global_batch": 4}, "global_batch"),
        ({"workload": "resnet50", "gpu": "H100", "mode": "lora"}, "mode"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        estimate(**kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert field in message
    assert "\n" not in message


def test_custom_transformer_derives_parameters() -> None:
    custom = get_workload("transformer", layers=32, hidden=4096, seq_len=4096, vocab=32000)
    assert isinstance(custom, Workload)
    assert custom.params == pytest.approx(12 * 32 * 4096**2 + 32000 * 4096)
    assert estimate(custom, "H100", 8).throughput > 0


def test_accepted_gpu_names() -> None:
    names = ["V100", "V100-16GB", "V100-32GB", "V100-PCIe", "T4", "A10G", "A10", "L4", "L40S", "A100-40GB"]
    names += ["A100-80GB", "A100-PCIe-80GB", "H100", "H100-SXM", "H100-PCIe", "H100-NVL", "H200", "GH200", "B200"]
    for name in names:
        assert estimate("bert-base", name, 1, "fp16").throughput > 0, name


def test_public_api_and_cache_safety() -> None:
    import planner

    first = planner.estimate("mpt-7b", "H100", 8, "bf16", gpus_per_node=8, interconnect="nvswitch")
    assert isinstance(first, planner.Estimate)
    first.assumptions.append("changed by the caller")
    again = planner.estimate("mpt-7b", "H100", 8, "bf16", gpus_per_node=8, interconnect="nvswitch")
    assert "changed by the caller" not in again.assumptions
    assert again.throughput == first.throughput


def test_small_micro_batches_are_launch_bound_large_ones_compute_bound() -> None:
    # The host issues a layer's kernels at a fixed cost: below that, a bigger micro-batch is free throughput;
    # above it, step time grows with the work.
    wl = Workload(
        name="gpt-small", kind="decoder", params=125e6, layers=12, hidden=768, heads=12, vocab=50257, seq_len=1024
    )
    spec = resolve_gpu("B200")

    def step_s(micro: int) -> float:
        plan = Plan(micro_batch=micro, global_batch=micro)
        return micro * wl.seq_len / throughput_with_plan(wl, spec, "bf16", plan)

    floor = wl.layers * default_params().comm["host_layer_s"]
    assert step_s(1) == pytest.approx(floor, rel=1e-6)
    assert step_s(2) == pytest.approx(floor, rel=1e-6)
    assert step_s(256) > 4 * floor
    assert step_s(512) == pytest.approx(2 * step_s(256), rel=0.05)


@pytest.mark.parametrize(
    ("workload", "alias", "ok"),
    [
        ("resnet50", "images", True),
        ("resnet50", "tokens", False),
        ("resnet50", "sequences", False),
        ("resnet50", "samples", True),
        ("bert-base", "sequences", True),
        ("bert-base", "tokens", False),
        ("llama-3-8b", "tokens", True),
        ("llama-3-8b", "images", False),
        ("llama-3-8b", "work", True),
    ],
)
def test_the_amount_of_work_is_named_in_the_workloads_own_unit(workload: str, alias: str, ok: bool) -> None:
    """One alias table for every entry point: a unit that does not match the workload is refused, never reread."""
    from planner.api import rank
    from planner.perf.workloads import resolve_workload

    if ok:
        assert resolve_workload(workload, **{alias: 1e6}).total_work() == 1e6
        assert estimate(workload, "A100-80GB", 8, "fp16", **{alias: 1e6}).work == 1e6
        return
    for call in (
        lambda: resolve_workload(workload, **{alias: 1e6}),
        lambda: estimate(workload, "A100-80GB", 8, "fp16", **{alias: 1e6}),
        lambda: rank(workload, **{alias: 1e6}),
    ):
        with pytest.raises(InputError) as caught:
            call()
        assert caught.value.field == alias
        assert "counts its work in" in str(caught.value)


def test_a_global_batch_without_a_divisor_near_the_default_micro_batch_runs_in_large_micro_batches() -> None:
    # 172 = 4 x 43: the divisors below the default micro-batch (42 sequences of 384 tokens) stop at 4, which would
    # run 43 launch-bound micro-batches; Lambda's BERT-base runs the 172 in one pass on an 80 GB A100.
    result = estimate("bert-base", "A100-80GB", 1, "tf32", seq_len=384, global_batch=172)
    assert result.parallelism["micro_batch"] >= 43
    assert result.parallelism["global_batch"] == 172
    small = estimate("bert-base", "A100-80GB", 1, "tf32", seq_len=384, global_batch=168)
    assert result.throughput_per_gpu is not None and small.throughput_per_gpu is not None
    assert result.throughput_per_gpu > 0.8 * small.throughput_per_gpu


def test_eager_attention_scores_stream_through_memory_in_typical_bert_scripts() -> None:
    # Typical BERT scripts run eager attention: each head's seq x seq scores go through HBM, so their element-wise
    # traffic per token grows with the sequence. FlashAttention decoders and NVIDIA's fused (tuned) BERT keep the
    # scores on chip. All of it moves at the matmul precision: FP16 halves the traffic of TF32, as Lambda's TF32/FP16
    # speed ratio (0.46-0.49 on every GPU, whatever its memory-to-compute balance) says.
    from planner.perf.step import sample_time

    spec = resolve_gpu("A100-80GB")

    def memory_per_token(workload: Workload, precision: str) -> float:
        return sample_time(workload, spec, precision, 8, 1, False, fitted=default_params())[1] / (8 * workload.seq_len)

    def bert(seq: int, stack: str = "typical") -> Workload:
        return get_workload("bert-large", seq_len=seq, stack=stack)

    assert memory_per_token(bert(512), "fp16") > 1.5 * memory_per_token(bert(128), "fp16")
    assert memory_per_token(bert(512, "tuned"), "fp16") == pytest.approx(memory_per_token(bert(128, "tuned"), "fp16"))
    decoder = get_workload("mpt-7b")
    short = get_workload("mpt-7b", seq_len=decoder.seq_len // 4)
    assert memory_per_token(decoder, "bf16") == pytest.approx(memory_per_token(short, "bf16"))
    for workload in (bert(384), bert(384, "tuned"), decoder):
        assert memory_per_token(workload, "fp16") == pytest.approx(memory_per_token(workload, "tf32") / 2)


def test_ampere_kernels_pay_a_toll_after_ada_only_where_a_typical_stack_runs_them() -> None:
    # FlashAttention-2 (typical decoders) was written for Ampere and reaches about 0.6 of its Ampere share on Hopper
    # and Blackwell; a typical stack's tensor-core convolutions show the same gap (Lambda's ResNet-50). Eager attention
    # (typical BERT scripts) is cuBLAS batched GEMMs, native to every GPU; FP32 convolutions run on the CUDA cores;
    # the tuned stacks are native. The note says so only where the toll applies.
    def ampere_note(workload: str, gpu: str, stack: str = "typical", precision: str = "bf16") -> bool:
        result = estimate(get_workload(workload, stack=stack), gpu, 8, precision)
        return any("written for Ampere" in line for line in result.assumptions)

    for workload in ("mpt-7b", "resnet50"):
        assert ampere_note(workload, "H100-SXM") and ampere_note(workload, "B200")
        assert not ampere_note(workload, "A100-80GB") and not ampere_note(workload, "H100-SXM", "tuned")
    assert not ampere_note("bert-large", "H100-SXM") and not ampere_note("bert-large", "B200")
    assert not ampere_note("resnet50", "H100-SXM", precision="fp32")

    from planner.perf.step import sample_time

    hopper = resolve_gpu("H100-SXM")

    def toll(workload: str, precision: str = "bf16") -> float:
        # The H100's compute time over the same GPU's with the toll lifted (an architecture it does not apply to).
        native = dataclasses.replace(hopper, architecture="ada")
        return (
            sample_time(get_workload(workload), hopper, precision, 8, 1, False, fitted=default_params())[0]
            / sample_time(get_workload(workload), native, precision, 8, 1, False, fitted=default_params())[0]
        )

    assert toll("bert-large") == pytest.approx(1.0)
    assert toll("resnet50", "fp32") == pytest.approx(1.0)
    assert toll("mpt-7b") > 1.02
    assert toll("resnet50") > 1.1


def test_eager_attention_holds_its_scores_for_backward_in_typical_bert_scripts() -> None:
    # Eager attention keeps each head's softmax output, dropout mask and dropout output (2 + 1 + 2 bytes per score
    # in FP16; Korthikanti et al.'s 5as/h term): per token it grows with the sequence. FlashAttention and NVIDIA's
    # fused BERT recompute them instead. Lambda sized its BERT batches to memory; with this term they sit at
    # estimate()'s one-pass limit (bench/memory.py), without it the model let 1.5x as many sequences fit.
    from planner.perf.memory import memory_bytes

    def activations_per_token(seq: int, stack: str) -> float:
        workload = get_workload("bert-large", seq_len=seq, stack=stack, mode="finetune")
        # Seven more sequences per micro-batch: the model state cancels out.
        one = memory_bytes(workload, "fp16", Plan(micro_batch=1, global_batch=1), default_params())
        return (memory_bytes(workload, "fp16", Plan(micro_batch=8, global_batch=8), default_params()) - one) / (7 * seq)

    assert activations_per_token(1024, "typical") > 1.5 * activations_per_token(256, "typical")
    assert activations_per_token(1024, "tuned") == pytest.approx(activations_per_token(256, "tuned"), rel=1e-6)


def test_a_fine_tuned_encoder_holds_no_vocabulary_logits() -> None:
    # SQuAD or GLUE fine-tuning puts a head of a few outputs per token on BERT, not the masked-LM vocabulary.
    from planner.perf.memory import memory_bytes

    plan = Plan(micro_batch=32, global_batch=32)
    pretrain = get_workload("bert-large", mode="pretrain")
    finetune = get_workload("bert-large", mode="finetune", seq_len=pretrain.seq_len)
    logits = 32 * pretrain.seq_len * pretrain.vocab * 4.0
    assert memory_bytes(pretrain, "fp16", plan, default_params()) - memory_bytes(
        finetune, "fp16", plan, default_params()
    ) == pytest.approx(logits)


def test_an_estimate_says_when_the_host_not_the_gpu_sets_the_pace() -> None:
    # Eight BERT-Base sequences per step on a B200: eager PyTorch's launches, not the GPU, set the pace.
    small = estimate("bert-base", "B200", 1, "bf16", global_batch=8)
    assert any("paced by the host's kernel launches" in line for line in small.assumptions)
    large = estimate("bert-base", "B200", 1, "bf16", global_batch=256)
    assert not any("paced" in line for line in large.assumptions)
    # NVIDIA's tuned ResNet-50 recipe on a B200 waits for its input pipeline (MLPerf: an H200 is only 1.1x an H100).
    tuned = estimate(get_workload("resnet50", stack="tuned"), "B200", 8, "fp16")
    assert any("paced by the input pipeline" in line for line in tuned.assumptions)


def test_evaluations_add_forward_passes_to_the_time_to_solution() -> None:
    plain = estimate("resnet50", "H100-SXM", 8, "bf16")
    evaluated = estimate(get_workload("resnet50", evaluations=30, eval_samples=50_000), "H100-SXM", 8, "bf16")
    assert plain.time_to_solution_hours and evaluated.time_to_solution_hours and plain.energy_kwh
    assert evaluated.throughput == plain.throughput  # the training rate is the training rate
    extra = evaluated.time_to_solution_hours - plain.time_to_solution_hours
    # 1.5M evaluated images, each a third of a trained one, against 115M trained: a little less where training waits
    # on its gradient all-reduce and evaluation does not.
    expected = plain.time_to_solution_hours * 30 * 50_000 / plain.work / 3
    assert 0.8 * expected < extra <= expected * 1.0001
    assert evaluated.energy_kwh and evaluated.energy_kwh > plain.energy_kwh
    assert any(line.startswith("evaluation: 30 passes of 50000 samples") for line in evaluated.assumptions)
    # Half a schedule is refused, naming the half that is missing.
    with pytest.raises(InputError, match="must be given, above zero, with eval_samples") as error:
        get_workload("resnet50", eval_samples=1000)
    assert error.value.field == "evaluations"


def test_fused_attention_recomputes_its_scores_in_backward_and_mfu_does_not_count_it() -> None:
    """FlashAttention-class kernels (decoders, tuned recipes) run 3.5 forward passes of attention matmuls in a step,
    eager BERT attention 3; the MFU a user reads keeps the 3-pass convention for both."""
    decoder, bert = get_workload("llama-3-8b"), get_workload("bert-large")
    assert bert.eager_attention and not decoder.eager_attention
    assert attention_matmul_passes(decoder, recompute=False) == 3.5
    assert attention_matmul_passes(decoder, recompute=True) == 4.5
    assert attention_matmul_passes(bert, recompute=False) == 3.0
    assert attention_matmul_passes(dataclasses.replace(bert, stack="tuned"), recompute=False) == 3.5
    # A longer sequence adds attention work that MFU counts at 3 passes: at four times the context a token has the
    # FLOPs the convention gives it, not the kernel's.
    short, long = (estimate(dataclasses.replace(decoder, seq_len=s), "H100", 8, "bf16") for s in (2048, 8192))
    assert short.mfu is not None and long.mfu is not None
    per_token = {s: 6 * decoder.params + 3 * 4 * decoder.layers * decoder.hidden * s for s in (2048, 8192)}
    flops_ratio = (long.mfu / long.throughput_per_gpu) / (short.mfu / short.throughput_per_gpu)
    assert flops_ratio == pytest.approx(per_token[8192] / per_token[2048], rel=1e-6)
