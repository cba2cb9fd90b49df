"""The time of one training step: per GPU, a micro-batch's compute (FLOPs over the sustained matmul rate times a
fitted efficiency) and memory traffic (element-wise bytes over HBM bandwidth); then tensor-parallel, context and
pipeline exchanges, the pipeline bubble, the host or input feed, and data-parallel gradient or sharding traffic,
partly overlapped with compute."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from planner.hardware import ELEMENT_BYTES, FP4_PRECISIONS, GpuSpec
from planner.perf.ceilings import matmul_derate, operand_feed
from planner.perf.links import (
    context_exchange_s,
    default_interconnect,
    default_network_gbps,
    dp_bandwidth,
    gradient_bytes,
    link_gbs,
    node_network_gbs,
)
from planner.perf.memory import trained_params
from planner.perf.params import PerfParams, default_params
from planner.perf.plan import Plan, stage_layers
from planner.perf.workloads import Workload

# A typical stack's fused attention is FlashAttention-2 (PyTorch SDPA, llm-foundry), written for Ampere: it reaches
# 50-73% of an A100's peak (Dao 2023) but about 35% of an H100's (Shah et al. 2024, FlashAttention-3), about 0.6 of its
# Ampere efficiency relative to the sustained peak. Blackwell runs the same kernels through the Ampere path. The tuned
# stack (Transformer Engine, cuDNN's Hopper-native fused attention) is not affected, nor is eager attention (BERT
# scripts: cuBLAS batched GEMMs). A typical stack's convolutions show the same gap: Lambda's PyTorch ResNet-50 runs
# 1.76x faster on an H100 SXM than on an A100 SXM in FP16 (3.2x the peak, 1.6x the HBM bandwidth) and 1.22x on the
# PCIe cards; the same 0.6 applies to their tensor-core work (FP32 runs on the CUDA cores). NVIDIA's tuned recipe
# (MLPerf) is Hopper-native.
LATER_THAN_ADA = frozenset({"hopper", "blackwell"})
AMPERE_KERNELS_AFTER_ADA = 0.6
# The precisions of mixed-precision training (16-bit or 8-bit tensor-core math), where NVIDIA's tuned CNN recipe was
# measured.
MIXED_PRECISIONS = frozenset({"fp16", "bf16", "fp8"})
# Precisions whose linear-layer GEMMs run below 16 bits while attention stays in BF16 (Transformer Engine's recipes).
NARROW_PRECISIONS = frozenset({"fp8", *FP4_PRECISIONS})
# NVIDIA's NVFP4 pre-training recipe (Pretraining LLMs with NVFP4, arXiv 2509.25149, 2025) runs every linear layer's
# three GEMMs (forward, data and weight gradients; Hadamard transforms on the weight-gradient inputs) in FP4, except
# about 16% of the linear layers (the 12B model's first two and last eight blocks) kept in BF16; embeddings, the output
# head, norms and attention stay in BF16. Megatron-Core's --first-last-layers-bf16 sets the same, by layer count.
FP4_BF16_LINEAR_SHARE = 0.16


def fp8_relative(family: Mapping[str, float], stack: str) -> float:
    """FP8 GEMM efficiency relative to BF16: Transformer Engine recipes in NVIDIA's tuned stack have their own. No
    FP4 run is fitted: FP4 GEMMs are taken at FP8's (their own share of the FP4 peak, ``ceiling_key``)."""
    return float(
        family.get("tuned_fp8_relative", family["fp8_relative"]) if stack == "tuned" else family["fp8_relative"]
    )


def _efficiency_scale(spec: GpuSpec, precision: str, family: Mapping[str, float], stack: str = "typical") -> float:
    """Fraction of the dense peak a well-shaped matmul reaches, for this precision."""
    rel = fp8_relative(family, stack) if precision in NARROW_PRECISIONS else family.get(f"{precision}_relative", 1.0)
    if precision == "tf32" and spec.tf32_tflops is None:
        rel = family.get("fp32_relative", 1.0)
    return float(family["peak_efficiency"] * rel)


def ampere_kernels(wl: Workload, spec: GpuSpec, precision: str) -> bool:
    """Whether a typical stack runs Ampere-era kernels on a later GPU: a transformer's FlashAttention-2-class
    attention, or a CNN's tensor-core convolutions. Eager attention (typical BERT scripts) is cuBLAS batched GEMMs,
    native to every GPU; FP32 runs on the CUDA cores; the tuned stacks are native."""
    if wl.stack == "tuned" or spec.architecture not in LATER_THAN_ADA or precision == "fp32":
        # FP32 runs on the CUDA cores (no FlashAttention, no tensor-core convolutions): nothing Ampere-era to pay.
        return False
    return not (wl.is_transformer and wl.eager_attention)


def sample_time(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    micro_batch: int,
    tp: int,
    recompute: bool,
    cp: int = 1,
    *,
    fitted: PerfParams,
) -> tuple[float, float, float, float]:
    """Seconds for one GPU to run forward+backward of ``micro_batch`` samples: (compute, memory, model FLOPs, the
    attention matmuls' share of compute).

    With context parallelism each GPU holds ``seq_len / cp`` tokens of every sequence and attends them to all keys.
    """
    # A power-capped or hard-to-feed GPU sustains less of its datasheet peak (data/gpu_ceilings.csv).
    peak = spec.peak_tflops(precision) * 1e12 * matmul_derate(spec, precision)
    bw = spec.memory_bandwidth_gbps * 1e9
    elem = ELEMENT_BYTES[precision]
    if not wl.is_transformer:
        fam = fitted.cnn
        flops = (wl.flops_per_sample or 0.0) * micro_batch
        eff = _efficiency_scale(spec, precision, fam) * micro_batch / (micro_batch + fam["batch_half"])
        # The more FLOPs a GPU has per byte of HBM bandwidth, the harder its tensor cores are to keep fed
        # (cross-validated: helps CNNs; for transformers the separate memory term already carries it).
        eff /= 1.0 + peak / bw / fam["balance_half"]
        if ampere_kernels(wl, spec, precision):
            eff *= AMPERE_KERNELS_AFTER_ADA
        mem_bytes = fam["bytes_per_flop"] * (wl.flops_per_sample or 0.0) * micro_batch * elem / 2.0
        # Batch norm, activations and optimizer run on the CUDA cores, not the tensor cores.
        vector = fam["vector_flops_per_flop"] * flops / (spec.fp32_tflops * 1e12)
        # NVIDIA's tuned CNN recipes (DALI input pipeline, channels-last, fused batch-norm + ReLU, CUDA graphs),
        # measured in mixed precision (MLPerf ResNet-50). In FP32 and TF32 NVIDIA's own ResNet-50 tables are within
        # 5% of the typical stack, or below it: no speed-up there (it would put MFU above the FP32 peak).
        tuned = wl.stack == "tuned" and precision in MIXED_PRECISIONS
        speedup = fam.get("tuned_speedup", 1.0) if tuned else 1.0
        return (flops / (peak * eff) + vector) / speedup, mem_bytes / bw / speedup, flops, 0.0
    fam = fitted.transformer
    seq, layers, hidden = wl.seq_len, wl.layers, wl.hidden
    tokens = micro_batch * seq / cp
    linear, attention = forward_flops(wl, tokens)
    # Backward is two matmul passes (input and weight gradients). LoRA skips the weight gradients of the frozen
    # linear layers, but attention has no weights: its backward still computes the gradients of Q, K and V
    # (``attention_matmul_passes``). Recomputation repeats the forward pass. Model FLOPs (MFU) count attention's
    # three passes, the convention, whatever a fused kernel recomputes.
    linear_passes = (2.0 if wl.mode == "lora" else 3.0) + (1.0 if recompute else 0.0)
    attention_passes = attention_matmul_passes(wl, recompute)
    model_flops = linear * (2.0 if wl.mode == "lora" else 3.0) + attention * 3.0
    hw_flops = linear * linear_passes + attention * attention_passes
    shard_hidden = hidden / tp
    base = _efficiency_scale(spec, precision, fam, wl.stack) * tokens / (tokens + fam["tokens_half"])
    linear_time = linear * linear_passes / _linear_rate(spec, precision, base, shard_hidden, fam)
    if precision in FP4_PRECISIONS:
        # The recipe's BF16 layers run at the BF16 rate.
        bf16_base = _efficiency_scale(spec, "bf16", fam, wl.stack) * tokens / (tokens + fam["tokens_half"])
        bf16_time = linear * linear_passes / _linear_rate(spec, "bf16", bf16_base, shard_hidden, fam)
        linear_time += FP4_BF16_LINEAR_SHARE * (bf16_time - linear_time)
    # Fused attention kernels (FlashAttention) work per head, whatever the width, at a lower share of the peak
    # than large GEMMs; with FP8 only the linear layers run in FP8 (Transformer Engine), attention stays in BF16.
    attention_rate = peak * base * fam["attention_relative"]
    if ampere_kernels(wl, spec, precision):
        attention_rate *= AMPERE_KERNELS_AFTER_ADA
    if precision in NARROW_PRECISIONS:
        # BF16 attention runs at the GPU's BF16 ceiling, not at its FP8 one scaled down (an H100 sustains 80% of its
        # BF16 peak but 71% of its FP8 peak).
        bf16_peak = spec.peak_tflops("bf16") * 1e12 * matmul_derate(spec, "bf16")
        attention_rate *= bf16_peak / peak / fp8_relative(fam, wl.stack)
    attention_time = attention * attention_passes / attention_rate
    matmul_time = linear_time + attention_time
    # Element-wise kernels (norms, activations, softmax, dropout, residuals) stream activations through HBM.
    mem_bytes = fam["bytes_per_activation"] * layers * shard_hidden * tokens * elem
    if wl.eager_attention:
        # BERT-class scripts (DeepLearningExamples, Hugging Face) run eager attention: every head's seq x seq scores
        # go through HBM several times (the score matmul's output, scale, mask, softmax, dropout and its mask, the
        # context matmul's input, and as many passes backward), seq x heads elements per token and layer. The
        # decoder sources run FlashAttention, which keeps the scores on chip, and NVIDIA's tuned BERT fuses them.
        mem_bytes += fam.get("score_passes", 0.0) * layers * (wl.heads / tp) * seq * tokens * elem
    if recompute:
        mem_bytes *= 1.0 + fam.get("recompute_memory_share", 0.5)
    vector = fam["vector_flops_per_flop"] * hw_flops / tp / (spec.fp32_tflops * 1e12)
    # NVIDIA's tuned recipes (fused kernels, CUDA graphs, FP8-aware Transformer Engine) run the same layer faster.
    # Fused kernels (layer norm + bias + activation + dropout in one pass, fused attention) read and write the
    # activations fewer times: a share of the element-wise HBM traffic remains.
    speedup = memory_speedup = 1.0
    if wl.stack == "tuned" and wl.kind == "encoder":
        # NVIDIA's BERT recipe has its own pair, solved on its MLPerf runs (``perflab.solve_tuned_encoder``; no
        # benchmark row runs it): its traffic, and its matmul rate, measured in BF16 (in FP32 and TF32 the typical
        # stack's).
        mem_bytes *= fam.get("tuned_encoder_memory_relative", 1.0)
        if precision in MIXED_PRECISIONS:
            speedup = fam.get("tuned_encoder_speedup", 1.0)
    elif wl.stack == "tuned":
        mem_bytes *= fam.get("tuned_memory_relative", 1.0)
        speedup = memory_speedup = fam.get("tuned_speedup", 1.0)
    return (
        (matmul_time / tp + vector) / speedup,
        mem_bytes / bw / memory_speedup,
        model_flops / tp,
        attention_time / tp / speedup,
    )


def _linear_rate(spec: GpuSpec, precision: str, base: float, shard_hidden: float, fam: Mapping[str, float]) -> float:
    """FLOP/s of the linear layers' GEMMs, of width ``hidden / tp``. Narrow ones use the tensor cores poorly: a narrow
    GEMM reuses each operand it loads fewer times, and an SM feeds its tensor cores from shared memory and registers
    at about the same bytes per clock since Volta, while their FLOPs per clock doubled with the A100, Hopper and
    Blackwell. The width at which a GEMM reaches half its rate grows with the operand bytes an SM consumes per clock
    (``operand_feed``): an H100 needs twice the A100's width, a GeForce card half."""
    peak = spec.peak_tflops(precision) * 1e12 * matmul_derate(spec, precision)
    return peak * (base * shard_hidden / (shard_hidden + fam["hidden_half"] * operand_feed(spec, precision)))


def attention_matmul_passes(wl: Workload, recompute: bool) -> float:
    """Attention's matmul work in a training step, in forward passes of it (QK^T and PV). Eager attention (typical
    BERT scripts) saves its scores for backward, which then runs two passes (dQ/dK and dV/dP). Fused kernels
    (FlashAttention and its kin: the decoder sources, NVIDIA's tuned recipes) keep no scores: their backward
    recomputes QK^T and runs the four gradient matmuls, 2.5 passes (Dao, FlashAttention-2, 2023). Activation
    checkpointing runs the forward once more."""
    backward = 2.0 if wl.eager_attention else 2.5
    return 1.0 + backward + (1.0 if recompute else 0.0)


def forward_flops(wl: Workload, tokens: float) -> tuple[float, float]:
    """A transformer's forward FLOPs on ``tokens`` tokens: (linear layers, attention scores and values; in a packed
    sequence, per sample: ``attention_span``)."""
    return 2.0 * wl.params * tokens, 4.0 * wl.layers * wl.hidden * wl.attention_span * tokens


def forward_share(wl: Workload) -> float:
    """A forward pass's share of a training step's FLOPs on the same samples, without recomputation: what evaluating
    a sample costs against training on it. Full training runs three passes (forward, input and weight gradients),
    so 1/3; LoRA skips the frozen linear layers' weight gradients but not attention's backward (``sample_time``)."""
    if not wl.is_transformer:
        return 1.0 / 3.0
    linear, attention = forward_flops(wl, 1.0)
    linear_passes = 2.0 if wl.mode == "lora" else 3.0
    return (linear + attention) / (linear * linear_passes + attention * 3.0)


@dataclass(frozen=True)
class StepTiming:
    """One training step of a layout: its time, split, work and what paces it."""

    step_s: float
    compute_s: float
    comm_exposed_s: float
    model_flops_per_step: float
    samples_per_step: int
    # The host (eager launches) or the tuned recipe's input feed, not the GPU, sets the pace.
    host_bound: bool
    # The same step's compute without a feed that paces training only: what an evaluation pass scales from.
    eval_compute_s: float


def step_time(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    plan: Plan,
    interconnect: str,
    gpus_per_node: int,
    network_gbps: float,
    fitted: PerfParams,
) -> StepTiming:
    """One step of ``plan``: every micro-batch of a data-parallel rank through the pipeline, and the gradient sync."""
    comm = fitted.comm
    t_comp, t_mem, flops, t_attention = sample_time(
        wl, spec, precision, plan.micro_batch, plan.tp, plan.recompute, plan.cp, fitted=fitted
    )
    # A pipeline stage runs its share of the layers; the busiest rank's share paces the pipeline (``stage_layers``).
    # Model FLOPs stay the even share: the step's useful work is the same however the layers are split.
    layers_here = stage_layers(wl.layers, plan.pp, plan.vp) if wl.is_transformer else 1
    share = layers_here / wl.layers if wl.is_transformer and plan.pp > 1 else 1.0 / plan.pp
    t_comp, t_mem, flops, t_attention = t_comp * share, t_mem * share, flops / plan.pp, t_attention * share
    micro_steps = max(1, plan.global_batch // (plan.dp * plan.micro_batch))
    per_micro = t_comp + t_mem
    tp_comm = 0.0
    host = 0.0
    feed = 0.0
    if not wl.is_transformer:
        # The input pipeline (DALI JPEG decode, augmentation) and the launches feed each GPU at a rate that does not
        # grow with the GPU: fast GPUs wait for it (MLPerf ResNet-50: H200 only 1.1x H100, not the 1.4x of its HBM
        # bandwidth). It runs concurrently with the GPU, so the slower of the two sets the pace. The typical stack
        # (PyTorch, NVIDIA's DLE scripts) has a floor of its own, lower, on synthetic images: Lambda's second round
        # measured an H200 at 1.10x an H100 and a B200 at 1.10x in FP16 and TF32 alike (data/lambda_v2_runs.csv).
        # Its cause is not published; no calibration row is fast enough to reach it.
        key = "tuned_input_s_per_image" if wl.stack == "tuned" else "typical_floor_s_per_image"
        host = plan.micro_batch * fitted.cnn.get(key, 0.0)
    if wl.is_transformer:
        # Tuned stacks replay CUDA graphs of fused kernels: no per-kernel launch cost on the host or the GPU.
        eager = 0.0 if wl.stack == "tuned" else 1.0
        # Kernel launches and small ops: a fixed cost per layer and micro-batch, whatever the GPU.
        per_micro += layers_here * comm["layer_overhead_s"] * eager
        # The host issues the kernels of a layer (eager PyTorch: a few hundred ops at about 10 us each) while the
        # GPU runs earlier ones: the GPU waits for it when a micro-batch is small (launch-bound).
        host = layers_here * comm["host_layer_s"] * (4.0 / 3.0 if plan.recompute else 1.0) * eager
        if wl.stack == "tuned" and wl.kind == "encoder":
            # NVIDIA's MLPerf BERT recipe feeds each GPU at a rate that does not grow with the GPU: every Blackwell run
            # (B200 on two rounds and two submitters' machines, a GB200 with its own Grace host and a higher power
            # limit) trains 1,360-1,480 sequences/s per GPU, 1.4-1.5x a Hopper where the tensor cores promise 2.2x.
            # Its cause is not published. Like the CNN's input floor, it runs beside the GPU: the slower sets the pace.
            tokens_here = plan.micro_batch * wl.seq_len / plan.cp
            feed = tokens_here * fitted.transformer.get("tuned_input_s_per_token", 0.0)
        if plan.tp > 1:
            # Megatron: 4 all-reduces of the activations per layer (2 forward, 2 backward), not overlapped.
            link = link_gbs(spec, interconnect, plan.tp, fitted) * 1e9
            elem = ELEMENT_BYTES[precision]
            volume = 4 * layers_here * plan.micro_batch * wl.seq_len / plan.cp * wl.hidden * elem
            tp_comm = volume * 2 * (plan.tp - 1) / plan.tp / link + 4 * layers_here * comm["collective_latency_s"]
            if wl.stack == "tuned":
                # Transformer Engine overlaps tensor-parallel collectives with the GEMMs that produce and use them.
                tp_comm *= fitted.transformer.get("tuned_tp_exposed", 1.0)
        if plan.cp > 1:
            # Context parallelism's ring exchange runs beside the attention of the chunk in hand (Transformer
            # Engine overlaps each step's transfer with it): only what outlasts the attention matmuls waits.
            ring = context_exchange_s(wl, spec, precision, plan, interconnect, gpus_per_node, network_gbps, fitted)
            tp_comm += max(0.0, ring - t_attention)
        if plan.pp > 1:
            # Between pipeline stages: each micro-batch's activations forward and their gradients backward, once per
            # virtual stage, every rank sending its 1/tp slice (Megatron's scatter-gather), point to point and
            # waited for by the 1F1B schedule. Stages are the outermost rank dimension: adjacent ones sit on
            # different nodes once a stage's tensor x data x context ranks fill a node, and share its NICs.
            elem = ELEMENT_BYTES[precision]
            volume = plan.micro_batch * wl.seq_len / plan.cp * wl.hidden * elem / plan.tp
            if plan.tp * plan.dp * plan.cp >= gpus_per_node and network_gbps > 0:
                stage_gbs = node_network_gbs(network_gbps, fitted) / gpus_per_node
            else:
                stage_gbs = link_gbs(spec, interconnect, 2, fitted)
            tp_comm += 2 * plan.vp * (volume / (stage_gbs * 1e9) + comm["collective_latency_s"])
    host_bound = max(host, feed) > per_micro + tp_comm
    # NVIDIA's BERT recipe caches its evaluation set on the GPUs (--cache_eval_data): its feed paces training only.
    unfed = max(per_micro + tp_comm, host)
    per_micro = max(unfed, feed)
    # 1F1B pipeline bubble: pp - 1 micro-batch slots, shortened by interleaving (vp virtual stages per rank).
    bubble = (micro_steps + (plan.pp - 1) / plan.vp) / micro_steps if plan.pp > 1 else 1.0
    compute = micro_steps * per_micro * bubble
    dp_comm = 0.0
    group = plan.gradient_group
    if group > 1:
        bandwidth = dp_bandwidth(spec, interconnect, plan, gpus_per_node, network_gbps, fitted) * 1e9
        params_here = wl.params / (plan.tp * plan.pp)
        ring = 2.0 * (group - 1) / group
        params_grad = trained_params(wl, fitted) / (plan.tp * plan.pp)
        hop = comm["dp_hop_latency_s"]
        if plan.sharded:
            # FSDP: all-gather weights for forward and backward of every micro-batch, reduce-scatter gradients.
            volume = micro_steps * (2 * params_here * 2.0 + params_grad * 2.0) / 2.0
            # Per layer and micro-batch: two all-gathers and a reduce-scatter, ring algorithms whose dp - 1 steps
            # each wait one network hop (NCCL has no tree all-gather): latency grows linearly with the ranks.
            latency = micro_steps * 3 * (wl.layers / plan.pp) * (group - 1) * hop
        else:
            volume = params_grad * gradient_bytes(wl, precision, fitted)
            # DDP all-reduces 25 MB gradient buckets; NCCL's tree all-reduce takes 2 log2(dp) hops per bucket.
            buckets = math.ceil(volume / 25e6)
            latency = buckets * 2 * math.log2(group) * hop
        dp_comm = volume * ring / bandwidth + latency
    exposed = max(dp_comm - comm["overlap"] * compute, (1.0 - comm["overlap"]) * dp_comm)
    step = compute + exposed
    nodes = math.ceil(group * plan.tp * plan.pp / gpus_per_node)
    if nodes > 1:
        # Stragglers and synchronisation: throughput per GPU falls a little with every doubling of nodes. And every
        # step across nodes pays a fixed cost whatever its size (``step_fixed_s``: the optimizer step's launch and the
        # gradient sync's latency), which only short steps feel.
        step = step * (1.0 + comm["loss_per_node_doubling"] * math.log2(nodes)) + comm.get("step_fixed_s", 0.0)
    samples = micro_steps * plan.dp * plan.micro_batch
    flops_per_step = flops * micro_steps * plan.tp * plan.pp * group
    return StepTiming(step, compute, step - compute, flops_per_step, samples, host_bound, micro_steps * unfed * bubble)


def throughput_with_plan(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    plan: Plan,
    *,
    interconnect: str | None = None,
    gpus_per_node: int = 8,
    network_gbps: float | None = None,
    perf_params: PerfParams | None = None,
) -> float:
    """Total throughput (workload units/s) of a given layout, ignoring memory: used to calibrate on published runs.
    ``perf_params`` defaults to the bundled fit."""
    fitted = perf_params or default_params()
    link = interconnect or default_interconnect(spec)
    if link in ("nvswitch", "nvlink") and not spec.nvlink_gbps:
        link = "pcie"
    network = network_gbps if network_gbps is not None else default_network_gbps(spec, fitted)
    timing = step_time(wl, spec, precision, plan, link, gpus_per_node, network, fitted)
    return timing.samples_per_step / timing.step_s / wl.samples_per_unit
