"""Limits no estimate may cross, whatever the fitted coefficients: no step above the GPUs' measured matmul ceiling,
no speed-up a recipe was never measured to give, more memory or a better GPU never slower for the same layout
search, and a pipeline pays for its stage-to-stage traffic."""

from __future__ import annotations

import itertools

import pytest
from factories import data_rows

from planner.errors import InputError
from planner.hardware import gpu_table, resolve_gpu
from planner.perf.ceilings import operand_feed, sm_tensor_rates, sustained_matmul
from planner.perf.model import estimate
from planner.perf.params import default_params
from planner.perf.step import sample_time
from planner.perf.workloads import get_workload

GPUS = ["V100-16GB", "T4", "A10G", "L4", "A100-80GB", "L40S", "H100-SXM", "H200", "B200", "RTX-4090"]
JOBS = [
    ("resnet50", "fp16", {}),
    ("resnet50", "fp32", {"stack": "tuned"}),
    ("resnet50", "tf32", {"stack": "tuned"}),
    ("bert-large", "fp16", {}),
    ("bert-large", "fp32", {"stack": "tuned"}),
    ("llama-2-7b", "bf16", {"stack": "tuned"}),
    ("llama-2-13b", "bf16", {"stack": "tuned"}),
    ("mpt-7b", "bf16", {}),
]


# Every GPU with every job in a precision it has.
CASES = [
    (gpu, job, gpus)
    for gpu, job, gpus in itertools.product(GPUS, JOBS, (1, 8, 64))
    if resolve_gpu(gpu).supports(job[1])
]


@pytest.mark.parametrize(("gpu", "job", "gpus"), CASES)
def test_no_estimate_runs_above_the_measured_matmul_ceiling(gpu: str, job: tuple, gpus: int) -> None:
    workload, precision, options = job
    spec = resolve_gpu(gpu)
    result = estimate(workload, gpu, gpus, precision, **options)
    if result.mfu is None:
        return
    ceiling = sustained_matmul(spec, result.precision)[0] / spec.peak_tflops(result.precision)
    assert result.mfu <= ceiling * 1.001, (result.mfu, ceiling)


@pytest.mark.parametrize(
    ("gpu", "precision"),
    [("A100-80GB", "fp32"), ("A100-80GB", "tf32"), ("V100-16GB", "fp32"), ("B200", "fp32"), ("H100-SXM", "fp32")],
)
def test_the_tuned_cnn_recipe_is_no_faster_in_full_precision(gpu: str, precision: str) -> None:
    # Its speed-up was measured in mixed precision (MLPerf); NVIDIA's own FP32/TF32 tables show none. (In TF32 on
    # Hopper and Blackwell the typical stack's tensor-core convolutions pay the Ampere-kernel toll, which the tuned,
    # Hopper-native recipe does not: there the tuned stack is faster for that reason alone.)
    tuned = estimate("resnet50", gpu, 1, precision, stack="tuned")
    typical = estimate("resnet50", gpu, 1, precision)
    assert tuned.throughput is not None and typical.throughput is not None
    assert tuned.throughput <= typical.throughput * 1.001
    assert any("not applied" in line for line in tuned.assumptions)


def test_fp8_is_refused_for_a_cnn() -> None:
    with pytest.raises(InputError) as caught:
        estimate("resnet50", "H100", 8, "fp8")
    assert caught.value.field == "precision" and "transformer workloads" in str(caught.value)


def test_fp32_attention_pays_no_ampere_kernel_toll_on_hopper() -> None:
    hopper = estimate("mistral-7b", "H100-SXM", 1, "fp32", mode="lora")
    ada = estimate("mistral-7b", "L40S", 1, "fp32", mode="lora")
    assert hopper.throughput is not None and ada.throughput is not None
    assert hopper.throughput > ada.throughput
    assert not any("FlashAttention-2" in line for line in hopper.assumptions)


@pytest.mark.parametrize("gpu", ["H100-SXM", "H200", "B200", "GB200"])
def test_fp8_attention_runs_at_the_bf16_ceiling(gpu: str) -> None:
    # Transformer Engine's FP8 recipes keep attention in BF16: its matmuls run at the GPU's BF16 ceiling (an H100
    # sustains 80% of its BF16 peak but 71% of its FP8 one), exactly as in a BF16 run of the same layout.
    spec = resolve_gpu(gpu)
    wl = get_workload("llama-3-8b", stack="tuned")
    fp8 = sample_time(wl, spec, "fp8", 1, 1, False, fitted=default_params())[3]
    bf16 = sample_time(wl, spec, "bf16", 1, 1, False, fitted=default_params())[3]
    assert fp8 == pytest.approx(bf16, rel=1e-9)
    assert fp8 > 0


@pytest.mark.parametrize(
    ("more", "less", "workload", "gpus"),
    [
        ("B300", "B200", "llama-3.1-405b", 256),
        ("A100-PCIe-80GB", "A100-PCIe-40GB", "llama-3.1-405b", 256),
        ("V100-32GB", "V100-16GB", "llama-2-13b", 256),
    ],
)
def test_more_memory_is_not_slower_through_a_pipeline(more: str, less: str, workload: str, gpus: int) -> None:
    # The search times smaller micro-batches too: the largest that fits can lose to the pipeline bubble.
    precision = "bf16" if resolve_gpu(less).supports("bf16") else "fp16"
    big = estimate(workload, more, gpus, precision, stack="tuned")
    small = estimate(workload, less, gpus, precision, stack="tuned")
    assert big.throughput is not None and small.throughput is not None
    assert big.throughput >= small.throughput * 0.999


def test_pipeline_stages_pay_for_their_traffic_over_a_slow_network() -> None:
    fast = estimate("llama-2-70b", "H100-SXM", 16, stack="tuned", gpus_per_node=1, network_gbps=400)
    slow = estimate("llama-2-70b", "H100-SXM", 16, stack="tuned", gpus_per_node=1, network_gbps=0.01)
    assert fast.throughput is not None and slow.throughput is not None
    assert slow.throughput < fast.throughput / 10


def test_a_measurement_above_the_peak_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        estimate("llama-3-8b", "H100", 8, measured=1e12, measured_on="A100:8")
    assert caught.value.field == "measured" and "MFU" in str(caught.value)


def test_the_gpu_count_has_a_ceiling() -> None:
    with pytest.raises(InputError) as caught:
        estimate("llama-3-8b", "H100", 10**8)
    assert caught.value.field == "gpus" and "at most 65,536" in str(caught.value)


def test_a_micro_batch_not_run_as_given_says_why() -> None:
    by_batch = estimate("llama-3-8b", "H100", 8, batch_per_gpu=4, global_batch=8)
    assert "micro-batch 1 per GPU, not the 4 given: the global batch 8 leaves 1 per data-parallel rank" in (
        by_batch.assumptions
    )


def test_mode_and_stack_are_read_in_any_case() -> None:
    assert estimate("llama-3-8b", "H100", 8, mode="LoRA", stack="Tuned").throughput == (
        estimate("llama-3-8b", "H100", 8, mode="lora", stack="tuned").throughput
    )


def test_a_cnn_refuses_a_parameter_count() -> None:
    with pytest.raises(InputError) as caught:
        estimate("resnet50", "H100", params=1e9)
    assert caught.value.field == "params"


def test_an_infinity_fabric_mesh_serves_all_eight_gpus_not_just_pairs() -> None:
    # The clouds list MI300X nodes' direct GPU links as "nvlink" (no switch): a full mesh, unlike NVL bridge pairs.
    listed = estimate("bert-large", "MI300X", 8, interconnect="nvlink")
    default = estimate("bert-large", "MI300X", 8)
    assert listed.throughput == default.throughput
    assert any("direct links between every GPU pair" in line for line in listed.assumptions)
    pairs = estimate("bert-large", "H100-NVL", 8, interconnect="nvlink")
    switched = estimate("bert-large", "H100-NVL", 8, interconnect="nvswitch")
    assert pairs.throughput is not None and switched.throughput is not None
    assert pairs.throughput < switched.throughput


def test_every_gpu_has_a_sourced_tensor_rate_per_sm() -> None:
    rates = sm_tensor_rates()
    rows = data_rows("gpu_sm_rates.csv")
    assert all(row["source"] and row["source_date"] and row["notes"] for row in rows)
    assert {gpu for gpu, spec in gpu_table().items() if spec.accelerator_kind == "gpu"} <= set(rates)
    # Dense FP16 FLOPs per SM per clock: GeForce (FP32 accumulate) 512, Volta to Ada 1,024, A100 2,048, Hopper 4,096,
    # Blackwell 8,192.
    assert set(rates.values()) <= {512.0, 1024.0, 2048.0, 4096.0, 8192.0}


@pytest.mark.parametrize(
    ("gpu", "precision", "feed"),
    [
        ("A100-80GB", "bf16", 1.0),
        ("A100-80GB", "tf32", 1.0),
        ("H100-SXM", "bf16", 2.0),
        ("H100-SXM", "fp8", 2.0),
        ("B200", "bf16", 4.0),
        ("RTX-4090", "fp16", 0.25),
        ("A10", "bf16", 0.5),
        ("A100-80GB", "fp32", 0.125),
    ],
)
def test_the_operand_feed_per_sm_follows_the_tensor_cores_not_the_precision(
    gpu: str, precision: str, feed: float
) -> None:
    # FP8 runs twice BF16's FLOPs on half the bytes, TF32 half on twice: one SM consumes the same bytes per clock.
    assert operand_feed(resolve_gpu(gpu), precision) == pytest.approx(feed, rel=2e-3)


def test_a_narrow_transformer_gains_less_from_a_faster_sm() -> None:
    # The same GEMM width keeps an A100's tensor cores busier than an H100's, which consume twice the operand bytes
    # per SM and clock: an H100 is further ahead of an A100 on wide layers than on narrow ones.
    def speedup(hidden: int) -> float:
        wl = get_workload("transformer", layers=8, hidden=hidden, seq_len=2048, vocab=32000)
        h100 = sample_time(wl, resolve_gpu("H100-SXM"), "bf16", 4, 1, False, fitted=default_params())[0]
        a100 = sample_time(wl, resolve_gpu("A100-80GB"), "bf16", 4, 1, False, fitted=default_params())[0]
        return a100 / h100

    # With the bundled fit the wide layers gain 20% more; with one half-width for every GPU, 13% (bandwidth alone).
    assert speedup(8192) > 1.15 * speedup(1024)


@pytest.mark.parametrize("gpu", ["MI325X", "MI355X", "H200-NVL", "H100-SXM-96GB"])
def test_every_new_gpu_estimates(gpu: str) -> None:
    result = estimate("llama-3-8b", gpu, 8)
    assert result.gpu == gpu and result.throughput is not None and result.mfu is not None
    assert 0.2 < result.mfu < 0.8
    assert result.energy_kwh is not None and result.time_to_solution_hours is not None


def test_a_variant_keeps_its_base_tensor_rate_and_takes_its_own_memory_and_power() -> None:
    # MI325X: the MI300X's die with 256 GB at 6 TB/s and 1000 W, and its own measured matmul ceiling.
    base, variant = estimate("llama-3-70b", "MI300X", 8), estimate("llama-3-70b", "MI325X", 8)
    assert variant.gpu_memory_gib == 256 and base.gpu_memory_gib == 192
    assert variant.energy_kwh is not None and base.energy_kwh is not None
    assert variant.time_to_solution_hours is not None and base.time_to_solution_hours is not None
    # Energy per hour follows the board power (1000 W over 750 W).
    assert variant.energy_kwh / variant.time_to_solution_hours == pytest.approx(
        base.energy_kwh / base.time_to_solution_hours * 1000 / 750
    )
    assert sustained_matmul(resolve_gpu("MI325X"), "bf16")[0] == pytest.approx(784.9)
    # An H100 held to 500 W sustains less than the 700 W part (the power bound), on the same tensor cores.
    capped = sustained_matmul(resolve_gpu("H100-SXM-96GB"), "bf16")[0]
    assert capped < sustained_matmul(resolve_gpu("H100-SXM"), "bf16")[0]
