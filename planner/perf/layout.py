"""The layout search: the parallel layouts a job's shape allows on a GPU count, the fastest of them that fits, and
the fewest GPUs on which any fits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from planner.errors import InputError
from planner.hardware import GpuSpec
from planner.perf.memory import memory_bytes, usable_bytes
from planner.perf.params import PerfParams
from planner.perf.plan import Plan, stage_layers
from planner.perf.step import StepTiming, step_time
from planner.perf.workloads import Workload

# How close a recomputing layout must come to the fastest to have the context splits weighed (``choose``).
NEAR_TIE = 0.9
# The largest job estimated: the largest published training runs use tens of thousands of GPUs.
MAX_GPUS = 65536


def _divisors(value: int, limit: int) -> list[int]:
    return [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= limit and value % d == 0]


def _default_micro_batch(wl: Workload) -> int:
    if wl.batch_per_gpu is not None:
        return wl.batch_per_gpu
    if not wl.is_transformer:
        return 256
    # About 16k tokens per micro-batch saturates a GPU (llm-foundry's default configs use 8-16 x 2048).
    return max(1, min(64, 16384 // wl.seq_len))


def global_batch(wl: Workload, dp: int, micro: int) -> int:
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


def recompute_settings(wl: Workload) -> tuple[bool, ...]:
    """Recomputation settings the layout search may try: the user's fixed setting, or both (without first)."""
    return {"on": (True,), "off": (False,)}.get(wl.recompute, (False, True))


@lru_cache(maxsize=512)
def candidate_plans(wl: Workload, gpus: int, gpus_per_node: int) -> tuple[Plan, ...]:
    """Layout templates (micro-batch and global batch set later), shallowest pipeline first.

    Per tensor x pipeline split: replicated data parallelism, a distributed optimizer (ZeRO-1/2) or full sharding
    (FSDP/ZeRO-3), each with and without recomputation; on the tuned stack also context splits (``context_splits``),
    without recomputation, which they stand in for. The tuned stack interleaves pipeline stages (up to 4 virtual
    stages per rank, ``interleaving``), also where the layers do not divide evenly. The templates depend on the job's
    shape and the GPU counts only, never on a GPU or the fitted parameters: a ranking asks for the same ones once per
    GPU type, so they are kept (frozen plans, shared safely).
    """
    if not wl.is_transformer:
        # A CNN's weights and optimizer fit on any GPU: plain data parallelism (DDP) over every GPU.
        return (Plan(dp=gpus),)
    plans: list[Plan] = []
    head_limit = wl.heads if wl.heads else 64
    for pp in pipeline_depths(wl, gpus):
        vp = interleaving(wl, pp)
        for tp in _divisors(gpus // pp, min(gpus_per_node, 8, head_limit)):
            for cp in context_splits(wl, gpus // (pp * tp)):
                dp = gpus // (tp * pp * cp)
                for sharded, zero1 in ((False, False), (False, True), (True, False)):
                    if (sharded or zero1) and dp * cp == 1:
                        continue
                    for recompute in recompute_settings(wl):
                        if cp > 1 and recompute:
                            continue  # the split stands in for recomputation (``choose``)
                        plans.append(Plan(tp, pp, dp, sharded, recompute, cp=cp, vp=vp, zero1=zero1))
    return tuple(plans)


def interleaving(wl: Workload, pp: int) -> int:
    """Virtual stages per pipeline rank on the tuned stack: of 1, 2 and 4, the most that leave the busiest rank no
    more layers than the fewest do (``stage_layers``). Megatron-Core interleaves uneven splits too (NVIDIA runs Llama
    3.1 405B's 126 layers as 8 stages of 8 virtual ones): requiring an even split lost interleaving there, and its
    bubble made 400B-class pipelines look slow."""
    if wl.stack != "tuned" or pp <= 1 or not wl.is_transformer:
        return 1
    choices = [v for v in (1, 2, 4) if pp * v <= wl.layers]
    fewest = min(stage_layers(wl.layers, pp, v) for v in choices)
    return max(v for v in choices if stage_layers(wl.layers, pp, v) == fewest)


def pipeline_depths(wl: Workload, gpus: int) -> list[int]:
    """Pipeline depths the layout search tries, shallowest first: powers of two dividing the GPU count, and on the
    tuned stack any other depth that divides both the GPU count and the layers (Megatron-Core stages hold whole
    layers: NVIDIA runs Llama 3.1 405B's 126 layers as nine stages on 576 and 2,304 H100s)."""
    limit = min(64, wl.layers)
    depths = set(_divisors(gpus, limit))
    if wl.stack == "tuned":
        depths |= {d for d in range(3, limit + 1) if gpus % d == 0 and wl.layers % d == 0}
    return sorted(depths)


def context_splits(wl: Workload, ranks: int) -> list[int]:
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
    divisors = _all_divisors(share)
    sizes = [m for m in reversed(divisors) if m <= min(wanted, share)]
    if share > wanted and sizes[0] * 2 <= wanted:
        # A share with no divisor near ``wanted`` (172 = 4 x 43 against 42) would otherwise run as 43 launch-bound
        # micro-batches of 4: try the next divisor up first (Lambda's BERT runs its 172 sequences in one pass).
        sizes.insert(0, next(m for m in divisors if m > wanted))
    return sizes


def _all_divisors(value: int) -> list[int]:
    """Every divisor of ``value``, ascending, in O(sqrt(value)) steps (a scan up to the value took minutes at 1e9)."""
    small = [d for d in range(1, math.isqrt(value) + 1) if value % d == 0]
    return small + [value // d for d in reversed(small) if d * d != value]


def _fit_micro_batch(
    wl: Workload, spec: GpuSpec, precision: str, plan: Plan, wanted: int, fitted: PerfParams
) -> tuple[int, float]:
    """The largest micro-batch up to ``wanted`` that fits, and the bytes it needs (0 if none fits)."""
    usable = usable_bytes(spec, plan.communicates)
    need = 0.0
    for micro in _micro_batches(wl, plan.dp, wanted):
        trial = plan.batched(micro, global_batch(wl, plan.dp, micro))
        need = memory_bytes(wl, precision, trial, fitted)
        if need <= usable:
            return micro, need
    return 0, need


@dataclass(frozen=True)
class Choice:
    """The layout chosen, its step, the bytes per GPU it needs, and whether they fit."""

    plan: Plan
    timing: StepTiming
    memory_bytes: float
    fits: bool


def choose(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    gpus: int,
    gpus_per_node: int,
    interconnect: str,
    network: float,
    fitted: PerfParams,
) -> Choice:
    """The fastest layout that fits (typical stacks: with the least model parallelism that fits), or the smallest
    misfit.

    Context parallelism relieves activation memory: NVIDIA's recipes split sequences where a layout would otherwise
    recompute (Llama 3.1 405B at 8,192 tokens on H100s: TP8 PP9 CP2, no recomputation). The search tries it only
    there, in place of recomputation: where a layout fits without either, the split is not weighed (measured: weighed
    everywhere, the model's nearly free ring exchange picked deeper context splits than NVIDIA runs and came out
    faster than its runs, docs/model-history.md)."""
    templates: Sequence[Plan] = candidate_plans(wl, gpus, gpus_per_node)
    if wl.global_batch is not None:
        # Honour the user's global batch: layouts whose data-parallel ranks divide it first, then those with no more
        # ranks than samples (the batch rounded down to whole samples per rank), the rest as a last resort.
        exact = [t for t in templates if wl.global_batch % t.dp == 0]
        honouring = [t for t in templates if t.dp <= wl.global_batch]
        templates = exact or honouring or templates
    best, smallest, recomputing = _search(
        wl, spec, precision, [t for t in templates if t.cp == 1], gpus_per_node, interconnect, network, fitted
    )
    # Where recomputing came within NEAR_TIE of the best, memory nearly decided it: the split is weighed too, so that
    # a GPU with more memory, which fits a layout without recomputation a little faster, does not lose the split a
    # GPU with less finds (B300 against B200 on Llama 3.1 405B, once uneven pipelines interleave).
    if best is None or best[1].recompute or recomputing >= best[0] * NEAR_TIE:
        split = [t for t in templates if t.cp > 1 and not t.recompute]
        relieved, misfit, _ = _search(wl, spec, precision, split, gpus_per_node, interconnect, network, fitted)
        if relieved is not None and (best is None or relieved[0] > best[0] * 1.0001):
            best = relieved
        if smallest is None or (misfit is not None and misfit[0] < smallest[0]):
            smallest = misfit
    if best is not None:
        _rate, plan, need = best
        timing = step_time(wl, spec, precision, plan, interconnect, gpus_per_node, network, fitted)
        return Choice(plan, timing, need, True)
    if smallest is None:
        raise InputError(f"no parallel layout exists for {gpus} GPUs")
    need, plan = smallest
    return Choice(plan, step_time(wl, spec, precision, plan, interconnect, gpus_per_node, network, fitted), need, False)


def _search(
    wl: Workload,
    spec: GpuSpec,
    precision: str,
    templates: Sequence[Plan],
    gpus_per_node: int,
    interconnect: str,
    network: float,
    fitted: PerfParams,
) -> tuple[tuple[float, Plan, float] | None, tuple[float, Plan] | None, float]:
    """The fastest of ``templates`` that fits (rate, plan, bytes), the smallest misfit (bytes, plan), and the best
    rate of a recomputing layout timed (0 without one)."""
    wanted = _default_micro_batch(wl)
    recomputing = 0.0
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
        base = template.batched(want, global_batch(wl, dp, want))
        micro, need = _fit_micro_batch(wl, spec, precision, base, want, fitted)
        if micro == 0:
            if smallest is None or need < smallest[0]:
                smallest = (need, template.batched(1, global_batch(wl, dp, 1)))
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
            plan = template.batched(size, global_batch(wl, dp, size))
            timing = step_time(wl, spec, precision, plan, interconnect, gpus_per_node, network, fitted)
            rate = timing.samples_per_step / timing.step_s
            if plan.recompute:
                recomputing = max(recomputing, rate)
            if best is None or rate > best[0] * 1.0001:
                best = (rate, plan, need if size == micro else memory_bytes(wl, precision, plan, fitted))
            if rate < previous:
                break  # past the best trade of bubble against per-micro-batch efficiency: smaller only loses more
            previous = rate
    return best, smallest, recomputing


def _fits_on(wl: Workload, spec: GpuSpec, precision: str, count: int, gpus_per_node: int, fitted: PerfParams) -> bool:
    """Whether any layout of ``count`` GPUs holds the job at a micro-batch of 1."""
    per_node = min(count, gpus_per_node)
    # The most memory-frugal setting the user allows: recomputation unless they turned it off.
    frugal = max(recompute_settings(wl))
    for template in candidate_plans(wl, count, per_node):
        if template.recompute == frugal or not wl.is_transformer:
            plan = template.batched(1, global_batch(wl, template.dp, 1))
            if memory_bytes(wl, precision, plan, fitted) <= usable_bytes(spec, plan.communicates):
                return True
    return False


@lru_cache(maxsize=1024)
def min_gpus_to_fit(wl: Workload, spec: GpuSpec, precision: str, gpus_per_node: int, fitted: PerfParams) -> int | None:
    """The smallest GPU count on which the job fits (a ranking asks once per GPU, not per count).

    Doubling finds the first power of two that fits; the counts between it and the power below (which does not)
    are then tried in order: every count up to two nodes, whole nodes beyond, and at most 64 of them (wider steps
    of whole nodes on the largest jobs). So 12 nodes of 8 are found where 16 would have been said."""
    count = 1
    while count <= MAX_GPUS and not _fits_on(wl, spec, precision, count, gpus_per_node, fitted):
        count *= 2
    if count > MAX_GPUS:
        return None
    lower = count // 2
    step = 1
    if lower > 2 * gpus_per_node:
        step = gpus_per_node * max(1, math.ceil(lower / gpus_per_node / 64))
    first = (lower // step + 1) * step
    for candidate in range(first, count, step):
        if _fits_on(wl, spec, precision, candidate, gpus_per_node, fitted):
            return candidate
    return count
