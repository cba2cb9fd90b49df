"""The words of an estimate: its assumptions and every note on what it rests on, from the numbers ``figures``
computed. The numbers never depend on these words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.hardware import FP4_PRECISIONS, GpuSpec
from planner.perf.ceilings import REFERENCE_GPU, ceiling_origin, ceiling_share, reference_key, reference_share
from planner.perf.evidence import MANY_NODES, SHORT_STEP_S, held_out_verdict
from planner.perf.figures import Calibration, Figures, Setup
from planner.perf.layout import Choice
from planner.perf.memory import COLLECTIVE_HEADROOM, GIB, trained_params
from planner.perf.params import PerfParams
from planner.perf.plan import Plan
from planner.perf.step import AMPERE_KERNELS_AFTER_ADA, FP4_BF16_LINEAR_SHARE, ampere_kernels
from planner.perf.workloads import Workload

# How the notes name each kind of workload.
KIND_NAMES = {"cnn": "CNN", "encoder": "encoder (BERT-class)", "decoder": "decoder (LLM)"}


def lora_text(wl: Workload, fitted: PerfParams) -> str:
    """What a LoRA run trains, and whether its share was given or assumed."""
    share = trained_params(wl, fitted) / wl.params
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


def nodes_text(gpus: int, per_node: int) -> str:
    """'1 node of 8 GPUs', '4 nodes of 8 GPUs', or with a partial last node '2 nodes (8 + 4 GPUs)'."""
    if gpus == 1:
        return "1 GPU"
    full, rest = divmod(gpus, per_node)
    if rest == 0:
        return f"{full} node{'s' if full > 1 else ''} of {per_node} GPUs"
    shares = " + ".join([str(per_node)] * full + [str(rest)]) if full <= 3 else f"{full} x {per_node} + {rest}"
    return f"{full + 1} nodes ({shares} GPUs)"


def link_text(spec: GpuSpec, link: str, per_node: int) -> str:
    """How a node's GPUs are joined, for the assumptions (as ``links.link_gbs`` reads the interconnect)."""
    if link == "nvlink" and spec.form_factor == "oam":
        return ", direct links between every GPU pair inside a node (a full mesh, such as AMD's Infinity Fabric)"
    if link == "nvlink" and per_node > 2:
        return ", NVLink bridges between pairs and PCIe across pairs inside a node"
    return f", {link} inside a node"


def host_bound_note(wl: Workload, plan: Plan, fitted: PerfParams) -> str:
    """Why a faster GPU would not run this job faster: the host or the recipe's input feed sets the pace."""
    if not wl.is_transformer and wl.stack == "tuned":
        rate = 1.0 / fitted.cnn["tuned_input_s_per_image"]
        return (
            f"paced by the input pipeline, not the GPU: NVIDIA's tuned ResNet-50 recipe feeds a GPU at most "
            f"{rate:,.0f} images/s (MLPerf ResNet-50: an H200 trains 1.1x an H100); a faster GPU waits"
        )
    if not wl.is_transformer:
        rate = 1.0 / fitted.cnn["typical_floor_s_per_image"]
        return (
            f"paced by the typical PyTorch stack, not the GPU's tensor cores or HBM: it trains ResNet-50 at most "
            f"{rate:,.0f} images/s per GPU (Lambda, NVIDIA's DLE scripts on synthetic images: an H200 and a B200 "
            "both 1.10x an H100, a B200 as fast in TF32 as in FP16); a faster GPU waits; the tuned stack (DALI, "
            "channels-last, CUDA graphs) runs past it"
        )
    if wl.stack == "tuned":
        rate = 1.0 / fitted.transformer["tuned_input_s_per_token"]
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


def scale_out_note(check: Mapping[str, Any]) -> str:
    """What NVIDIA's held-out MLPerf runs at this scale took against the model's time."""
    return (
        f"held out of the fit, {check['runs']} of NVIDIA's MLPerf Training runs with steps under "
        f"{SHORT_STEP_S * 1000:.0f} ms across {MANY_NODES} or more nodes ({check['gpus'][0]:,}-{check['gpus'][1]:,} "
        f"GPUs, data/mlperf_scale_out.csv) took {check['ratio_low']:.2f}-{check['ratio_high']:.2f}x (median "
        f"{check['ratio_median']:.2f}x) the time this model gives them: per-step costs at this scale that it does "
        "not describe; expect a longer run (fewer nodes, or more samples per GPU in a step, lose less)"
    )


def held_out_note(spec: GpuSpec, wl: Workload, check: Mapping[str, Any]) -> str:
    """What the runs kept out of the fit found on this GPU and kind of model (``Calibration.held_out``)."""
    error = float(check["median_error_pct"])
    return (
        f"held out of the fit, {check['runs']} of Lambda's 2024-2025 runs of {KIND_NAMES[wl.kind]} training on "
        f"{spec.id} (typical stack, {_counts_text(check.get('gpus', ()))}, data/lambda_v2_runs.csv) ran a median "
        f"{held_out_verdict(error)} for the same jobs"
        + ("; expect the low end of the band or below" if error >= 10.0 else "")
    )


def _counts_text(counts: Sequence[int]) -> str:
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


def efficiency_note(efficiency: float, model_mfu: float) -> str:
    """The user's MFU replacing the model's."""
    return f"utilisation set by the user: MFU {efficiency:.0%} (the model predicted {model_mfu:.0%})"


def rescale_note(
    measured: float, wl: Workload, ref_gpus: int, ref_spec: GpuSpec, reference_throughput: float, scale: float
) -> str:
    """The user's measurement rescaling the model's rate through its ratio between the two configurations."""
    return (
        f"rescaled by the user's measurement {measured:g} {wl.throughput_unit} on {ref_gpus}x {ref_spec.id} "
        f"(model: {reference_throughput:.4g}; factor {scale:.2f})"
    )


def calibration_note(spec: GpuSpec, wl: Workload, precision: str, figures: Figures) -> str | None:
    """Why the band is wider on a GPU the fit has not measured on this kind of model, and what held-out runs found."""
    calibration = figures.calibration
    scale = _scale_text(calibration)
    if calibration.gap is None:
        return scale
    if calibration.gap == "precision":
        measured = ", ".join(calibration.measured_precisions) or "none"
        note = (
            f"{spec.id} was measured in the calibration data in {measured} only, never in {precision}: this "
            f"precision's rate comes from the datasheet's peak and other GPUs' measurements; wider band"
        )
    elif calibration.gap == "gpu":
        known = calibration.known_architecture
        note = (
            f"no published measurements on {spec.id} in the calibration data: estimated from its datasheet "
            f"(peak, memory bandwidth{', matmul ceiling' if ceiling_share(spec, precision) else ''})"
            f"{' and other ' + spec.architecture + ' GPUs' if known else ''}; wider band"
        )
    else:
        kind = KIND_NAMES[wl.kind]
        note = (
            f"the published measurements on {spec.id} in the calibration data are of "
            f"{' and '.join(KIND_NAMES[k] for k in calibration.measured_kinds)} models only: this estimate carries "
            f"other GPUs' {kind} measurements over to it; wider band"
        )
    if calibration.held_out is not None:
        note = f"{note}; {held_out_note(spec, wl, calibration.held_out)}"
    return note if scale is None else f"{note}; {scale}"


def _scale_text(calibration: Calibration) -> str | None:
    """Where the GPU count lies past the largest run the fit measured of this kind of model."""
    if calibration.beyond_doublings <= 0 or calibration.measured_scale is None:
        return None
    return (
        f"{calibration.beyond_doublings:.1f} doublings past the largest calibration run of this kind of model "
        f"({calibration.measured_scale:,} GPUs): wider band"
    )


def estimate_notes(
    wl: Workload, spec: GpuSpec, setup: Setup, choice: Choice, figures: Figures, fitted: PerfParams
) -> list[str]:
    """The notes on the numbers, in the order the assumptions list them, after the calibration note."""
    notes: list[str] = []
    plan, prec = choice.plan, setup.precision
    share = ceiling_share(spec, prec)
    reference = reference_share(reference_key(spec, prec))
    if share is not None and abs(share / reference - 1.0) > 0.02:
        notes.append(
            f"{spec.id} sustains {share:.0%} of its datasheet {prec} peak in matmuls ({reference:.0%} on the "
            f"{REFERENCE_GPU} the model is calibrated on): compute scaled by {share / reference:.2f} "
            f"({ceiling_origin(spec, prec)})"
        )
    if prec in FP4_PRECISIONS:
        notes.append(fp4_note(prec))
    if wl.batch_per_gpu and plan.micro_batch < wl.batch_per_gpu and choice.fits:
        # The user's micro-batch was not run as given: say why where the layout is stated.
        per_rank = wl.global_batch // plan.dp if wl.global_batch else None
        if per_rank is not None and per_rank < wl.batch_per_gpu:
            why_smaller = f"the global batch {wl.global_batch} leaves {per_rank} per data-parallel rank"
        else:
            why_smaller = "a larger one does not fit in memory with this layout" + (
                ", or ran slower through the pipeline" if plan.pp > 1 else ""
            )
        notes.append(f"micro-batch {plan.micro_batch} per GPU, not the {wl.batch_per_gpu} given: {why_smaller}")
    if choice.timing.host_bound and choice.fits:
        notes.append(host_bound_note(wl, plan, fitted))
    if figures.scale_out is not None:
        notes.append(scale_out_note(figures.scale_out))
    if not wl.is_transformer and wl.stack == "tuned" and prec in ("fp32", "tf32"):
        notes.append(
            f"the tuned CNN speed-up was measured in mixed precision (MLPerf ResNet-50) and is not applied in {prec}: "
            "NVIDIA's own ResNet-50 tables are within 5% of the typical stack in FP32 and 9-12% below it in TF32"
        )
    if ampere_kernels(wl, spec, prec):
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
    evaluation = figures.evaluation
    if evaluation is not None and choice.fits:
        padded = (
            f"; {wl.eval_samples:g} samples over {plan.dp} data-parallel ranks: {evaluation.per_rank} each"
            if evaluation.per_rank * plan.dp != wl.eval_samples
            else ""
        )
        fixed = f"; {evaluation.fixed_s:g} s a pass across nodes, whatever its size" if evaluation.fixed_s else ""
        notes.append(
            f"{wl.eval_text()}: {evaluation.hours:.3g} h (a forward pass is {evaluation.forward_share:.2f} of a "
            f"trained sample{padded}{fixed})"
        )
    return notes


def why_not_fits(wl: Workload, spec: GpuSpec, setup: Setup, choice: Choice, figures: Figures) -> str | None:
    """Why the job does not fit on these GPUs (None where it does), and how many would hold it."""
    if choice.fits:
        return None
    plan = choice.plan
    fewest = figures.min_gpus_to_fit
    hint = f"; at least {fewest} GPUs would fit" if fewest else "; no GPU count fits"
    nccl = f" and {COLLECTIVE_HEADROOM:.0%} kept free for NCCL's buffers" if plan.communicates else ""
    context = "the CUDA context and NCCL's workspaces" if plan.communicates else "the CUDA context"
    return (
        f"needs {choice.memory_bytes / GIB + figures.reserved_gib:.1f} GiB per GPU ({context} included) even with "
        + (
            f"sharding, {'' if plan.recompute else 'no '}recomputation and {plan.tp}-way tensor / "
            f"{plan.pp}-way pipeline parallelism"
            if setup.gpus > 1
            else "a micro-batch of 1" + (" and recomputation" if plan.recompute else "")
        )
        + (" (recompute off, as given)" if wl.is_transformer and wl.recompute == "off" else "")
        + f", but {spec.id} has {figures.usable_gib:.1f} GiB usable of {spec.memory_gib:g} (after allocator "
        f"fragmentation{nccl}){hint}"
    )


def layout_text(wl: Workload, choice: Choice) -> str:
    """The layout chosen (or the closest tried), as the assumptions state it."""
    plan = choice.plan
    return (
        f"{'layout' if choice.fits else 'closest layout tried (does not fit)'}: "
        f"{plan.dp}-way data parallel{_sharding_text(plan)}, "
        f"{plan.tp}-way tensor, {plan.pp}-way pipeline"
        + (f", {plan.cp}-way context" if plan.cp > 1 else "")
        + f", micro-batch {plan.micro_batch}, global batch "
        f"{plan.global_batch}{', activation recomputation' if plan.recompute else ''}"
        + (f" (recompute {wl.recompute}, as given)" if wl.is_transformer and wl.recompute != "auto" else "")
    )


def assumptions(
    wl: Workload,
    spec: GpuSpec,
    setup: Setup,
    choice: Choice,
    figures: Figures,
    notes: Sequence[str],
    fitted: PerfParams,
) -> list[str]:
    """What the estimate assumes, first the job, its layout and nodes, then ``notes``."""
    prec, per_node = setup.precision, setup.gpus_per_node
    return [
        f"{wl.description or wl.name}, {wl.mode}, {prec}; work {wl.default_work_text()}",
        *([lora_text(wl, fitted)] if wl.mode == "lora" else []),
        *([wl.packing_text()] if wl.packing_text() else []),
        wl.software_text,
        layout_text(wl, choice),
        nodes_text(setup.gpus, per_node)
        + (link_text(spec, setup.interconnect, per_node) if setup.gpus > 1 else "")
        + (f", {setup.network_gbps:g} Gbps network per node" if setup.nodes > 1 else ""),
        "throughput from dense peak x fitted efficiency and memory bandwidth (data/perf_params.json)",
        f"energy at the node's wall = GPUs x TDP {spec.tdp_w:g} W x node factor {figures.node_factor:.2f} (measured "
        "MLPerf Training nodes, data/node_power.csv) x time; a cloud's PUE comes on top (rank)",
        *notes,
    ]


def fp4_note(precision: str) -> str:
    """What an FP4 estimate assumes: NVIDIA's recipe, and no FP4 measurement behind it."""
    return (
        f"{precision}: NVIDIA's NVFP4 recipe (linear layers' forward and both gradient GEMMs in FP4, "
        f"{FP4_BF16_LINEAR_SHARE:.0%} of them and attention, norms and embeddings in BF16); no FP4 run is in the fit "
        "and no FP4 matmul ceiling is measured: FP4 GEMMs are taken at FP8's share of their peak, and the band is "
        "widened as for an uncalibrated GPU"
    )
