"""Memory per GPU: model state (weights, gradients, optimizer), activations and logits against what a GPU leaves a
framework to fill."""

from __future__ import annotations

from planner.hardware import ELEMENT_BYTES, GpuSpec
from planner.perf.params import PerfParams, default_params
from planner.perf.plan import Plan, stage_layers
from planner.perf.workloads import Workload

GIB = 1024.0**3
# Memory a framework cannot use for the model: the CUDA context and cuBLAS/cuDNN workspaces (about 1 GiB), plus about
# 3% lost to allocator fragmentation. A layout that communicates (more than one GPU) also loses NCCL's communicator
# workspaces (about 0.5 GiB) and keeps a few percent free for NCCL channel buffers and temporary tensors that peak with
# the collectives (a plan filling memory to the last byte runs out of memory at the first all-reduce); one GPU has no
# collectives. Lambda sized its ResNet-50 and BERT batches to each GPU's memory (28 BERT-Large sequences on 24 GB, 112
# on 80 GB): with 8% lost to fragmentation, as first assumed, most of those batches would not have fit in one pass;
# with the collective headroom on one GPU too, six of its one-GPU BERT batches (96 BERT-Base sequences on the 24 GB
# GeForce cards, 16 BERT-Large in TF32) would not have fit, though they ran (bench/memory.py).
CONTEXT_GIB = 1.0
NCCL_GIB = 0.5
FRAGMENTATION = 0.97
COLLECTIVE_HEADROOM = 0.03
# Of mixed-precision Adam's 16 bytes per parameter, the FP32 master weights and two moments (ZeRO paper, Rajbhandari
# et al. 2020: 12 of 16) are what a distributed optimizer shards.
OPTIMIZER_SHARE = 12.0 / 16.0


def trained_params(wl: Workload, fitted: PerfParams | None = None) -> float:
    """Parameters that train, and so carry gradients, optimizer state and a place in every checkpoint: all of them,
    or for LoRA the adapters' share (the frozen base weights stay as their published checkpoint has them; without
    a share given, the fitted parameters' default, of the bundled fit unless ``fitted`` is given)."""
    if wl.mode == "lora":
        share = wl.trainable_share or (fitted or default_params()).memory["lora_trainable_fraction"]
        return float(wl.params * share)
    return float(wl.params)


def memory_bytes(wl: Workload, precision: str, plan: Plan, fitted: PerfParams) -> float:
    """Peak bytes per GPU: model state (weights, gradients, optimizer), activations, logits."""
    mem = fitted.memory
    shards = plan.tp * plan.pp
    if wl.mode == "lora":
        # The frozen base weights, and the adapters' full training state. NVIDIA's FP8 recipes keep the frozen weights
        # in FP8 (NeMo's ``fp8_params``, on in its MLPerf Llama-2-70B LoRA configs).
        weight_bytes = 1.0 if precision == "fp8" and wl.stack == "tuned" else ELEMENT_BYTES[precision]
        frozen = wl.params * weight_bytes
    else:
        frozen = 0.0
    trained = trained_params(wl, fitted) * mem["adam_bytes_per_param"]
    if plan.zero1 and not plan.sharded:
        # Only the FP32 master weights and Adam moments (12 of the 16 bytes) of what trains are split over the
        # gradient group; frozen weights have none.
        optimizer = trained * OPTIMIZER_SHARE
        trained = trained - optimizer + optimizer / plan.gradient_group
    state = frozen + trained
    state /= shards * (plan.gradient_group if plan.sharded else 1)
    elem = ELEMENT_BYTES[precision]
    b = plan.micro_batch
    if not wl.is_transformer:
        activations = (wl.activation_bytes_per_sample or 0.0) * b * elem / 2.0
        return float(state + activations)
    tokens = b * wl.seq_len / plan.cp
    per_layer_full = mem["activation_bytes_per_token_hidden"] * tokens * wl.hidden * elem / 2.0 / plan.tp
    if wl.eager_attention:
        # Eager attention (typical BERT scripts) keeps each head's softmax output, dropout mask (1 byte) and dropout
        # output for backward: Korthikanti et al.'s 5as/h term in FP16. Lambda sized its BERT batches to memory, and
        # with this term they sit at estimate()'s one-pass limit (bench/memory.py); without it, 1.5x as many fit.
        per_layer_full += (2.0 * elem + 1.0) * wl.heads / plan.tp * wl.seq_len * tokens
    layers_here = stage_layers(wl.layers, plan.pp, plan.vp)
    # 1F1B pipelining keeps up to pp micro-batches in flight on the first stage.
    in_flight = min(plan.pp, max(1, plan.global_batch // max(1, plan.dp * b)))
    if plan.recompute:
        checkpoints = tokens * wl.hidden * elem / plan.tp * layers_here * in_flight
        activations = checkpoints + per_layer_full
    else:
        activations = per_layer_full * layers_here * in_flight
    # FP32 logits of the last stage (large for 128k vocabularies).
    # An encoder fine-tuned for SQuAD or GLUE has a head of a few outputs per token, not the masked-LM vocabulary.
    logits = 0.0 if wl.kind == "encoder" and wl.mode == "finetune" else tokens * wl.vocab * 4.0 / plan.tp
    if plan.sharded and plan.gradient_group > 1:
        # FSDP holds one gathered layer (weights + gradients) beyond its shard.
        state += 2 * elem * wl.params / max(1, wl.layers) / plan.tp
    return float(state + activations + logits)


def reserved_gib(communicates: bool) -> float:
    """GiB the framework holds outside the model: the CUDA context, and NCCL's workspaces where the layout
    communicates."""
    return CONTEXT_GIB + (NCCL_GIB if communicates else 0.0)


def usable_bytes(spec: GpuSpec, communicates: bool) -> float:
    """Bytes the model may fill on ``spec``: after the reserve, fragmentation and, where the layout communicates,
    the headroom kept free for the collectives."""
    share = FRAGMENTATION - (COLLECTIVE_HEADROOM if communicates else 0.0)
    return (spec.memory_gib * share - reserved_gib(communicates)) * GIB
