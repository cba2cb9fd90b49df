"""How fast a layout's GPUs exchange data: the links inside a node, the network across nodes, and what each
collective moves over them. The efficiencies and latencies are fitted (``PerfParams.comm``)."""

from __future__ import annotations

from planner.hardware import ELEMENT_BYTES, GpuSpec
from planner.perf.params import PerfParams
from planner.perf.plan import Plan, stage_layers
from planner.perf.workloads import Workload


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


def default_network_gbps(spec: GpuSpec, fitted: PerfParams) -> float:
    """Typical data-centre network per node of 8 for this GPU (e.g. 400 Gbps p4d A100, 3200 Gbps p5 H100)."""
    table = fitted.network_gbps_by_architecture
    if spec.form_factor == "pcie" and spec.architecture not in ("hopper", "blackwell"):
        return float(table.get("pcie", 100.0))
    return float(table.get(spec.architecture, table["default"]))


def link_gbs(spec: GpuSpec, interconnect: str, group: int, fitted: PerfParams) -> float:
    """Effective all-reduce bus bandwidth (GB/s per GPU) among ``group`` GPUs of one node."""
    comm = fitted.comm
    pcie = 16.0 * 2 ** (spec.pcie_gen - 3) * comm["pcie_efficiency"]
    if interconnect == "nvswitch" and spec.nvlink_gbps:
        return float(spec.nvlink_gbps / 2 * comm["nvlink_efficiency"])
    # NVLink bridges join pairs; an OAM board's links (AMD's Infinity Fabric) join every GPU pair of the node
    # directly, a full mesh that serves a collective over all of them as a switch would.
    if interconnect == "nvlink" and spec.nvlink_gbps and (group <= 2 or spec.form_factor == "oam"):
        return float(spec.nvlink_gbps / 2 * comm["nvlink_efficiency"])
    return float(pcie)


def dp_bandwidth(
    spec: GpuSpec, interconnect: str, plan: Plan, gpus_per_node: int, network_gbps: float, fitted: PerfParams
) -> float:
    """Bus bandwidth (GB/s) of a data-parallel collective: the intra-node link, or the network across nodes."""
    group = plan.gradient_group
    span = group * plan.tp
    intra = link_gbs(spec, interconnect, min(span, gpus_per_node), fitted)
    if span <= gpus_per_node:
        return intra
    # Hierarchical (NCCL multi-ring) collectives spread a group's cross-node traffic over the NICs of its own ranks
    # (one NIC per GPU on p4d/p5 nodes). Tensor-parallel ranks fill a node first, so a data-parallel group has only
    # gpus_per_node / tp ranks, and as many NICs, per node: with 8-way tensor parallelism each GPU's gradient or
    # shard traffic crosses nodes through a single NIC.
    ranks_per_node = max(1, min(group, gpus_per_node // plan.tp))
    return float(min(intra, node_network_gbs(network_gbps, fitted) * ranks_per_node / gpus_per_node))


def node_network_gbs(network_gbps: float, fitted: PerfParams) -> float:
    """What a node's network cards carry in GB/s, all of them together, at the fitted network efficiency."""
    return float(network_gbps / 8.0 * fitted.comm["network_efficiency"])


def context_exchange_s(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    plan: Plan,
    interconnect: str,
    gpus_per_node: int,
    network_gbps: float,
    fitted: PerfParams,
) -> float:
    """Seconds one micro-batch spends in context parallelism's ring exchange on a pipeline stage (Megatron-Core and
    Transformer Engine: ring attention). Each of the ``cp`` ranks holds ``seq_len / cp`` tokens of every sequence
    and passes its keys and values around the ring, ``cp - 1`` steps forward, and keys, values and their gradients
    backward: three exchanges per layer of two tensors of ``hidden / tp`` per token. Every head's keys and values
    are counted; grouped-query attention (Llama 2 70B, Llama 3) sends a fraction of that. Tensor-parallel ranks fill
    a node first, so a context group of ``tp x cp`` ranks beyond a node sends through the network, one NIC a GPU."""
    elem = ELEMENT_BYTES[precision]
    layers_here = stage_layers(wl.layers, plan.pp, plan.vp)
    tokens = plan.micro_batch * wl.seq_len / plan.cp
    steps = 3 * (plan.cp - 1) * layers_here
    volume = steps * 2 * tokens * wl.hidden / plan.tp * elem
    span = plan.tp * plan.cp
    bandwidth = link_gbs(spec, interconnect, min(span, gpus_per_node), fitted)
    if span > gpus_per_node and network_gbps > 0:
        bandwidth = min(bandwidth, node_network_gbs(network_gbps, fitted) / gpus_per_node)
    return float(volume / (bandwidth * 1e9) + steps * fitted.comm["collective_latency_s"])


def gradient_bytes(wl: Workload, precision: str, fitted: PerfParams) -> float:
    """Bytes per gradient element that data parallelism all-reduces. Recipes that train an FP16 copy of a
    transformer (apex's O2 in NVIDIA's BERT scripts, Megatron's FP16 mode) reduce FP16 gradients; autocast (CNNs),
    BF16 and full-precision runs reduce FP32 ones."""
    if wl.is_transformer and precision == "fp16":
        return ELEMENT_BYTES["fp16"]
    return float(fitted.comm["gradient_bytes"])
