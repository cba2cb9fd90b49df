"""The TPU station's numbers: a MaxText-style JAX/XLA trainer on Cloud TPU slices. Per chip, a step's matrix work
over the MXU peak times a fitted efficiency plus element-wise HBM traffic; tensor-sharding collectives and FSDP's
weight gathers and gradient reduce-scatters over the slice's ICI torus, overlapped with compute by XLA's async
collectives; the gradient all-reduce between slices over the data-centre network (DCN), added. HBM per chip holds
the sharded training state and the activations each rematerialisation policy keeps. The fabric facts are
``data/tpus.csv``, the coefficients a ``TpuParams`` value (``data/tpu_params.json``, fitted by
``scripts/fit_tpu.py``)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

from planner._data import data_dir
from planner.perf.step import forward_flops
from planner.perf.workloads import Workload

GIB = 1024.0**3
# Rematerialisation policies, by what backward recomputes: nothing, part of the layer (MaxText's minimal, custom,
# save_* and *_offloaded policies keep the matmul outputs or move them to host memory), or the whole forward pass.
REMAT = ("none", "partial", "full")
# MaxText's defaults: FP32 master weights (weight_dtype float32), FP32 gradients and AdamW's two FP32 moments.
STATE_BYTES_PER_PARAM = 16.0
# Bytes kept per token and hidden unit per layer for backward (bf16): everything (Korthikanti et al. 2022's 34 with
# fused attention), the matmul outputs a partial policy saves (q, k, v, out projections and the layer input: about
# 10), or the layer input alone.
SAVED_BYTES_PER_TOKEN_HIDDEN = {"none": 34.0, "partial": 10.0, "full": 2.0}
# XLA's runtime and program buffers keep a share of HBM; what is left holds the model (an assumption, like the GPU
# station's fragmentation share).
USABLE_HBM_SHARE = 0.94
# Tokens per chip and micro-batch the layout search tries up to (MaxText recipes run 16k-48k).
MAX_TOKENS_PER_CHIP = 49152
# The global batch the search grows to without the user's: 4M tokens, Llama 2's pre-training batch (Llama 3 used
# 4-16M); more chips than that holds run one sequence per tensor group. Per tensor group, the sequences tried.
TARGET_BATCH_TOKENS = 1 << 22
GROUP_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


@dataclass(frozen=True)
class TpuChip:
    """A TPU generation's fabric facts (``data/tpus.csv``)."""

    id: str
    bf16_tflops: float
    fp8_tflops: float | None
    memory_gib: float
    hbm_gbs: float
    ici_gbs_bidirectional: float
    torus_dims: int
    max_slice_chips: int
    chips_per_host: int
    dcn_gbps_per_chip: float
    system_power_w: float | None


@cache
def tpu_chips() -> Mapping[str, TpuChip]:
    """Every TPU generation's fabric facts by id, read once."""
    chips: dict[str, TpuChip] = {}
    with (data_dir() / "tpus.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            chips[row["tpu"]] = TpuChip(
                id=row["tpu"],
                bf16_tflops=float(row["bf16_tflops"]),
                fp8_tflops=float(row["fp8_tflops"]) if row["fp8_tflops"] else None,
                memory_gib=float(row["memory_gib"]),
                hbm_gbs=float(row["memory_bandwidth_gbps"]),
                ici_gbs_bidirectional=float(row["ici_gbs_bidirectional"]),
                torus_dims=int(row["torus_dims"]),
                max_slice_chips=int(row["max_slice_chips"]),
                chips_per_host=int(row["chips_per_host"]),
                dcn_gbps_per_chip=float(row["dcn_gbps_per_chip"]),
                system_power_w=float(row["system_power_w"]) if row["system_power_w"] else None,
            )
    return MappingProxyType(chips)


@dataclass(frozen=True, eq=False)
class TpuParams:
    """The TPU station's fitted coefficients and the fit's record (``data/tpu_params.json``), read-only."""

    mxu_efficiency: float
    tokens_half: float
    hbm_bytes_per_activation: float
    partial_remat_share: float
    attention_relative: float
    ici_efficiency: float
    dcn_efficiency: float
    band: tuple[float, float]
    record: Mapping[str, Any] = field(repr=False)
    _key: str = field(repr=False)

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> TpuParams:
        fitted = document["fitted"]
        return cls(
            mxu_efficiency=float(fitted["mxu_efficiency"]),
            tokens_half=float(fitted["tokens_half"]),
            hbm_bytes_per_activation=float(fitted["hbm_bytes_per_activation"]),
            partial_remat_share=float(fitted["partial_remat_share"]),
            attention_relative=float(fitted["attention_relative"]),
            ici_efficiency=float(fitted["ici_efficiency"]),
            dcn_efficiency=float(fitted["dcn_efficiency"]),
            band=(float(document["band"][0]), float(document["band"][1])),
            record=MappingProxyType(dict(document)),
            _key=json.dumps(document, sort_keys=True),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TpuParams) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)


@cache
def default_tpu_params() -> TpuParams:
    """The bundled fit, ``data/tpu_params.json``, read once."""
    with (data_dir() / "tpu_params.json").open(encoding="utf-8") as handle:
        return TpuParams.from_dict(json.load(handle))


@dataclass(frozen=True)
class Mesh:
    """A MaxText mesh: ``slices`` over DCN (data parallel), and inside each slice of ``slice_chips`` chips an ICI
    mesh of ``fsdp`` x ``tensor``. ``group_batch`` is the sequences a tensor group runs per step; each chip's share,
    ``batch``, may be a fraction of a sequence (MaxText's ``per_device_batch_size`` below 1 with tensor sharding)."""

    slices: int
    slice_chips: int
    tensor: int
    group_batch: int
    remat: str

    @property
    def batch(self) -> float:
        return self.group_batch / self.tensor

    @property
    def global_batch(self) -> int:
        return self.group_batch * self.chips // self.tensor

    @property
    def fsdp(self) -> int:
        return self.slice_chips // self.tensor

    @property
    def chips(self) -> int:
        return self.slices * self.slice_chips


@dataclass(frozen=True)
class TpuStep:
    """One step of a mesh: its time and parts, the model FLOPs per chip, and HBM per chip."""

    step_s: float
    compute_s: float
    tensor_comm_s: float
    fsdp_comm_s: float
    dcn_comm_s: float
    model_flops_per_chip: float
    memory_bytes: float


def axis_bandwidth_gbs(chip: TpuChip, axis: int, slice_chips: int, efficiency: float) -> float:
    """GB/s one chip sends in a collective over a mesh axis of ``axis`` chips. A torus ring uses both directions of
    the links of the dimensions the axis spans: an axis over the whole slice uses all of them, a smaller one the
    share log(axis)/log(slice) of them, at least one dimension's."""
    if axis <= 1:
        return math.inf
    share = 1.0 if slice_chips <= axis else max(1.0 / chip.torus_dims, math.log(axis) / math.log(slice_chips))
    return chip.ici_gbs_bidirectional / 2.0 * min(1.0, share) * efficiency


def memory_bytes(wl: Workload, mesh: Mesh) -> float:
    """Peak HBM bytes per chip: the training state sharded over the slice (replicated across slices), the
    activations the rematerialisation policy keeps, one layer's working set, two gathered layers of weights and the
    FP32 logits."""
    state = wl.params * STATE_BYTES_PER_PARAM / mesh.slice_chips
    tokens = mesh.batch * wl.seq_len
    # A tensor group runs ``tensor`` times the sequences, each chip 1/tensor of every activation: the chip's own
    # sequences' worth, whatever the tensor sharding.
    kept = SAVED_BYTES_PER_TOKEN_HIDDEN[mesh.remat] * tokens * wl.hidden * wl.layers
    working = SAVED_BYTES_PER_TOKEN_HIDDEN["none"] * tokens * wl.hidden
    gathered = 2 * 2.0 * wl.params / max(1, wl.layers) / mesh.tensor
    logits = tokens * wl.vocab * 4.0
    return float(state + kept + working + gathered + logits)


def usable_bytes(chip: TpuChip) -> float:
    return chip.memory_gib * USABLE_HBM_SHARE * GIB


def step_time(wl: Workload, chip: TpuChip, mesh: Mesh, fitted: TpuParams) -> TpuStep:
    """The step of ``mesh``: per chip, ``batch`` sequences through forward and backward, and the collectives."""
    tokens = float(mesh.batch * wl.seq_len)
    linear, attention = forward_flops(wl, tokens)
    model_flops = 3.0 * (linear + attention)
    extra = {"none": 0.0, "partial": fitted.partial_remat_share, "full": 1.0}[mesh.remat]
    peak = chip.bf16_tflops * 1e12
    efficiency = fitted.mxu_efficiency * tokens / (tokens + fitted.tokens_half)
    # Backward is two passes of each matmul; remat repeats a share of the forward. Attention (splash/flash kernels,
    # causal blocks skipped) runs at its own share of the matmul rate; its FLOPs are counted whole, as MFU counts them.
    passes = 3.0 + extra
    mxu_s = passes * (linear + attention / fitted.attention_relative) / (peak * efficiency)
    # Element-wise work streams the chip's share of activations through HBM. With tensor sharding a group of chips
    # runs ``tensor`` times the sequences, each chip 1/tensor of every hidden vector: the same bytes per chip.
    hbm_s = fitted.hbm_bytes_per_activation * wl.layers * wl.hidden * tokens * 2.0 / (chip.hbm_gbs * 1e9)
    compute = mxu_s + hbm_s
    # Tensor sharding (Megatron-style, sequence-sharded activations): per layer two all-gathers and two
    # reduce-scatters forward and as many backward (two more with full remat), each moving (tensor - 1) shards of the
    # chip's tokens x hidden in bf16. XLA's collective matmuls overlap them with the matmuls, like FSDP's gathers
    # (measured: added to the step instead, the v5p tables' 4-16-way runs came out 15-25% too slow).
    tensor_s = 0.0
    if mesh.tensor > 1:
        ops = 8.0 + (2.0 if mesh.remat == "full" else 0.0)
        volume = ops * wl.layers * (mesh.tensor - 1) * tokens * wl.hidden * 2.0
        tensor_s = volume / (axis_bandwidth_gbs(chip, mesh.tensor, mesh.slice_chips, fitted.ici_efficiency) * 1e9)
    # FSDP: bf16 weights gathered for forward and again for backward, bf16 gradients reduce-scattered.
    fsdp_s = 0.0
    if mesh.fsdp > 1:
        volume = 6.0 * wl.params / mesh.tensor * (mesh.fsdp - 1) / mesh.fsdp
        fsdp_s = volume / (axis_bandwidth_gbs(chip, mesh.fsdp, mesh.slice_chips, fitted.ici_efficiency) * 1e9)
    # Between slices: each chip all-reduces its FP32 gradient shard with its peers over DCN. It is added to the step,
    # not hidden: MaxText's own multi-slice tables lose 2-10% per chip from 1 to 32 slices of v5e even where the
    # all-reduce is far shorter than the compute it could overlap.
    dcn_s = 0.0
    if mesh.slices > 1:
        volume = 2.0 * (mesh.slices - 1) / mesh.slices * wl.params * 4.0 / mesh.slice_chips
        dcn_s = volume / (chip.dcn_gbps_per_chip / 8.0 * 1e9 * fitted.dcn_efficiency)
    step = max(compute, tensor_s + fsdp_s) + dcn_s
    return TpuStep(step, compute, tensor_s, fsdp_s, dcn_s, model_flops, memory_bytes(wl, mesh))


def slice_shape(chip: TpuChip, chips: int, slice_chips: int | None) -> tuple[int, int]:
    """(slices, chips per slice): as given, else one slice up to the largest sold, beyond it the fewest equal
    slices that hold the count."""
    if slice_chips is not None:
        return max(1, chips // slice_chips), min(slice_chips, chips)
    slices = 1
    while chips // slices > chip.max_slice_chips or chips % slices:
        slices += 1
    return slices, chips // slices


def candidate_meshes(wl: Workload, slices: int, slice_chips: int, global_batch: int | None) -> list[list[Mesh]]:
    """Meshes the search weighs, in families of one tensor sharding and remat policy with their batches largest
    first: tensor sharding 1-8 ways (never more than the heads), every remat policy the user allows, and per tensor
    group 1-64 sequences, up to ``MAX_TOKENS_PER_CHIP`` per chip and a global batch of ``TARGET_BATCH_TOKENS`` (or
    one sequence per tensor group, if more); the user's global batch fixes it."""
    heads = wl.heads or 64
    tensors = [t for t in (1, 2, 4, 8) if t <= slice_chips and slice_chips % t == 0 and heads % t == 0]
    chips = slices * slice_chips
    policies = {"on": ("full",), "off": ("none",)}.get(wl.recompute, REMAT)
    families = []
    for tensor in tensors:
        if global_batch is not None:
            groups = [max(1, global_batch * tensor // chips)]
        else:
            most = min(MAX_TOKENS_PER_CHIP * tensor, TARGET_BATCH_TOKENS * tensor // chips) // wl.seq_len
            groups = [g for g in GROUP_BATCHES if g <= max(1, most)][::-1]
        families += [[Mesh(slices, slice_chips, tensor, g, r) for g in groups] for r in policies]
    return families


def choose(
    wl: Workload, chip: TpuChip, slices: int, slice_chips: int, fitted: TpuParams, global_batch: int | None = None
) -> tuple[Mesh, TpuStep, bool]:
    """The fastest mesh that fits in HBM (tokens per second), else the one that needs the least: (mesh, step,
    fits). In each family the largest batch that fits is timed (a larger batch only fills the MXU better)."""
    room = usable_bytes(chip)
    best: tuple[float, Mesh, TpuStep] | None = None
    least: tuple[float, Mesh] | None = None
    for family in candidate_meshes(wl, slices, slice_chips, global_batch):
        for mesh in family:
            need = memory_bytes(wl, mesh)
            if need > room:
                if least is None or need < least[0]:
                    least = (need, mesh)
                continue
            step = step_time(wl, chip, mesh, fitted)
            rate = mesh.global_batch / step.step_s
            if best is None or rate > best[0] * 1.0001:
                best = (rate, mesh, step)
            break
    if best is not None:
        return best[1], best[2], True
    if least is None:
        raise ValueError("no mesh to weigh")
    return least[1], step_time(wl, chip, least[1], fitted), False


def min_chips_to_fit(wl: Workload, chip: TpuChip) -> int | None:
    """The fewest chips (a power of two within the largest slice) on which some mesh holds the job."""
    count = 1
    while count <= chip.max_slice_chips:
        meshes = [mesh for family in candidate_meshes(wl, 1, count, None) for mesh in family]
        if any(memory_bytes(wl, mesh) <= usable_bytes(chip) for mesh in meshes):
            return count
        count *= 2
    return None
