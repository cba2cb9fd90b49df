"""Context parallelism, interleaved pipelines and the software stack: what each must change, and what not."""

from __future__ import annotations

import dataclasses

import perflab
import pytest

from planner.errors import InputError
from planner.hardware import resolve_gpu
from planner.perf import layout, model
from planner.perf.links import context_exchange_s, link_gbs
from planner.perf.memory import OPTIMIZER_SHARE, memory_bytes
from planner.perf.model import estimate
from planner.perf.params import PerfParams, default_params
from planner.perf.plan import Plan
from planner.perf.step import step_time, throughput_with_plan
from planner.perf.workloads import get_workload

LLAMA_8B = get_workload("llama-3-8b", seq_len=8192)
H100 = resolve_gpu("H100")


def test_interleaving_shrinks_only_the_pipeline_bubble() -> None:
    flat = Plan(tp=1, pp=4, dp=2, micro_batch=1, global_batch=16)
    interleaved = Plan(tp=1, pp=4, dp=2, micro_batch=1, global_batch=16, vp=4)
    one, four = (throughput_with_plan(LLAMA_8B, H100, "bf16", p) for p in (flat, interleaved))
    micro_steps = 16 // 2
    # Bubble (pp - 1) slots become (pp - 1) / vp: at most this much faster, and never slower.
    assert 1.0 < four / one <= (micro_steps + 3) / (micro_steps + 3 / 4) + 1e-9
    no_pipeline = Plan(tp=1, pp=1, dp=8, micro_batch=1, global_batch=16)
    assert throughput_with_plan(LLAMA_8B, H100, "bf16", no_pipeline) == pytest.approx(
        throughput_with_plan(LLAMA_8B, H100, "bf16", Plan(tp=1, pp=1, dp=8, micro_batch=1, global_batch=16, vp=4))
    )


def test_context_parallelism_splits_activations_and_keeps_the_gradient_group() -> None:
    alone = Plan(tp=1, pp=1, dp=8, micro_batch=1, global_batch=8)
    split = Plan(tp=1, pp=1, dp=4, cp=2, micro_batch=1, global_batch=8)
    assert split.gradient_group == alone.gradient_group == 8
    act = default_params().memory["activation_bytes_per_token_hidden"]
    saved = memory_bytes(LLAMA_8B, "bf16", alone, default_params()) - memory_bytes(
        LLAMA_8B, "bf16", split, default_params()
    )
    assert saved > act * 8192 / 2 * LLAMA_8B.hidden * LLAMA_8B.layers * 0.9
    # Same GPUs and the same work per step: half the sequences, each split over two GPUs.
    ratio = throughput_with_plan(LLAMA_8B, H100, "bf16", split) / throughput_with_plan(LLAMA_8B, H100, "bf16", alone)
    assert 0.8 < ratio < 1.2


def test_tuned_stack_is_faster_and_named() -> None:
    typical = estimate("llama-3-8b", "H100", 8)
    tuned = estimate("llama-3-8b", "H100", 8, stack="tuned")
    # Fused kernels (the fitted speed-up) and CUDA graphs (no launch gaps): faster, but not a different GPU.
    assert default_params().transformer["tuned_speedup"] >= 1.0
    assert 1.0 < tuned.throughput / typical.throughput < 1.5
    assert any("tuned" in line for line in typical.assumptions)
    with pytest.raises(InputError, match=r"^stack "):
        estimate("llama-3-8b", "H100", 1, stack="fastest")


def test_nvidia_published_runs_are_calibration_rows_with_their_layouts() -> None:
    rows = [row for row in perflab.load_benchmarks() if row.source_name.startswith("NVIDIA")]
    assert len(rows) == 20  # the rest are sealed (data/sealed/)
    assert {row.gpu.id for row in rows} == {"H100-SXM", "B200", "GB200", "GB300"}
    # GB200/GB300 NVL72 racks: one NVLink domain of up to 72 GPUs.
    assert all(row.gpus_per_node == min(72, row.gpus) for row in rows if row.gpu.id.startswith("GB"))
    assert all(row.workload is not None and row.workload.stack == "tuned" for row in rows)
    assert any(row.plan.cp == 2 for row in rows) and any(row.plan.vp > 1 for row in rows)
    for row in rows:
        assert row.gpus == row.plan.tp * row.plan.pp * row.plan.cp * row.plan.dp


def test_tuned_runs_fit_their_own_coefficients_and_leave_the_rest_alone() -> None:
    rows = perflab.load_benchmarks()
    mosaic = [r for r in rows if r.source_name.startswith("mosaicml")][::4]
    nvidia = [r for r in rows if r.source_name.startswith("NVIDIA")]
    alone = perflab.fit(mosaic, perflab.PRIORS)
    both = perflab.fit(mosaic + nvidia, perflab.PRIORS)
    for section in ("transformer", "comm"):
        for key, value in alone[section].items():
            if not key.startswith("tuned_"):
                assert both[section][key] == pytest.approx(value), key
    assert both["transformer"]["tuned_speedup"] != perflab.PRIORS["transformer"]["tuned_speedup"]


def test_distributed_optimizer_shards_only_the_optimizer_state() -> None:
    wl = get_workload("llama-2-13b")
    replicated, zero1, full = (
        memory_bytes(wl, "bf16", Plan(dp=8, micro_batch=1, global_batch=8, sharded=s, zero1=z), default_params())
        for s, z in ((False, False), (False, True), (True, False))
    )
    adam = default_params().memory["adam_bytes_per_param"]
    assert replicated - zero1 == pytest.approx(wl.params * adam * OPTIMIZER_SHARE * (1 - 1 / 8), rel=1e-9)
    assert full < zero1 < replicated


def test_only_the_tuned_stack_interleaves_pipelines() -> None:
    typical = estimate("llama-3-70b", "H100", 64, seq_len=8192, global_batch=128)
    tuned = estimate("llama-3-70b", "H100", 64, seq_len=8192, global_batch=128, stack="tuned")
    assert typical.parallelism["interleaved_stages"] == 1
    assert tuned.parallelism["pipeline"] > 1 and tuned.parallelism["interleaved_stages"] > 1
    assert "distributed optimizer" in " ".join(tuned.assumptions) or tuned.parallelism["optimizer_sharded"]


def test_nvl72_racks_are_one_nvlink_domain() -> None:
    rack = estimate("llama-3-70b", "GB200", 64)
    assert rack.nodes == 1 and rack.gpus_per_node == 64 and rack.interconnect == "nvswitch"
    assert estimate("llama-3-70b", "B200", 64).nodes == 8


def test_recompute_off_never_recomputes_and_says_so_when_it_cannot_fit() -> None:
    # Llama 2 70B on 16 x A100 80 GB fits only with recomputation: "auto" uses it, "off" does not run at all.
    auto = estimate("llama-2-70b", "A100-80GB", 16, "bf16")
    assert auto.throughput is not None and auto.parallelism["recompute"] is True
    off = estimate("llama-2-70b", "A100-80GB", 16, "bf16", recompute="off")
    assert off.parallelism["recompute"] is False and off.throughput is None
    assert off.why_not_fits is not None and "recompute off, as given" in off.why_not_fits
    # The smallest count that fits keeps every activation too: more GPUs than with recomputation.
    assert off.min_gpus_to_fit is not None and auto.min_gpus_to_fit is None
    assert off.min_gpus_to_fit > estimate("llama-2-70b", "A100-80GB", 8, "bf16").min_gpus_to_fit  # type: ignore[operator]


def test_recompute_is_a_checked_workload_field() -> None:
    assert get_workload("mpt-7b", recompute=True).recompute == "on"
    with pytest.raises(InputError) as caught:
        get_workload("mpt-7b", recompute="sometimes")
    assert caught.value.field == "recompute" and "auto, on, off" in str(caught.value)
    with pytest.raises(InputError) as caught:
        get_workload("resnet50", recompute="on")
    assert caught.value.field == "recompute" and "transformer" in str(caught.value)


def test_the_node_line_says_how_the_gpus_split_over_nodes() -> None:
    lines = {n: estimate("llama-3-8b", "H100", n).assumptions for n in (8, 12, 64)}
    assert any(line.startswith("1 node of 8 GPUs") for line in lines[8])
    assert any(line.startswith("2 nodes (8 + 4 GPUs)") for line in lines[12])
    assert any(line.startswith("8 nodes of 8 GPUs") for line in lines[64])


@pytest.mark.parametrize("workload", ["llama-3-70b", "bert-large", "resnet50"])
def test_one_instance_never_uses_the_network_between_instances(workload: str) -> None:
    """rank asks the model once per one-instance configuration whatever its NIC: the answer must not depend on it."""
    for gpu in ("H100-SXM", "A100-40GB", "L4", "B200"):
        slow, fast = (estimate(workload, gpu, 8, "bf16", gpus_per_node=8, network_gbps=gbps) for gbps in (25, 3200))
        assert slow.nodes == fast.nodes == 1
        assert (slow.throughput, slow.memory_per_gpu_gib, slow.parallelism) == (
            fast.throughput,
            fast.memory_per_gpu_gib,
            fast.parallelism,
        )


@pytest.mark.parametrize(
    ("workload", "gpu", "gpus"),
    [("llama-3-8b", "H100", 16), ("llama-2-70b", "L4", 8), ("resnet50", "A10G", 4), ("bert-large", "A100", 2)],
)
def test_kept_layout_templates_change_no_estimate(workload: str, gpu: str, gpus: int) -> None:
    """The layout templates are built once per job shape and GPU count: a warm cache, another GPU's search in
    between, or other fitted parameters give the same layout and figures as a cold one."""
    layout.candidate_plans.cache_clear()
    model.clear_caches()
    cold = estimate(workload, gpu, gpus, "bf16")
    estimate(workload, "B200", gpus, "bf16")  # the same templates, searched on another GPU
    other = default_params().to_dict()
    other["memory"]["adam_bytes_per_param"] += 2.0  # moves every job's memory, fitting or not
    assert estimate(workload, gpu, gpus, "bf16", perf_params=PerfParams.from_dict(other)) != cold
    model.clear_caches()
    warm = estimate(workload, gpu, gpus, "bf16")
    assert layout.candidate_plans.cache_info().hits > 0
    assert warm == cold
    assert isinstance(layout.candidate_plans(get_workload(workload), gpus, 8), tuple)  # shared: never mutable


def test_context_parallelism_stands_in_for_recomputation_on_the_tuned_stack() -> None:
    # Llama 3.1 405B at 8,192 tokens on 2,304 H100s: NVIDIA's recipe splits every sequence over two GPUs (TP8 PP9 CP2,
    # NVIDIA/dgxc-benchmarking) and recomputes nothing. Without context parallelism the search recomputed every layer.
    typical = estimate("llama-3.1-405b", "H100", 2304, seq_len=8192, global_batch=1008)
    tuned = estimate("llama-3.1-405b", "H100", 2304, seq_len=8192, global_batch=1008, stack="tuned")
    assert typical.parallelism["context"] == 1
    split = tuned.parallelism
    assert split["context"] > 1 and not split["recompute"] and "-way context" in " ".join(tuned.assumptions)
    assert split["tensor"] * split["pipeline"] * split["context"] * split["data"] == 2304
    no_split = estimate("llama-3.1-405b", "H100", 2304, seq_len=8192, global_batch=1008, stack="tuned", recompute="on")
    assert no_split.parallelism["context"] == 1 and no_split.throughput < tuned.throughput
    # Where a layout fits without recomputation, sequences are not split (NVIDIA's Llama 3 8B on 8 B200s: TP1 CP1).
    assert estimate("llama-3-8b", "B200", 8, seq_len=8192, stack="tuned").parallelism["context"] == 1
    # A short sequence is never split: each rank keeps at least 1,024 tokens, in 2 x cp load-balanced chunks.
    assert layout.context_splits(get_workload("llama-3-8b", seq_len=8192, stack="tuned"), 8) == [1, 2, 4, 8]
    assert layout.context_splits(get_workload("llama-3-8b", seq_len=2048, stack="tuned"), 8) == [1, 2]
    assert layout.context_splits(get_workload("llama-3-8b", seq_len=8192), 8) == [1]


def test_the_ring_exchange_waits_only_where_it_outlasts_attention() -> None:
    tuned = get_workload("llama-3-8b", seq_len=8192, stack="tuned")
    plan = Plan(tp=1, pp=1, dp=4, cp=2, micro_batch=1, global_batch=8)
    # Three exchanges a layer (keys and values forward; keys, values and their gradients backward) of two tensors of
    # hidden x the rank's tokens, once per ring step.
    volume = 3 * 1 * tuned.layers * 2 * 4096 * tuned.hidden * 2
    fitted = default_params()
    within = context_exchange_s(tuned, H100, "bf16", plan, "nvswitch", 8, 3200.0, fitted)
    link = link_gbs(H100, "nvswitch", 2, fitted) * 1e9
    assert within == pytest.approx(volume / link + 3 * tuned.layers * fitted.comm["collective_latency_s"])
    # A context group of 16 ranks (8-way tensor parallelism) crosses the network, one NIC a GPU: half the bytes of
    # 4-way tensor parallelism's exchange, which stays on NVLink, take several times as long.
    wide = Plan(tp=8, pp=1, dp=1, cp=2, micro_batch=1, global_batch=1)
    narrow = dataclasses.replace(wide, tp=4)
    assert context_exchange_s(tuned, H100, "bf16", wide, "nvswitch", 8, 3200.0, fitted) > 2 * (
        context_exchange_s(tuned, H100, "bf16", narrow, "nvswitch", 8, 3200.0, fitted)
    )
    # On NVLink it hides behind attention at 8k tokens: the step is the unsplit compute's, give or take the
    # smaller GEMMs.
    timing = step_time(tuned, H100, "bf16", plan, "nvswitch", 8, 3200.0, fitted)
    unsplit = step_time(tuned, H100, "bf16", Plan(dp=8, micro_batch=1, global_batch=8), "nvswitch", 8, 3200.0, fitted)
    assert timing.samples_per_step / timing.step_s == pytest.approx(unsplit.samples_per_step / unsplit.step_s, rel=0.1)


def test_the_tuned_stack_stages_whole_layers_at_any_depth_that_divides_them() -> None:
    # Llama 3.1 405B (126 layers) on 576 H100s: NVIDIA's recipe is TP8 PP9 CP2 DP4 without recomputation
    # (NVIDIA/dgxc-benchmarking). Nine stages of 14 layers: no power-of-two depth fits there without recomputing.
    wl = get_workload("llama-3.1-405b", seq_len=8192, stack="tuned")
    assert layout.pipeline_depths(wl, 576) == [1, 2, 3, 4, 6, 8, 9, 16, 18, 32, 64]
    assert layout.pipeline_depths(get_workload("llama-3.1-405b", seq_len=8192), 576) == [1, 2, 4, 8, 16, 32, 64]
    # On a power-of-two count nothing changes: 80 layers share no odd factor with 64 GPUs.
    assert layout.pipeline_depths(get_workload("llama-3-70b", stack="tuned"), 64) == [1, 2, 4, 8, 16, 32, 64]
    tuned = estimate("llama-3.1-405b", "H100", 576, seq_len=8192, global_batch=252, stack="tuned")
    split = tuned.parallelism
    assert (split["tensor"], split["pipeline"], split["context"], split["data"]) == (8, 9, 2, 4)
    assert not split["recompute"]
