"""The performance model: throughput, time to solution, memory fit, MFU and energy of a training job.

Pure and fast (standard library only). Per GPU, one micro-batch costs compute time (hardware FLOPs over the
precision's dense peak times a fitted efficiency that grows with matrix size and micro-batch) plus memory time
(bytes that element-wise kernels move over HBM bandwidth); parallelism adds tensor-parallel traffic, the pipeline
bubble and data-parallel gradient or sharding traffic over NVLink/NVSwitch, PCIe and the network, partly overlapped
with compute. The coefficients come from ``data/perf_params.json``, fitted by ``scripts/fit_perf.py``.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache, lru_cache
from typing import Any

from planner import checks
from planner._data import data_dir
from planner.energy import node_factor
from planner.errors import InputError, UnknownGpuError
from planner.hardware import ELEMENT_BYTES, INTERCONNECTS, PRECISIONS, GpuSpec, gpu_table, lookup, resolve_gpu
from planner.perf.evidence import MANY_NODES, SHORT_STEP_S, held_out_verdict, short_steps_across_nodes
from planner.perf.options import ModelOptions
from planner.perf.workloads import Workload, resolve_workload

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
# A GPU's speed is its datasheet peak scaled by its measured matmul ceiling (best GEMM rate over the peak) relative
# to the A100 SXM's (271.2 of 312 TFLOP/s, data/gpu_ceilings.csv), the GPU most calibration rows ran on. Power-capped
# parts (T4, L4: about 40-60%) and the H100 (80%) sustain less of their peak; GeForce cards, which boost above their
# rated clock, more (RTX 3090: 108%).
REFERENCE_GPU = "A100-80GB"
# A GPU with no measured ceiling of its own is bounded by power: a power-capped chip's sustained matmul rate is its
# board power times the TFLOP/s per watt its generation reaches. The bound takes the best TFLOP/s per watt measured on
# a power-limited GPU of the same architecture and memory family (HBM stacks and GDDR boards spend different shares of
# their power off the SMs). Each power-limited GPU that has a measurement, predicted this way from its peers
# (bench/ceilings.py): ten, bound over measured median 1.06, range 0.84 (H100 PCIe from the GH200) to 1.25 (H100
# SXM from the H100 PCIe); the L4 (72 W) from the L40S (350 W) 0.97, the A10 from the RTX A6000 1.10. Without a peer
# the bound is not used, and where it is above the reference GPU's share of the peak it does not bind. Held out by
# GPU, it took the cross-GPU ratio error from 9.3% to 8.4% (bench/accuracy.py): the RTX 6000 Ada, A10 (measured
# since) and Quadro RTX 8000 ran slower than the reference share of their peaks said.
# How the notes name each kind of workload.
KIND_NAMES = {"cnn": "CNN", "encoder": "encoder (BERT-class)", "decoder": "decoder (LLM)"}
# A typical stack's fused attention is FlashAttention-2 (PyTorch SDPA, llm-foundry), written for Ampere: it reaches
# 50-73% of an A100's peak (Dao 2023) but about 35% of an H100's (Shah et al. 2024, FlashAttention-3), about 0.6 of its
# Ampere efficiency relative to the sustained peak. Held out by GPU, this took llm-foundry's A100/H100 ratio error from
# 14% to 2-7%. Blackwell runs the same kernels through the Ampere path. The tuned stack (Transformer Engine, cuDNN's
# Hopper-native fused attention) is not affected, nor is eager attention (BERT scripts: cuBLAS batched GEMMs).
# A typical stack's convolutions show the same gap: Lambda's PyTorch ResNet-50 runs 1.76x faster on an H100 SXM than on
# an A100 SXM in FP16 (3.2x the peak, 1.6x the HBM bandwidth) and 1.22x on the PCIe cards, where the model without it
# said 2.2x and 1.5x; it takes the same 0.6 for their tensor-core work (FP32 runs on the CUDA cores). In sample this
# moves ResNet-50 from 5.7% to 3.3%, and the convolutions' fitted efficiency off its bound, and TF32's share of the peak
# from 1.67 of FP16's to 1.05. NVIDIA's tuned recipe (MLPerf) is Hopper-native.
LATER_THAN_ADA = frozenset({"hopper", "blackwell"})
AMPERE_KERNELS_AFTER_ADA = 0.6
# The largest job estimated: the largest published training runs use tens of thousands of GPUs.
MAX_GPUS = 65536
# The precisions of mixed-precision training (16-bit or 8-bit tensor-core math), where NVIDIA's tuned CNN recipe was
# measured.
MIXED_PRECISIONS = frozenset({"fp16", "bf16", "fp8"})
# Of mixed-precision Adam's 16 bytes per parameter, the FP32 master weights and two moments (ZeRO paper, Rajbhandari
# et al. 2020: 12 of 16) are what a distributed optimizer shards.
OPTIMIZER_SHARE = 12.0 / 16.0


_OVERRIDE: list[dict[str, Any]] = []


@cache
def _load_params() -> dict[str, Any]:
    with (data_dir() / "perf_params.json").open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def perf_params() -> dict[str, Any]:
    """The fitted coefficients (``data/perf_params.json``, or the set installed by ``set_perf_params``)."""
    return _OVERRIDE[0] if _OVERRIDE else _load_params()


def set_perf_params(params: dict[str, Any] | None) -> None:
    """Use ``params`` instead of the bundled file (fitting, cross-validation); ``None`` restores the file."""
    _OVERRIDE.clear()
    if params is not None:
        _OVERRIDE.append(params)
    _estimate.cache_clear()
    _min_gpus_to_fit.cache_clear()


@cache
def matmul_ceilings() -> dict[tuple[str, str], float]:
    """Measured maximum achievable matmul TFLOP/s per (GPU id, precision) from ``data/gpu_ceilings.csv``."""
    table: dict[tuple[str, str], float] = {}
    with (data_dir() / "gpu_ceilings.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            table[(row["gpu"], row["precision"])] = float(row["achievable_tflops"])
    return table


# Bytes of one matmul operand element: FP8 tensor cores run twice BF16's FLOPs on half the bytes, TF32 half on twice.
OPERAND_BYTES = {"fp8": 1.0, "fp16": 2.0, "bf16": 2.0, "tf32": 4.0, "fp32": 4.0}


@cache
def sm_tensor_rates() -> dict[str, float]:
    """Dense FP16 tensor-core FLOPs per SM per clock, per GPU id (``data/gpu_sm_rates.csv``: the architecture
    whitepapers, each checked against the datasheet peak as SMs x rate x clock)."""
    with (data_dir() / "gpu_sm_rates.csv").open(newline="", encoding="utf-8") as handle:
        return {row["gpu"]: float(row["tensor_flops_per_sm_clock"]) for row in csv.DictReader(handle)}


def operand_feed(spec: GpuSpec, precision: str) -> float:
    """Operand bytes each SM's matmul units consume per clock in ``precision``, relative to the reference GPU's in
    BF16. One SM's rate is the same in FP8, BF16 and TF32 (twice the FLOPs on half the bytes); it is half on GeForce
    cards (FP32 accumulate at half rate), twice on an H100 and four times on a B200 what it is on an A100. A GPU
    without a row is taken at the reference GPU's rate."""
    rates = sm_tensor_rates()
    reference = rates[REFERENCE_GPU]
    per_sm = rates.get(spec.id, reference) * spec.peak_tflops(precision) / spec.peak_tflops("fp16")
    return per_sm * OPERAND_BYTES[precision] / (reference * OPERAND_BYTES["bf16"])


def _ceiling_key(spec: GpuSpec, precision: str) -> str:
    """Which ceiling a precision runs at. FP16 and BF16 share one. TF32 tensor ops run at the same clocks and power
    limit, so without a TF32 measurement a GPU sustains the share its FP16/BF16 ceiling shows (the same database
    measures both on the H100 SXM, 81% and 80%, and the RTX 4090, 104% and 102%); on a GPU without TF32 (V100, T4)
    "TF32" runs as FP32 on the CUDA cores, at the FP32 ceiling."""
    if precision in ("fp16", "bf16"):
        return "bf16"
    if precision == "tf32" and (spec.id, "tf32") not in matmul_ceilings():
        return "bf16" if spec.tf32_tflops is not None else "fp32"
    return precision


def _ceiling_share(spec: GpuSpec, precision: str) -> float | None:
    """Measured matmul ceiling over the datasheet peak (``_ceiling_key``), a power bound (half precision only), or
    None without either.

    FP32 runs on the CUDA cores, where SGEMM reaches 90-98% of the peak on the A100 and B200 but 51-70% on Ada and
    GA102 cards (their doubled FP32 lanes share issue slots with integer work) and 37-53% on the 70 W L4 and T4
    (data/gpu_ceilings.csv, FP32 rows).
    """
    found = _ceiling(spec, precision)
    return None if found is None else found[0]


def _ceiling(spec: GpuSpec, precision: str) -> tuple[float, PowerBound | None] | None:
    """(share of the datasheet peak, the power bound it comes from, or None where it is measured), or None."""
    key = _ceiling_key(spec, precision)
    peak = spec.peak_tflops(key)
    measured = measured_ceiling(spec, key)
    if measured is not None:
        return measured / peak, None
    if key == "bf16":
        bound = power_bound(spec)
        if bound is not None and bound.tflops / peak < _reference_share():
            return bound.tflops / peak, bound
    return None


def ceiling_origin(spec: GpuSpec, precision: str) -> str | None:
    """Where the GPU's matmul ceiling for ``precision`` comes from, in words, or None where none applies."""
    found = _ceiling(spec, precision)
    if found is None:
        return None
    bound = found[1]
    if bound is None:
        return "measured ceiling, data/gpu_ceilings.csv"
    return (
        f"no measured ceiling: bounded by its {spec.tdp_w:.0f} W board power at the {bound.tflops_per_watt:.2f} "
        f"TFLOP/s per watt measured on the {bound.peer}"
    )


def sustained_matmul(spec: GpuSpec, precision: str) -> tuple[float, str]:
    """The matmul TFLOP/s in ``precision`` the model lets the GPU sustain, and where it comes from: ``measured``,
    ``power bound (<peer>)``, or ``assumed`` (the reference GPU's share of the datasheet peak)."""
    peak = spec.peak_tflops(precision)
    found = _ceiling(spec, precision)
    if found is None:
        return peak * _reference_share(_reference_key(spec, precision)), "assumed"
    share, bound = found
    return peak * share, "measured" if bound is None else f"power bound ({bound.peer})"


def measured_ceiling(spec: GpuSpec, precision: str) -> float | None:
    """The GPU's own row in ``data/gpu_ceilings.csv`` (BF16 falls back to FP16), in TFLOP/s."""
    table = matmul_ceilings()
    return table.get((spec.id, precision)) or (table.get((spec.id, "fp16")) if precision == "bf16" else None)


def memory_family(spec: GpuSpec) -> str:
    """HBM or GDDR: a stack beside the die, or chips on the board with their own share of its power."""
    return "HBM" if spec.memory_type.upper().startswith("HBM") else "GDDR"


@dataclass(frozen=True)
class PowerBound:
    """A half-precision matmul bound from board power: ``tdp_w`` x the best TFLOP/s per watt of ``peer``."""

    tflops: float
    peer: str
    tflops_per_watt: float


@cache
def power_bound(spec: GpuSpec, exclude: frozenset[str] = frozenset()) -> PowerBound | None:
    """Board power times the best measured FP16/BF16 TFLOP/s per watt among the GPU's peers (same architecture and
    memory family, each with its own measured ceiling and held back by power), or None without a peer. ``exclude``
    leaves GPUs out (the bench predicts each measured ceiling from the others)."""
    best: PowerBound | None = None
    for other in gpu_table().values():
        if (
            other.id == spec.id
            or other.id in exclude
            or other.architecture != spec.architecture
            or memory_family(other) != memory_family(spec)
        ):
            continue
        ceiling = measured_ceiling(other, "bf16")
        # A GPU at or above the reference GPU's share of its peak is held back by something other than power (the
        # A10G and the GeForce cards reach their FP32-accumulate rate): its TFLOP/s per watt says nothing here.
        if ceiling is None or ceiling / other.peak_tflops("bf16") >= _reference_share():
            continue
        per_watt = ceiling / other.tdp_w
        if best is None or per_watt > best.tflops_per_watt:
            best = PowerBound(per_watt * spec.tdp_w, other.id, per_watt)
    return best


def matmul_derate(spec: GpuSpec, precision: str) -> float:
    """How much of its datasheet peak a GPU sustains relative to the reference GPU (1.0 without a measurement).

    FP32 is relative to the reference GPU's FP32 share; TF32 and FP8, as before, to its BF16 share (the fitted
    ``tf32_relative`` and ``fp8_relative`` carry the rest)."""
    share = _ceiling_share(spec, precision)
    if share is None:
        return 1.0
    return share / _reference_share(_reference_key(spec, precision))


def _reference_key(spec: GpuSpec, precision: str) -> str:
    return "fp32" if _ceiling_key(spec, precision) == "fp32" else "bf16"


@cache
def _reference_share(precision: str = "bf16") -> float:
    share = _ceiling_share(resolve_gpu(REFERENCE_GPU), precision)
    if share is None:
        raise RuntimeError(f"data/gpu_ceilings.csv must measure the reference GPU {REFERENCE_GPU} in {precision}")
    return share


@dataclass(frozen=True)
class Plan:
    """How the job is laid out on the GPUs."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    sharded: bool = False
    recompute: bool = False
    micro_batch: int = 1
    global_batch: int = 1
    # Context parallelism splits every sequence over ``cp`` GPUs (ring attention); interleaved 1F1B gives each
    # pipeline rank ``vp`` virtual stages, dividing the pipeline bubble by ``vp``.
    cp: int = 1
    vp: int = 1
    # ZeRO-1/2 ("distributed optimizer"): optimizer state and gradients sharded over the gradient group, weights
    # replicated; moves what a gradient all-reduce moves (reduce-scatter, then all-gather of updated weights).
    zero1: bool = False

    @property
    def gradient_group(self) -> int:
        """Ranks that hold the same weights and reduce gradients together: data x context parallel."""
        return self.dp * self.cp

    @property
    def communicates(self) -> bool:
        """Whether the layout runs collectives (NCCL): more than one GPU."""
        return self.tp * self.pp * self.gradient_group > 1

    def batched(self, micro_batch: int, global_batch: int) -> Plan:
        """This layout with another micro-batch and global batch. The layout search tries thousands of these per
        ranking; positional construction costs a third of ``dataclasses.replace``."""
        return Plan(
            self.tp,
            self.pp,
            self.dp,
            self.sharded,
            self.recompute,
            micro_batch,
            global_batch,
            self.cp,
            self.vp,
            self.zero1,
        )


@dataclass(frozen=True)
class Estimate:
    """One workload on ``gpus`` x ``gpu``: the JSON contract of ``gpuplan estimate`` plus context."""

    workload: str
    gpu: str
    gpus: int
    nodes: int
    gpus_per_node: int
    precision: str
    interconnect: str
    network_gbps: float
    # None where the configuration does not fit in memory: a number that did not happen is not shown.
    throughput: float | None
    throughput_unit: str
    throughput_per_gpu: float | None
    throughput_low: float | None
    throughput_high: float | None
    step_time_s: float | None
    time_to_solution_hours: float | None
    work: float
    work_unit: str
    memory_per_gpu_gib: float
    gpu_memory_gib: float
    fits_in_memory: bool
    why_not_fits: str | None
    min_gpus_to_fit: int | None
    mfu: float | None
    energy_kwh: float | None
    parallelism: dict[str, Any] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    # Whether data/benchmarks.csv holds measurements of this kind of model (CNN, encoder, decoder) on this GPU;
    # without them the band is wider.
    gpu_calibrated: bool = True
    calibration_note: str | None = None
    # On a GPU without such measurements, what the runs kept out of the fit found (data/lambda_v2_runs.csv, typical
    # stack): the model's median error on them in percent, positive where the model is faster than measured.
    held_out_error_pct: float | None = None
    # Where the layout takes steps under 100 ms across 8 or more nodes: the median of measured over predicted time of
    # NVIDIA's held-out MLPerf runs in that regime (data/mlperf_scale_out.csv); None elsewhere.
    slower_at_scale: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (float, int, str, bool, None, list, dict) for JSON."""
        return asdict(self)


# ---------------------------------------------------------------- input checks


def _check_precision(spec: GpuSpec, precision: str, notes: list[str], wl: Workload) -> str:
    key = str(precision).strip().lower()
    if key not in PRECISIONS:
        raise InputError(f"must be one of {', '.join(PRECISIONS)}, got {precision!r}", field="precision")
    if key == "fp8" and not wl.is_transformer:
        # FP8 training is Transformer Engine's: its FP8 GEMMs replace a transformer's linear layers. No framework
        # trains convolutions in FP8, so there is no FP8 CNN run to estimate (and none was ever measured).
        raise InputError(
            f"fp8 applies to transformer workloads (Transformer Engine's FP8 linear layers); {wl.name} trains in "
            "bf16, fp16, tf32 or fp32",
            field="precision",
        )
    if key == "fp8" and not spec.supports("fp8"):
        raise InputError(
            f"fp8 is not supported on {spec.id} (needs Ada, Hopper or newer); use bf16 or fp16", field="precision"
        )
    if key == "bf16" and not spec.supports("bf16"):
        notes.append(f"{spec.id} has no BF16: estimated with FP16 mixed precision (same tensor-core peak)")
        return "fp16"
    if key == "tf32" and not spec.supports("tf32"):
        notes.append(f"{spec.id} has no TF32: estimated as true FP32")
        return "fp32"
    return key


def default_interconnect(spec: GpuSpec) -> str:
    """NVSwitch on SXM/OAM/superchip boards, NVLink bridges on NVL pairs, PCIe otherwise."""
    if spec.form_factor in ("sxm", "oam", "superchip", "nvl72"):
        return "nvswitch"
    if spec.form_factor == "nvl":
        return "nvlink"
    return "pcie"


def nvlink_domain(spec: GpuSpec) -> int:
    """GPUs that share one NVLink/NVSwitch fabric by default: 72 in a GB200/GB300 NVL72 rack, else a node of 8."""
    return 72 if spec.form_factor == "nvl72" else 8


def default_network_gbps(spec: GpuSpec) -> float:
    """Typical data-centre network per node of 8 for this GPU (e.g. 400 Gbps p4d A100, 3200 Gbps p5 H100)."""
    table: dict[str, float] = perf_params()["network_gbps_by_architecture"]
    if spec.form_factor == "pcie" and spec.architecture not in ("hopper", "blackwell"):
        return float(table.get("pcie", 100.0))
    return float(table.get(spec.architecture, table["default"]))


# ---------------------------------------------------------------- the physics


def _link_gbs(spec: GpuSpec, interconnect: str, group: int) -> float:
    """Effective all-reduce bus bandwidth (GB/s per GPU) among ``group`` GPUs of one node."""
    comm = perf_params()["comm"]
    pcie = 16.0 * 2 ** (spec.pcie_gen - 3) * comm["pcie_efficiency"]
    if interconnect == "nvswitch" and spec.nvlink_gbps:
        return float(spec.nvlink_gbps / 2 * comm["nvlink_efficiency"])
    # NVLink bridges join pairs; an OAM board's links (AMD's Infinity Fabric) join every GPU pair of the node
    # directly, a full mesh that serves a collective over all of them as a switch would.
    if interconnect == "nvlink" and spec.nvlink_gbps and (group <= 2 or spec.form_factor == "oam"):
        return float(spec.nvlink_gbps / 2 * comm["nvlink_efficiency"])
    return float(pcie)


def _dp_bandwidth(spec: GpuSpec, interconnect: str, plan: Plan, gpus_per_node: int, network_gbps: float) -> float:
    """Bus bandwidth (GB/s) of a data-parallel collective: the intra-node link, or the network across nodes."""
    group = plan.gradient_group
    span = group * plan.tp
    intra = _link_gbs(spec, interconnect, min(span, gpus_per_node))
    if span <= gpus_per_node:
        return intra
    # Hierarchical (NCCL multi-ring) collectives spread a group's cross-node traffic over the NICs of its own ranks
    # (one NIC per GPU on p4d/p5 nodes). Tensor-parallel ranks fill a node first, so a data-parallel group has only
    # gpus_per_node / tp ranks, and as many NICs, per node: with 8-way tensor parallelism each GPU's gradient or
    # shard traffic crosses nodes through a single NIC.
    ranks_per_node = max(1, min(group, gpus_per_node // plan.tp))
    return float(min(intra, _node_network_gbs(network_gbps) * ranks_per_node / gpus_per_node))


def _node_network_gbs(network_gbps: float) -> float:
    """What a node's network cards carry in GB/s, all of them together, at the fitted network efficiency."""
    return float(network_gbps / 8.0 * perf_params()["comm"]["network_efficiency"])


def _fp8_relative(family: dict[str, float], stack: str) -> float:
    """FP8 GEMM efficiency relative to BF16: Transformer Engine recipes in NVIDIA's tuned stack have their own."""
    return float(
        family.get("tuned_fp8_relative", family["fp8_relative"]) if stack == "tuned" else family["fp8_relative"]
    )


def _efficiency_scale(spec: GpuSpec, precision: str, family: dict[str, float], stack: str = "typical") -> float:
    """Fraction of the dense peak a well-shaped matmul reaches, for this precision."""
    rel = _fp8_relative(family, stack) if precision == "fp8" else family.get(f"{precision}_relative", 1.0)
    if precision == "tf32" and spec.tf32_tflops is None:
        rel = family.get("fp32_relative", 1.0)
    return float(family["peak_efficiency"] * rel)


def _ampere_kernels(wl: Workload, spec: GpuSpec, precision: str) -> bool:
    """Whether a typical stack runs Ampere-era kernels on a later GPU: a transformer's FlashAttention-2-class
    attention, or a CNN's tensor-core convolutions. Eager attention (typical BERT scripts) is cuBLAS batched GEMMs,
    native to every GPU; FP32 runs on the CUDA cores; the tuned stacks are native."""
    if wl.stack == "tuned" or spec.architecture not in LATER_THAN_ADA or precision == "fp32":
        # FP32 runs on the CUDA cores (no FlashAttention, no tensor-core convolutions): nothing Ampere-era to pay.
        return False
    return not (wl.is_transformer and wl.eager_attention)


def _sample_time(
    wl: Workload, spec: GpuSpec, precision: str, micro_batch: int, tp: int, recompute: bool, cp: int = 1
) -> tuple[float, float, float, float]:
    """Seconds for one GPU to run forward+backward of ``micro_batch`` samples: (compute, memory, model FLOPs, the
    attention matmuls' share of compute).

    With context parallelism each GPU holds ``seq_len / cp`` tokens of every sequence and attends them to all keys.
    """
    params = perf_params()
    # A power-capped or hard-to-feed GPU sustains less of its datasheet peak (data/gpu_ceilings.csv).
    peak = spec.peak_tflops(precision) * 1e12 * matmul_derate(spec, precision)
    bw = spec.memory_bandwidth_gbps * 1e9
    elem = ELEMENT_BYTES[precision]
    if not wl.is_transformer:
        fam = params["cnn"]
        flops = (wl.flops_per_sample or 0.0) * micro_batch
        eff = _efficiency_scale(spec, precision, fam) * micro_batch / (micro_batch + fam["batch_half"])
        # The more FLOPs a GPU has per byte of HBM bandwidth, the harder its tensor cores are to keep fed
        # (cross-validated: helps CNNs; for transformers the separate memory term already carries it).
        eff /= 1.0 + peak / bw / fam["balance_half"]
        if _ampere_kernels(wl, spec, precision):
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
    fam = params["transformer"]
    seq, layers, hidden = wl.seq_len, wl.layers, wl.hidden
    tokens = micro_batch * seq / cp
    linear, attention = _forward_flops(wl, tokens)
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
    # Linear layers are GEMMs of width hidden/tp: narrow ones use the tensor cores poorly. A narrow GEMM reuses each
    # operand it loads fewer times, and an SM feeds its tensor cores from shared memory and registers at about the
    # same bytes per clock since Volta, while their FLOPs per clock doubled with the A100, Hopper and Blackwell. The
    # width at which a GEMM reaches half its rate grows with the operand bytes an SM consumes per clock
    # (``operand_feed``): an H100 needs twice the A100's width, a GeForce card half.
    eff = base * shard_hidden / (shard_hidden + fam["hidden_half"] * operand_feed(spec, precision))
    # Fused attention kernels (FlashAttention) work per head, whatever the width, at a lower share of the peak
    # than large GEMMs; with FP8 only the linear layers run in FP8 (Transformer Engine), attention stays in BF16.
    attention_rate = peak * base * fam["attention_relative"]
    if _ampere_kernels(wl, spec, precision):
        attention_rate *= AMPERE_KERNELS_AFTER_ADA
    if precision == "fp8":
        # BF16 attention runs at the GPU's BF16 ceiling, not at its FP8 one scaled down (an H100 sustains 80% of its
        # BF16 peak but 71% of its FP8 peak).
        bf16_peak = spec.peak_tflops("bf16") * 1e12 * matmul_derate(spec, "bf16")
        attention_rate *= bf16_peak / peak / _fp8_relative(fam, wl.stack)
    attention_time = attention * attention_passes / attention_rate
    matmul_time = linear * linear_passes / (peak * eff) + attention_time
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
        # NVIDIA's BERT recipe has its own pair, solved on its MLPerf runs (``calibration.solve_tuned_encoder``; no
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


def attention_matmul_passes(wl: Workload, recompute: bool) -> float:
    """Attention's matmul work in a training step, in forward passes of it (QK^T and PV). Eager attention (typical
    BERT scripts) saves its scores for backward, which then runs two passes (dQ/dK and dV/dP). Fused kernels
    (FlashAttention and its kin: the decoder sources, NVIDIA's tuned recipes) keep no scores: their backward
    recomputes QK^T and runs the four gradient matmuls, 2.5 passes (Dao, FlashAttention-2, 2023). Activation
    checkpointing runs the forward once more."""
    backward = 2.0 if wl.eager_attention else 2.5
    return 1.0 + backward + (1.0 if recompute else 0.0)


def _forward_flops(wl: Workload, tokens: float) -> tuple[float, float]:
    """A transformer's forward FLOPs on ``tokens`` tokens: (linear layers, attention scores and values)."""
    return 2.0 * wl.params * tokens, 4.0 * wl.layers * wl.hidden * wl.seq_len * tokens


def forward_share(wl: Workload) -> float:
    """A forward pass's share of a training step's FLOPs on the same samples, without recomputation: what evaluating
    a sample costs against training on it. Full training runs three passes (forward, input and weight gradients),
    so 1/3; LoRA skips the frozen linear layers' weight gradients but not attention's backward (``_sample_time``)."""
    if not wl.is_transformer:
        return 1.0 / 3.0
    linear, attention = _forward_flops(wl, 1.0)
    linear_passes = 2.0 if wl.mode == "lora" else 3.0
    return (linear + attention) / (linear * linear_passes + attention * 3.0)


def trained_params(wl: Workload) -> float:
    """Parameters that train, and so carry gradients, optimizer state and a place in every checkpoint: all of them,
    or for LoRA the adapters' share (the frozen base weights stay as their published checkpoint has them)."""
    if wl.mode == "lora":
        share = wl.trainable_share or perf_params()["memory"]["lora_trainable_fraction"]
        return float(wl.params * share)
    return float(wl.params)


def _lora_text(wl: Workload) -> str:
    share = trained_params(wl) / wl.params
    given = (
        "as given"
        if wl.trainable_share is not None
        else "the default, an assumption: rank-16 to rank-64 adapters on every linear layer of a 7-70B model train "
        "0.3-2.4% of it"
    )
    return (
        f"LoRA: the adapters train {share:.3g} of the parameters ({share * 100:.3g}%; {given}); they alone carry "
        "gradients, optimizer state and checkpoints, and the base model's frozen weights skip their weight gradients"
    )


def _memory_bytes(wl: Workload, precision: str, plan: Plan) -> float:
    """Peak bytes per GPU: model state (weights, gradients, optimizer), activations, logits."""
    mem = perf_params()["memory"]
    shards = plan.tp * plan.pp
    if wl.mode == "lora":
        # The frozen base weights, and the adapters' full training state. NVIDIA's FP8 recipes keep the frozen weights
        # in FP8 (NeMo's ``fp8_params``, on in its MLPerf Llama-2-70B LoRA configs).
        weight_bytes = 4.0 if precision in ("fp32", "tf32") else 2.0
        if precision == "fp8" and wl.stack == "tuned":
            weight_bytes = 1.0
        frozen = wl.params * weight_bytes
    else:
        frozen = 0.0
    trained = trained_params(wl) * mem["adam_bytes_per_param"]
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
    layers_here = wl.layers / plan.pp
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


def _reserved_gib(communicates: bool) -> float:
    """GiB the framework holds outside the model: the CUDA context, and NCCL's workspaces where the layout
    communicates."""
    return CONTEXT_GIB + (NCCL_GIB if communicates else 0.0)


def _usable_bytes(spec: GpuSpec, communicates: bool) -> float:
    """Bytes the model may fill on ``spec``: after the reserve, fragmentation and, where the layout communicates,
    the headroom kept free for the collectives."""
    share = FRAGMENTATION - (COLLECTIVE_HEADROOM if communicates else 0.0)
    return (spec.memory_gib * share - _reserved_gib(communicates)) * GIB


@dataclass(frozen=True)
class _Timing:
    step_s: float
    compute_s: float
    comm_exposed_s: float
    model_flops_per_step: float
    samples_per_step: int
    # The host (eager launches) or the tuned recipe's input feed, not the GPU, sets the pace.
    host_bound: bool
    # The same step's compute without a feed that paces training only: what an evaluation pass scales from.
    eval_compute_s: float


def _step_time(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    plan: Plan,
    interconnect: str,
    gpus_per_node: int,
    network_gbps: float,
) -> _Timing:
    comm = perf_params()["comm"]
    t_comp, t_mem, flops, t_attention = _sample_time(
        wl, spec, precision, plan.micro_batch, plan.tp, plan.recompute, plan.cp
    )
    # A pipeline stage runs 1/pp of the layers.
    t_comp, t_mem, flops, t_attention = t_comp / plan.pp, t_mem / plan.pp, flops / plan.pp, t_attention / plan.pp
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
        host = plan.micro_batch * perf_params()["cnn"].get(key, 0.0)
    if wl.is_transformer:
        stage_layers = wl.layers / plan.pp
        # Tuned stacks replay CUDA graphs of fused kernels: no per-kernel launch cost on the host or the GPU.
        eager = 0.0 if wl.stack == "tuned" else 1.0
        # Kernel launches and small ops: a fixed cost per layer and micro-batch, whatever the GPU.
        per_micro += stage_layers * comm["layer_overhead_s"] * eager
        # The host issues the kernels of a layer (eager PyTorch: a few hundred ops at about 10 us each) while the
        # GPU runs earlier ones: the GPU waits for it when a micro-batch is small (launch-bound).
        host = stage_layers * comm["host_layer_s"] * (4.0 / 3.0 if plan.recompute else 1.0) * eager
        if wl.stack == "tuned" and wl.kind == "encoder":
            # NVIDIA's MLPerf BERT recipe feeds each GPU at a rate that does not grow with the GPU: every Blackwell run
            # (B200 on two rounds and two submitters' machines, a GB200 with its own Grace host and a higher power
            # limit) trains 1,360-1,480 sequences/s per GPU, 1.4-1.5x a Hopper where the tensor cores promise 2.2x.
            # Its cause is not published. Like the CNN's input floor, it runs beside the GPU: the slower sets the pace.
            tokens_here = plan.micro_batch * wl.seq_len / plan.cp
            feed = tokens_here * perf_params()["transformer"].get("tuned_input_s_per_token", 0.0)
        if plan.tp > 1:
            # Megatron: 4 all-reduces of the activations per layer (2 forward, 2 backward), not overlapped.
            link = _link_gbs(spec, interconnect, plan.tp) * 1e9
            elem = ELEMENT_BYTES[precision]
            volume = 4 * stage_layers * plan.micro_batch * wl.seq_len / plan.cp * wl.hidden * elem
            tp_comm = volume * 2 * (plan.tp - 1) / plan.tp / link + 4 * stage_layers * comm["collective_latency_s"]
            if wl.stack == "tuned":
                # Transformer Engine overlaps tensor-parallel collectives with the GEMMs that produce and use them.
                tp_comm *= perf_params()["transformer"].get("tuned_tp_exposed", 1.0)
        if plan.cp > 1:
            # Context parallelism's ring exchange runs beside the attention of the chunk in hand (Transformer
            # Engine overlaps each step's transfer with it): only what outlasts the attention matmuls waits.
            ring = _context_exchange_s(wl, spec, precision, plan, interconnect, gpus_per_node, network_gbps)
            tp_comm += max(0.0, ring - t_attention)
        if plan.pp > 1:
            # Between pipeline stages: each micro-batch's activations forward and their gradients backward, once per
            # virtual stage, every rank sending its 1/tp slice (Megatron's scatter-gather), point to point and
            # waited for by the 1F1B schedule. Stages are the outermost rank dimension: adjacent ones sit on
            # different nodes once a stage's tensor x data x context ranks fill a node, and share its NICs.
            elem = ELEMENT_BYTES["bf16" if precision == "fp8" else precision]  # FP8 recipes exchange BF16
            volume = plan.micro_batch * wl.seq_len / plan.cp * wl.hidden * elem / plan.tp
            if plan.tp * plan.dp * plan.cp >= gpus_per_node and network_gbps > 0:
                link_gbs = _node_network_gbs(network_gbps) / gpus_per_node
            else:
                link_gbs = _link_gbs(spec, interconnect, 2)
            tp_comm += 2 * plan.vp * (volume / (link_gbs * 1e9) + comm["collective_latency_s"])
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
        bandwidth = _dp_bandwidth(spec, interconnect, plan, gpus_per_node, network_gbps) * 1e9
        params_here = wl.params / (plan.tp * plan.pp)
        ring = 2.0 * (group - 1) / group
        params_grad = trained_params(wl) / (plan.tp * plan.pp)
        hop = comm["dp_hop_latency_s"]
        if plan.sharded:
            # FSDP: all-gather weights for forward and backward of every micro-batch, reduce-scatter gradients.
            volume = micro_steps * (2 * params_here * 2.0 + params_grad * 2.0) / 2.0
            # Per layer and micro-batch: two all-gathers and a reduce-scatter, ring algorithms whose dp - 1 steps
            # each wait one network hop (NCCL has no tree all-gather): latency grows linearly with the ranks.
            latency = micro_steps * 3 * (wl.layers / plan.pp) * (group - 1) * hop
        else:
            volume = params_grad * _gradient_bytes(wl, precision, comm)
            # DDP all-reduces 25 MB gradient buckets; NCCL's tree all-reduce takes 2 log2(dp) hops per bucket.
            buckets = math.ceil(volume / 25e6)
            latency = buckets * 2 * math.log2(group) * hop
        dp_comm = volume * ring / bandwidth + latency
    exposed = max(dp_comm - comm["overlap"] * compute, (1.0 - comm["overlap"]) * dp_comm)
    step = compute + exposed
    nodes = math.ceil(group * plan.tp * plan.pp / gpus_per_node)
    if nodes > 1:
        # Stragglers and synchronisation: throughput per GPU falls a little with every doubling of nodes.
        step *= 1.0 + comm["loss_per_node_doubling"] * math.log2(nodes)
    samples = micro_steps * plan.dp * plan.micro_batch
    flops_per_step = flops * micro_steps * plan.tp * plan.pp * group
    return _Timing(step, compute, step - compute, flops_per_step, samples, host_bound, micro_steps * unfed * bubble)


def _context_exchange_s(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    plan: Plan,
    interconnect: str,
    gpus_per_node: int,
    network_gbps: float,
) -> float:
    """Seconds one micro-batch spends in context parallelism's ring exchange on a pipeline stage (Megatron-Core and
    Transformer Engine: ring attention). Each of the ``cp`` ranks holds ``seq_len / cp`` tokens of every sequence
    and passes its keys and values around the ring, ``cp - 1`` steps forward, and keys, values and their gradients
    backward: three exchanges per layer of two tensors of ``hidden / tp`` per token. Every head's keys and values
    are counted; grouped-query attention (Llama 2 70B, Llama 3) sends a fraction of that. Tensor-parallel ranks fill
    a node first, so a context group of ``tp x cp`` ranks beyond a node sends through the network, one NIC a GPU."""
    comm = perf_params()["comm"]
    elem = ELEMENT_BYTES["bf16" if precision == "fp8" else precision]  # FP8 recipes keep attention in BF16
    stage_layers = wl.layers / plan.pp
    tokens = plan.micro_batch * wl.seq_len / plan.cp
    steps = 3 * (plan.cp - 1) * stage_layers
    volume = steps * 2 * tokens * wl.hidden / plan.tp * elem
    span = plan.tp * plan.cp
    link_gbs = _link_gbs(spec, interconnect, min(span, gpus_per_node))
    if span > gpus_per_node and network_gbps > 0:
        link_gbs = min(link_gbs, _node_network_gbs(network_gbps) / gpus_per_node)
    return float(volume / (link_gbs * 1e9) + steps * comm["collective_latency_s"])


def _gradient_bytes(wl: Workload, precision: str, comm: dict[str, Any]) -> float:
    """Bytes per gradient element that data parallelism all-reduces. Recipes that train an FP16 copy of a
    transformer (apex's O2 in NVIDIA's BERT scripts, Megatron's FP16 mode) reduce FP16 gradients; autocast (CNNs),
    BF16 and full-precision runs reduce FP32 ones."""
    if wl.is_transformer and precision == "fp16":
        return ELEMENT_BYTES["fp16"]
    return float(comm["gradient_bytes"])


def throughput_with_plan(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    plan: Plan,
    *,
    interconnect: str | None = None,
    gpus_per_node: int = 8,
    network_gbps: float | None = None,
) -> float:
    """Total throughput (workload units/s) of a given layout, ignoring memory: used to calibrate on published runs."""
    link = interconnect or default_interconnect(spec)
    if link in ("nvswitch", "nvlink") and not spec.nvlink_gbps:
        link = "pcie"
    network = network_gbps if network_gbps is not None else default_network_gbps(spec)
    timing = _step_time(wl, spec, precision, plan, link, gpus_per_node, network)
    return timing.samples_per_step / timing.step_s / wl.samples_per_unit


# ---------------------------------------------------------------- layout search


def _divisors(value: int, limit: int) -> list[int]:
    return [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= limit and value % d == 0]


def _default_micro_batch(wl: Workload) -> int:
    if wl.batch_per_gpu is not None:
        return wl.batch_per_gpu
    if not wl.is_transformer:
        return 256
    # About 16k tokens per micro-batch saturates a GPU (llm-foundry's default configs use 8-16 x 2048).
    return max(1, min(64, 16384 // wl.seq_len))


def _global_batch(wl: Workload, dp: int, micro: int) -> int:
    if wl.global_batch is not None:
        # The user's global batch, never grown: rounded down to a whole number of samples per data-parallel rank
        # (raised to one per rank only when there are more ranks than samples; the assumptions say so).
        return max(dp, wl.global_batch // dp * dp)
    if not wl.is_transformer:
        return dp * micro
    if wl.kind == "encoder":
        return max(dp * micro, 256)
    # About 1M tokens per step (Llama 2 used 4M; smaller jobs use less), a multiple of dp x micro-batch.
    target = max(1, (1 << 20) // wl.seq_len)
    per_round = dp * micro
    return max(per_round, (target // per_round) * per_round)


def _recompute_settings(wl: Workload) -> tuple[bool, ...]:
    """Recomputation settings the layout search may try: the user's fixed setting, or both (without first)."""
    return {"on": (True,), "off": (False,)}.get(wl.recompute, (False, True))


@lru_cache(maxsize=512)
def _candidate_plans(wl: Workload, gpus: int, gpus_per_node: int) -> tuple[Plan, ...]:
    """Layout templates (micro-batch and global batch set later), shallowest pipeline first.

    Per tensor x pipeline split: replicated data parallelism, a distributed optimizer (ZeRO-1/2) or full sharding
    (FSDP/ZeRO-3), each with and without recomputation; on the tuned stack also context splits (``_context_splits``),
    without recomputation, which they stand in for. The tuned stack interleaves pipeline stages (up to 4 virtual
    stages per rank, as Megatron-Core does when the layers divide). The templates depend on the job's shape and the
    GPU counts only, never on a GPU or the fitted parameters: a ranking asks for the same ones once per GPU type, so
    they are kept (frozen plans, shared safely).
    """
    if not wl.is_transformer:
        # A CNN's weights and optimizer fit on any GPU: plain data parallelism (DDP) over every GPU.
        return (Plan(dp=gpus),)
    plans: list[Plan] = []
    head_limit = wl.heads if wl.heads else 64
    for pp in _pipeline_depths(wl, gpus):
        vp = 1
        if wl.stack == "tuned" and pp > 1:
            vp = max((v for v in (1, 2, 4) if wl.layers % (pp * v) == 0), default=1)
        for tp in _divisors(gpus // pp, min(gpus_per_node, 8, head_limit)):
            for cp in _context_splits(wl, gpus // (pp * tp)):
                dp = gpus // (tp * pp * cp)
                for sharded, zero1 in ((False, False), (False, True), (True, False)):
                    if (sharded or zero1) and dp * cp == 1:
                        continue
                    for recompute in _recompute_settings(wl):
                        if cp > 1 and recompute:
                            continue  # the split stands in for recomputation (``_choose``)
                        plans.append(Plan(tp, pp, dp, sharded, recompute, cp=cp, vp=vp, zero1=zero1))
    return tuple(plans)


def _pipeline_depths(wl: Workload, gpus: int) -> list[int]:
    """Pipeline depths the layout search tries, shallowest first: powers of two dividing the GPU count, and on the
    tuned stack any other depth that divides both the GPU count and the layers (Megatron-Core stages hold whole
    layers: NVIDIA runs Llama 3.1 405B's 126 layers as nine stages on 576 and 2,304 H100s)."""
    limit = min(64, wl.layers)
    depths = set(_divisors(gpus, limit))
    if wl.stack == "tuned":
        depths |= {d for d in range(3, limit + 1) if gpus % d == 0 and wl.layers % d == 0}
    return sorted(depths)


def _context_splits(wl: Workload, ranks: int) -> list[int]:
    """Context-parallel sizes the layout search tries on ``ranks`` GPUs left after tensor and pipeline splits.

    Megatron-Core's context parallelism (the tuned stack; the typical stacks' FSDP and DeepSpeed recipes have none)
    splits every sequence over ``cp`` ranks, which hold its activations but the whole layer's weights. NVIDIA's own
    recipes use it for long sequences: Llama 3.1 405B at 8,192 tokens on H100s with CP2 (NVIDIA/dgxc-benchmarking,
    Megatron-Bridge), MLPerf's Llama 2 70B LoRA at 8,192 tokens on 8 H200s with TP1 CP2 and on GB200 racks with CP8
    (1,024 tokens a rank). The load-balanced causal split cuts a sequence into ``2 cp`` chunks: the sequence must
    divide into them, and each rank keeps at least 1,024 tokens.
    """
    if wl.stack != "tuned" or not wl.is_transformer:
        return [1]
    return [cp for cp in _divisors(ranks, 8) if cp == 1 or (wl.seq_len % (2 * cp) == 0 and wl.seq_len // cp >= 1024)]


def _micro_batches(wl: Workload, dp: int, wanted: int) -> list[int]:
    """Micro-batches to try, largest first: ``wanted`` halved down to 1, or with a global batch the user gave, the
    divisors of each rank's share up to ``wanted`` (so the step runs exactly that many samples)."""
    if wl.global_batch is None:
        sizes = [wanted]
        while sizes[-1] > 1:
            sizes.append(sizes[-1] // 2 if sizes[-1] & (sizes[-1] - 1) == 0 else 1 << (sizes[-1].bit_length() - 1))
        return sizes
    share = max(1, wl.global_batch // dp)
    sizes = [m for m in range(min(wanted, share), 0, -1) if share % m == 0]
    if share > wanted and sizes[0] * 2 <= wanted:
        # A share with no divisor near ``wanted`` (172 = 4 x 43 against 42) would otherwise run as 43 launch-bound
        # micro-batches of 4: try the next divisor up first (Lambda's BERT runs its 172 sequences in one pass).
        sizes.insert(0, min(m for m in range(wanted + 1, share + 1) if share % m == 0))
    return sizes


def _fit_micro_batch(wl: Workload, spec: GpuSpec, precision: str, plan: Plan, wanted: int) -> tuple[int, float]:
    """The largest micro-batch up to ``wanted`` that fits, and the bytes it needs (0 if none fits)."""
    usable = _usable_bytes(spec, plan.communicates)
    need = 0.0
    for micro in _micro_batches(wl, plan.dp, wanted):
        trial = plan.batched(micro, _global_batch(wl, plan.dp, micro))
        need = _memory_bytes(wl, precision, trial)
        if need <= usable:
            return micro, need
    return 0, need


@dataclass(frozen=True)
class _Choice:
    plan: Plan
    timing: _Timing
    memory_bytes: float
    fits: bool


def _choose(
    wl: Workload, spec: GpuSpec, precision: str, gpus: int, gpus_per_node: int, interconnect: str, network: float
) -> _Choice:
    """The fastest layout that fits (typical stacks: with the least model parallelism that fits), or the smallest
    misfit.

    Context parallelism relieves activation memory: NVIDIA's recipes split sequences where a layout would otherwise
    recompute (Llama 3.1 405B at 8,192 tokens on H100s: TP8 PP9 CP2, no recomputation). The search tries it only
    there, in place of recomputation: where a layout fits without either, the split is not weighed (measured: weighed
    everywhere, the model's nearly free ring exchange picked deeper context splits than NVIDIA runs and came out
    faster than its runs, docs/model-history.md)."""
    templates: Sequence[Plan] = _candidate_plans(wl, gpus, gpus_per_node)
    if wl.global_batch is not None:
        # Honour the user's global batch: layouts whose data-parallel ranks divide it first, then those with no more
        # ranks than samples (the batch rounded down to whole samples per rank), the rest as a last resort.
        exact = [t for t in templates if wl.global_batch % t.dp == 0]
        honouring = [t for t in templates if t.dp <= wl.global_batch]
        templates = exact or honouring or templates
    best, smallest = _search(
        wl, spec, precision, [t for t in templates if t.cp == 1], gpus_per_node, interconnect, network
    )
    if best is None or best[1].recompute:
        split = [t for t in templates if t.cp > 1 and not t.recompute]
        relieved, misfit = _search(wl, spec, precision, split, gpus_per_node, interconnect, network)
        if relieved is not None and (best is None or relieved[0] > best[0] * 1.0001):
            best = relieved
        if smallest is None or (misfit is not None and misfit[0] < smallest[0]):
            smallest = misfit
    if best is not None:
        _rate, plan, need = best
        return _Choice(plan, _step_time(wl, spec, precision, plan, interconnect, gpus_per_node, network), need, True)
    if smallest is None:
        raise InputError(f"no parallel layout exists for {gpus} GPUs")
    need, plan = smallest
    return _Choice(plan, _step_time(wl, spec, precision, plan, interconnect, gpus_per_node, network), need, False)


def _search(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    templates: Sequence[Plan],
    gpus_per_node: int,
    interconnect: str,
    network: float,
) -> tuple[tuple[float, Plan, float] | None, tuple[float, Plan] | None]:
    """The fastest of ``templates`` that fits (rate, plan, bytes), and the smallest misfit (bytes, plan)."""
    wanted = _default_micro_batch(wl)
    best: tuple[float, Plan, float] | None = None
    smallest: tuple[float, Plan] | None = None
    last_pp, last_level = 0, (0, 0)
    # Typical stacks (PyTorch FSDP/DDP, DeepSpeed, Composer) add model parallelism only when memory forces it: the
    # fewest pipeline stages, then the narrowest tensor split, that fit (llm-foundry runs MPT-30B at 64k tokens on
    # FSDP alone). The tuned stack (Megatron-Core) weighs every tensor and pipeline split.
    least_model_parallel = wl.stack != "tuned"
    skip_recompute: set[tuple[int, bool, bool]] = set()
    for template in templates:
        if (template.pp, template.tp) != last_level:
            if best is not None and least_model_parallel:
                break
            last_level = (template.pp, template.tp)
        if template.pp != last_pp:
            last_pp, skip_recompute = template.pp, set()
        mode = (template.tp, template.sharded, template.zero1)
        if template.recompute and mode in skip_recompute:
            continue
        if template.zero1 and (template.tp, False, False) in skip_recompute:
            # Replicated already fits whole: a distributed optimizer moves the same bytes and would time the same.
            continue
        dp = template.dp
        want = wanted
        if wl.global_batch is not None and wl.batch_per_gpu is None and template.pp == 1:
            # Without pipelining nothing gains from splitting a rank's share: a script given a global batch runs
            # it in one pass when it fits (Lambda's BERT runs 320 sequences per GPU), accumulating only if not.
            want = max(wanted, wl.global_batch // dp)
        base = template.batched(want, _global_batch(wl, dp, want))
        micro, need = _fit_micro_batch(wl, spec, precision, base, want)
        if micro == 0:
            if smallest is None or need < smallest[0]:
                smallest = (need, template.batched(1, _global_batch(wl, dp, 1)))
            continue
        if not template.recompute and micro == _micro_batches(wl, dp, want)[0]:
            # Recomputation only buys memory: with the full micro-batch already fitting it is pure cost.
            skip_recompute.add(mode)
        sizes = [micro]
        if template.pp > 1:
            # A pipeline's bubble shrinks with more, smaller micro-batches: the largest that fits is not always the
            # fastest (a GPU with more memory would otherwise come out slower), so the smaller ones are timed too.
            sizes += [m for m in _micro_batches(wl, dp, want) if m < micro]
        previous = 0.0
        for size in sizes:
            plan = template.batched(size, _global_batch(wl, dp, size))
            timing = _step_time(wl, spec, precision, plan, interconnect, gpus_per_node, network)
            rate = timing.samples_per_step / timing.step_s
            if best is None or rate > best[0] * 1.0001:
                best = (rate, plan, need if size == micro else _memory_bytes(wl, precision, plan))
            if rate < previous:
                break  # past the best trade of bubble against per-micro-batch efficiency: smaller only loses more
            previous = rate
    return best, smallest


def _nodes_text(gpus: int, per_node: int) -> str:
    """'1 node of 8 GPUs', '4 nodes of 8 GPUs', or with a partial last node '2 nodes (8 + 4 GPUs)'."""
    if gpus == 1:
        return "1 GPU"
    full, rest = divmod(gpus, per_node)
    if rest == 0:
        return f"{full} node{'s' if full > 1 else ''} of {per_node} GPUs"
    shares = " + ".join([str(per_node)] * full + [str(rest)]) if full <= 3 else f"{full} x {per_node} + {rest}"
    return f"{full + 1} nodes ({shares} GPUs)"


def _link_text(spec: GpuSpec, link: str, per_node: int) -> str:
    """How a node's GPUs are joined, for the assumptions (as ``_link_gbs`` reads the interconnect)."""
    if link == "nvlink" and spec.form_factor == "oam":
        return ", direct links between every GPU pair inside a node (a full mesh, such as AMD's Infinity Fabric)"
    if link == "nvlink" and per_node > 2:
        return ", NVLink bridges between pairs and PCIe across pairs inside a node"
    return f", {link} inside a node"


def _host_bound_note(wl: Workload, plan: Plan) -> str:
    """Why a faster GPU would not run this job faster: the host or the recipe's input feed sets the pace."""
    params = perf_params()
    if not wl.is_transformer and wl.stack == "tuned":
        rate = 1.0 / params["cnn"]["tuned_input_s_per_image"]
        return (
            f"paced by the input pipeline, not the GPU: NVIDIA's tuned ResNet-50 recipe feeds a GPU at most "
            f"{rate:,.0f} images/s (MLPerf ResNet-50: an H200 trains 1.1x an H100); a faster GPU waits"
        )
    if not wl.is_transformer:
        rate = 1.0 / params["cnn"]["typical_floor_s_per_image"]
        return (
            f"paced by the typical PyTorch stack, not the GPU's tensor cores or HBM: it trains ResNet-50 at most "
            f"{rate:,.0f} images/s per GPU (Lambda, NVIDIA's DLE scripts on synthetic images: an H200 and a B200 "
            "both 1.10x an H100, a B200 as fast in TF32 as in FP16); a faster GPU waits; the tuned stack (DALI, "
            "channels-last, CUDA graphs) runs past it"
        )
    if wl.stack == "tuned":
        rate = 1.0 / params["transformer"]["tuned_input_s_per_token"]
        return (
            f"paced by the recipe's input feed, not the GPU: NVIDIA's tuned BERT recipe feeds a GPU at most "
            f"{rate:,.0f} tokens/s (MLPerf BERT-Large: every Blackwell run trains 1.4-1.5x a Hopper, not the 2.2x of "
            "its tensor cores); a faster GPU waits, so every GPU this feed paces (on a smaller model, Hopper and "
            "Blackwell alike) runs at the same rate"
        )
    return (
        f"paced by the host's kernel launches, not the GPU: eager PyTorch at a micro-batch of {plan.micro_batch} "
        "leaves the GPU waiting for the next kernel; a larger micro-batch or the tuned stack (CUDA graphs) would not"
    )


def _held_out_check(spec: GpuSpec, wl: Workload, params: dict[str, Any]) -> dict[str, Any] | None:
    """What the measurements kept out of the fit say of this GPU on this kind of model (``held_out_checks`` in the
    parameters: runs and median error), or None: none, or another stack than theirs (typical)."""
    check: dict[str, Any] | None = params.get("held_out_checks", {}).get(spec.id, {}).get(wl.kind)
    return check if wl.stack == "typical" else None


def _scale_out_note(check: dict[str, Any]) -> str:
    return (
        f"held out of the fit, {check['runs']} of NVIDIA's MLPerf Training runs with steps under "
        f"{SHORT_STEP_S * 1000:.0f} ms across {MANY_NODES} or more nodes ({check['gpus'][0]:,}-{check['gpus'][1]:,} "
        f"GPUs, data/mlperf_scale_out.csv) took {check['ratio_low']:.2f}-{check['ratio_high']:.2f}x (median "
        f"{check['ratio_median']:.2f}x) the time this model gives them: per-step costs at this scale that it does "
        "not describe; expect a longer run (fewer nodes, or more samples per GPU in a step, lose less)"
    )


def _held_out_note(spec: GpuSpec, wl: Workload, check: dict[str, Any]) -> str:
    error = float(check["median_error_pct"])
    return (
        f"held out of the fit, {check['runs']} of Lambda's 2024-2025 runs of {KIND_NAMES[wl.kind]} training on "
        f"{spec.id} (typical stack, {_counts_text(check.get('gpus', []))}, data/lambda_v2_runs.csv) ran a median "
        f"{held_out_verdict(error)} for the same jobs"
        + ("; expect the low end of the band or below" if error >= 10.0 else "")
    )


def _counts_text(counts: list[int]) -> str:
    """``[1]`` -> "1 GPU", ``[1, 8]`` -> "1 and 8 GPUs", ``[1, 2, 4, 8]`` -> "1, 2, 4 and 8 GPUs"."""
    if not counts:
        return "GPU counts not recorded"
    if len(counts) == 1:
        return f"{counts[0]} GPU" + ("s" if counts[0] > 1 else "")
    return ", ".join(str(c) for c in counts[:-1]) + f" and {counts[-1]} GPUs"


def _sharding_text(plan: Plan) -> str:
    if plan.sharded:
        return " (FSDP/ZeRO-3 sharded)"
    return " (distributed optimizer, ZeRO-1/2)" if plan.zero1 else ""


def _fits_on(wl: Workload, spec: GpuSpec, precision: str, count: int, gpus_per_node: int) -> bool:
    """Whether any layout of ``count`` GPUs holds the job at a micro-batch of 1."""
    per_node = min(count, gpus_per_node)
    # The most memory-frugal setting the user allows: recomputation unless they turned it off.
    frugal = max(_recompute_settings(wl))
    for template in _candidate_plans(wl, count, per_node):
        if template.recompute == frugal or not wl.is_transformer:
            plan = template.batched(1, _global_batch(wl, template.dp, 1))
            if _memory_bytes(wl, precision, plan) <= _usable_bytes(spec, plan.communicates):
                return True
    return False


@lru_cache(maxsize=1024)
def _min_gpus_to_fit(wl: Workload, spec: GpuSpec, precision: str, gpus_per_node: int) -> int | None:
    """The smallest GPU count on which the job fits (a ranking asks once per GPU, not per count).

    Doubling finds the first power of two that fits; the counts between it and the power below (which does not)
    are then tried in order: every count up to two nodes, whole nodes beyond, and at most 64 of them (wider steps
    of whole nodes on the largest jobs). So 12 nodes of 8 are found where 16 would have been said."""
    count = 1
    while count <= MAX_GPUS and not _fits_on(wl, spec, precision, count, gpus_per_node):
        count *= 2
    if count > MAX_GPUS:
        return None
    lower = count // 2
    step = 1
    if lower > 2 * gpus_per_node:
        step = gpus_per_node * max(1, math.ceil(lower / gpus_per_node / 64))
    first = (lower // step + 1) * step
    for candidate in range(first, count, step):
        if _fits_on(wl, spec, precision, candidate, gpus_per_node):
            return candidate
    return count


# ---------------------------------------------------------------- the public function


def estimate(
    workload: str | Workload,
    gpu: str | GpuSpec,
    gpus: int = 1,
    precision: str = "bf16",
    *,
    gpus_per_node: int | None = None,
    interconnect: str | None = None,
    network_gbps: float | None = None,
    **options: Any,
) -> Estimate:
    """Estimate ``workload`` on ``gpus`` x ``gpu`` at ``precision``.

    Options: ``measured`` (throughput in the workload's unit) with ``measured_on`` ("GPU" or "GPU:COUNT") rescales
    through the model's ratios; ``efficiency`` (MFU the user observes, 0-1) replaces the fitted one; workload fields
    (``tokens``/``work``, ``seq_len``, ``batch_per_gpu``, ``global_batch``, ``mode`` ...) override the preset.
    """
    measured = options.pop("measured", None)
    measured_on = options.pop("measured_on", None)
    efficiency = options.pop("efficiency", None)
    wl = resolve_workload(workload, **options)
    if isinstance(gpu, GpuSpec):
        spec, gpu_note = gpu, None
    else:
        resolution = lookup(str(gpu))
        spec, gpu_note = resolution.spec, resolution.note
    gpus = checks.whole("gpus", gpus, most=MAX_GPUS)
    gpus_per_node = checks.optional_whole("gpus_per_node", gpus_per_node, most=MAX_GPUS)
    if interconnect is not None:
        checks.choice("interconnect", interconnect, INTERCONNECTS)
    network_gbps = checks.optional_number("network_gbps", network_gbps)
    # The same checks as every other entry point (one wording): ModelOptions validates the user's evidence.
    ModelOptions(measured=measured, measured_on=measured_on, efficiency=efficiency)
    cached = _estimate(
        wl,
        spec,
        gpus,
        str(precision),
        gpus_per_node,
        interconnect,
        None if network_gbps is None else float(network_gbps),
        None if measured is None else float(measured),
        None if measured_on is None else str(measured_on),
        None if efficiency is None else float(efficiency),
        gpu_note,
    )
    # Results are cached: hand out copies of the mutable parts so a caller cannot change the cache.
    return replace(cached, assumptions=list(cached.assumptions), parallelism=dict(cached.parallelism))


def _parse_measured_on(text: str) -> tuple[GpuSpec, int]:
    name, _, count = text.partition(":")
    try:
        gpus = int(count) if count else 1
    except ValueError:
        raise InputError(
            f"must look like GPU or GPU:COUNT (e.g. A100-80GB:8), got {text!r}", field="measured_on"
        ) from None
    if gpus <= 0:
        raise InputError(f"needs a positive GPU count, got {text!r}", field="measured_on")
    try:
        return resolve_gpu(name), gpus
    except UnknownGpuError as exc:
        # The same for every configuration ranked: an input error, raised rather than listed per offering.
        raise InputError(f"names {exc}", field="measured_on") from None


@lru_cache(maxsize=4096)
def _estimate(
    wl: Workload,
    spec: GpuSpec,
    gpus: int,
    precision: str,
    gpus_per_node: int | None,
    interconnect: str | None,
    network_gbps: float | None,
    measured: float | None,
    measured_on: str | None,
    efficiency: float | None,
    gpu_note: str | None = None,
) -> Estimate:
    notes: list[str] = [gpu_note] if gpu_note else []
    prec = _check_precision(spec, precision, notes, wl)
    per_node = gpus_per_node or min(gpus, nvlink_domain(spec))
    per_node = min(per_node, gpus)
    link = interconnect or default_interconnect(spec)
    if link in ("nvswitch", "nvlink") and not spec.nvlink_gbps:
        notes.append(f"{spec.id} has no NVLink: {link} treated as PCIe")
        link = "pcie"
    network = network_gbps if network_gbps is not None else default_network_gbps(spec)
    nodes = math.ceil(gpus / per_node)
    choice = _choose(wl, spec, prec, gpus, per_node, link, network)
    plan, timing = choice.plan, choice.timing
    samples_per_s = timing.samples_per_step / timing.step_s
    units_per_s = samples_per_s / wl.samples_per_unit
    peak_total = spec.peak_tflops(prec) * 1e12 * gpus
    mfu = timing.model_flops_per_step / timing.step_s / peak_total
    scale = 1.0
    if efficiency is not None:
        scale = efficiency / mfu
        notes.append(f"utilisation set by the user: MFU {efficiency:.0%} (the model predicted {mfu:.0%})")
    elif measured is not None and measured_on is not None:
        ref_spec, ref_gpus = _parse_measured_on(measured_on)
        reference = _estimate(wl, ref_spec, ref_gpus, precision, None, None, None, None, None, None)
        if reference.throughput is None:
            raise InputError(
                f"{measured_on}: the workload does not fit there ({reference.why_not_fits}), so a measurement on it "
                "cannot be",
                field="measured_on",
            )
        scale = measured / reference.throughput
        if reference.mfu is not None and reference.mfu * scale > 1.0:
            # More model FLOPs per second than the GPUs' dense peak: not a measurement of this workload (a total
            # given per GPU, another unit, another model).
            raise InputError(
                f"{measured:g} {wl.throughput_unit} on {ref_gpus}x {ref_spec.id} would be MFU "
                f"{reference.mfu * scale:.3g}, above the GPUs' dense {precision} peak; check the unit "
                f"({wl.throughput_unit}, all {ref_gpus} GPUs together) and the workload",
                field="measured",
                related=("measured_on",),
            )
        notes.append(
            f"rescaled by the user's measurement {measured:g} {wl.throughput_unit} on {ref_gpus}x {ref_spec.id} "
            f"(model: {reference.throughput:.4g}; factor {scale:.2f})"
        )
    units_per_s *= scale
    mfu *= scale
    step = timing.step_s / scale
    params = perf_params()
    # Each family's band comes from its own held-out errors (BERT's, with one calibration source, are the widest).
    bands = params["band"]
    band = bands.get(wl.kind) or bands["cnn" if not wl.is_transformer else "transformer"]
    low, high = float(band[0]), float(band[1])
    calibrated = spec.id in params.get("calibrated_gpus", ())
    # Parameter sets without the per-kind record count a measured GPU as measured for every kind of model.
    measured_kinds = params.get("calibrated_kinds", {}).get(spec.id)
    calibration_note: str | None = None
    held_out_error: float | None = None
    if not calibrated:
        known = spec.architecture in params.get("calibrated_architectures", ())
        calibration_note = (
            f"no published measurements on {spec.id} in the calibration data: estimated from its datasheet "
            f"(peak, memory bandwidth{', matmul ceiling' if _ceiling_share(spec, prec) else ''})"
            f"{' and other ' + spec.architecture + ' GPUs' if known else ''}; wider band"
        )
    elif measured_kinds is not None and wl.kind not in measured_kinds:
        calibrated = False
        kind = KIND_NAMES[wl.kind]
        calibration_note = (
            f"the published measurements on {spec.id} in the calibration data are of "
            f"{' and '.join(KIND_NAMES[k] for k in measured_kinds)} models only: this estimate carries other "
            f"GPUs' {kind} measurements over to it; wider band"
        )
    if calibration_note is not None:
        # Held out of the fit, a GPU's own errors are larger (bench/accuracy.py, leave-one-GPU-out): a wider band.
        widen = float(params.get("uncalibrated_band_factor", 1.5))
        low, high = low * widen, high * widen
        # (Your own measurement or efficiency replaces the model's level: what held-out runs found of it is moot.)
        held_out = _held_out_check(spec, wl, params) if measured is None and efficiency is None else None
        if held_out is not None:
            held_out_error = float(held_out["median_error_pct"])
            calibration_note = f"{calibration_note}; {_held_out_note(spec, wl, held_out)}"
        notes.append(calibration_note)
    if nodes > 1:
        low, high = low + 0.05, high + 0.05
    if measured is not None or efficiency is not None:
        low, high = low / 2, high / 2
    low = min(low, 0.9)
    share = _ceiling_share(spec, prec)
    reference_share = _reference_share(_reference_key(spec, prec))
    if share is not None and abs(share / reference_share - 1.0) > 0.02:
        notes.append(
            f"{spec.id} sustains {share:.0%} of its datasheet {prec} peak in matmuls ({reference_share:.0%} on the "
            f"{REFERENCE_GPU} the model is calibrated on): compute scaled by {share / reference_share:.2f} "
            f"({ceiling_origin(spec, prec)})"
        )
    if wl.batch_per_gpu and plan.micro_batch < wl.batch_per_gpu and choice.fits:
        # The user's micro-batch was not run as given: say why where the layout is stated.
        share = wl.global_batch // plan.dp if wl.global_batch else None
        if share is not None and share < wl.batch_per_gpu:
            why_smaller = f"the global batch {wl.global_batch} leaves {share} per data-parallel rank"
        else:
            why_smaller = "a larger one does not fit in memory with this layout" + (
                ", or ran slower through the pipeline" if plan.pp > 1 else ""
            )
        notes.append(f"micro-batch {plan.micro_batch} per GPU, not the {wl.batch_per_gpu} given: {why_smaller}")
    if timing.host_bound and choice.fits:
        notes.append(_host_bound_note(wl, plan))
    scale_out = params.get("scale_out_checks", {}).get("short_steps")
    slower_at_scale: float | None = None
    if scale_out and choice.fits and short_steps_across_nodes(nodes, step):
        notes.append(_scale_out_note(scale_out))
        slower_at_scale = float(scale_out["ratio_median"])
    if not wl.is_transformer and wl.stack == "tuned" and prec in ("fp32", "tf32"):
        notes.append(
            f"the tuned CNN speed-up was measured in mixed precision (MLPerf ResNet-50) and is not applied in {prec}: "
            "NVIDIA's own ResNet-50 tables are within 5% of the typical stack in FP32 and 9-12% below it in TF32"
        )
    if _ampere_kernels(wl, spec, prec):
        kernels, evidence, native = (
            ("FlashAttention-2-class attention", "FlashAttention-3 paper", "attention")
            if wl.is_transformer
            else ("convolution", "Lambda's ResNet-50 on H100 against A100", "recipe")
        )
        notes.append(
            f"typical stack on {spec.architecture.capitalize()}: {kernels} kernels written for Ampere, at about "
            f"{AMPERE_KERNELS_AFTER_ADA:.0%} of their Ampere efficiency ({evidence}); the tuned stack's {native} is "
            "native to the GPU"
        )
    if wl.global_batch is not None and plan.global_batch != wl.global_batch:
        notes.append(
            f"global batch {wl.global_batch} changed to {plan.global_batch}: "
            + (
                f"fewer samples than the {plan.dp} data-parallel ranks (one each)"
                if plan.global_batch > wl.global_batch
                else f"a whole number of samples per data-parallel rank ({plan.dp} ranks)"
            )
        )
    work = wl.total_work()
    hours = work / units_per_s / 3600.0
    eval_work = wl.eval_work()
    if eval_work:
        # An evaluation sample is a forward pass, at the training step's pace without its gradient all-reduce (and
        # without an input feed that paces training only). A pass's samples split over the data-parallel ranks in
        # whole samples: every rank runs as many as the busiest (173 over 128 ranks: 2 each, the time of 256).
        share = forward_share(wl)
        per_rank = math.ceil(wl.eval_samples / plan.dp)
        eval_work *= per_rank * plan.dp / wl.eval_samples
        eval_units_per_s = units_per_s * timing.step_s / timing.eval_compute_s
        eval_hours = eval_work * share / eval_units_per_s / 3600.0
        hours += eval_hours
        padded = (
            f"; {wl.eval_samples:g} samples over {plan.dp} data-parallel ranks: {per_rank} each"
            if per_rank * plan.dp != wl.eval_samples
            else ""
        )
        if choice.fits:
            notes.append(
                f"{wl.eval_text()}: {eval_hours:.3g} h (a forward pass is {share:.2f} of a trained sample{padded})"
            )
    # Node energy at the wall, the one definition ranking uses too (planner.energy): GPUs x TDP x the node factor
    # measured on MLPerf Training nodes, which already counts CPUs, memory, network and fans at training load.
    factor = node_factor().expected
    energy = spec.tdp_w * gpus * factor * hours / 1000.0
    # The need and the room both count what the framework holds outside the model (the CUDA context, NCCL's
    # workspaces), so the need is ``memory_per_gpu_gib``.
    reserved_gib = _reserved_gib(plan.communicates)
    usable_gib = _usable_bytes(spec, plan.communicates) / GIB + reserved_gib
    why: str | None = None
    min_gpus: int | None = None
    if not choice.fits:
        min_gpus = _min_gpus_to_fit(wl, spec, prec, gpus_per_node or nvlink_domain(spec))
        hint = f"; at least {min_gpus} GPUs would fit" if min_gpus else "; no GPU count fits"
        nccl = f" and {COLLECTIVE_HEADROOM:.0%} kept free for NCCL's buffers" if plan.communicates else ""
        context = "the CUDA context and NCCL's workspaces" if plan.communicates else "the CUDA context"
        why = (
            f"needs {choice.memory_bytes / GIB + reserved_gib:.1f} GiB per GPU ({context} included) even with "
            + (
                f"sharding, {'' if plan.recompute else 'no '}recomputation and {plan.tp}-way tensor / "
                f"{plan.pp}-way pipeline parallelism"
                if gpus > 1
                else "a micro-batch of 1" + (" and recomputation" if plan.recompute else "")
            )
            + (" (recompute off, as given)" if wl.is_transformer and wl.recompute == "off" else "")
            + f", but {spec.id} has {usable_gib:.1f} GiB usable of {spec.memory_gib:g} (after allocator "
            f"fragmentation{nccl}){hint}"
        )
    layout = (
        f"{'layout' if choice.fits else 'closest layout tried (does not fit)'}: "
        f"{plan.dp}-way data parallel{_sharding_text(plan)}, "
        f"{plan.tp}-way tensor, {plan.pp}-way pipeline"
        + (f", {plan.cp}-way context" if plan.cp > 1 else "")
        + f", micro-batch {plan.micro_batch}, global batch "
        f"{plan.global_batch}{', activation recomputation' if plan.recompute else ''}"
        + (f" (recompute {wl.recompute}, as given)" if wl.is_transformer and wl.recompute != "auto" else "")
    )
    assumptions = [
        f"{wl.description or wl.name}, {wl.mode}, {prec}; work {wl.default_work_text()}",
        *([_lora_text(wl)] if wl.mode == "lora" else []),
        wl.software_text,
        layout,
        _nodes_text(gpus, per_node)
        + (_link_text(spec, link, per_node) if gpus > 1 else "")
        + (f", {network:g} Gbps network per node" if nodes > 1 else ""),
        "throughput from dense peak x fitted efficiency and memory bandwidth (data/perf_params.json)",
        f"energy at the node's wall = GPUs x TDP {spec.tdp_w:g} W x node factor {factor:.2f} (measured MLPerf "
        "Training nodes, data/node_power.csv) x time; a cloud's PUE comes on top (rank)",
        *notes,
    ]
    ran = choice.fits

    def shown(value: float) -> float | None:
        # A configuration that does not fit never runs: no throughput, time, MFU or energy as if it did.
        return float(value) if ran else None

    return Estimate(
        workload=wl.name,
        gpu=spec.id,
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=per_node,
        precision=prec,
        interconnect=link,
        network_gbps=float(network),
        throughput=shown(units_per_s),
        throughput_unit=wl.throughput_unit,
        throughput_per_gpu=shown(units_per_s / gpus),
        throughput_low=shown(units_per_s * (1.0 - low)),
        throughput_high=shown(units_per_s * (1.0 + high)),
        step_time_s=shown(step),
        time_to_solution_hours=shown(hours),
        work=float(work),
        work_unit=wl.work_unit,
        memory_per_gpu_gib=float(choice.memory_bytes / GIB + reserved_gib),
        gpu_memory_gib=float(spec.memory_gib),
        fits_in_memory=choice.fits,
        why_not_fits=why,
        min_gpus_to_fit=min_gpus,
        mfu=shown(mfu),
        energy_kwh=shown(energy),
        parallelism={
            "data": plan.dp,
            "tensor": plan.tp,
            "pipeline": plan.pp,
            "sharded": plan.sharded,
            "optimizer_sharded": plan.zero1 or plan.sharded,
            "interleaved_stages": plan.vp,
            "context": plan.cp,
            "recompute": plan.recompute,
            "micro_batch": plan.micro_batch,
            "global_batch": plan.global_batch,
        },
        assumptions=assumptions,
        gpu_calibrated=calibrated,
        calibration_note=calibration_note,
        held_out_error_pct=held_out_error,
        slower_at_scale=slower_at_scale,
    )
