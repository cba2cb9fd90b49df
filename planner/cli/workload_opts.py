"""Typer options describing a workload, shared by `gpuplan estimate`, `gpuplan rank` and `gpuplan compare`.

A command takes them as two option groups (planner.cli.groups): ``WorkloadFlags`` and ``EvidenceFlags``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from planner.perf.options import EVIDENCE_FIELDS, ModelOptions
from planner.perf.workloads import RECOMPUTE_HELP, USER_FIELDS, Workload, resolve_workload, workload_names

WorkloadOpt = Annotated[
    str,
    typer.Option("--workload", "-w", help=f"Preset or 'transformer' (custom decoder): {', '.join(workload_names())}."),
]
ParamsOpt = Annotated[
    float | None, typer.Option("--params", help="Parameter count, e.g. 7e9 (custom transformer; overrides a preset).")
]
LayersOpt = Annotated[int | None, typer.Option("--layers", help="Transformer layers.")]
HiddenOpt = Annotated[int | None, typer.Option("--hidden", help="Transformer hidden size.")]
HeadsOpt = Annotated[int | None, typer.Option("--heads", help="Attention heads.")]
VocabOpt = Annotated[int | None, typer.Option("--vocab", help="Vocabulary size.")]
SeqLenOpt = Annotated[int | None, typer.Option("--seq-len", help="Sequence length in tokens.")]
TokensOpt = Annotated[
    float | None,
    typer.Option(
        "--tokens",
        "--work",
        help="Amount of work in the workload's unit (tokens, images or sequences); default per preset.",
    ),
]
# The amount of work under the name of its unit, as the library takes it: a unit the workload does not count in is an
# error (--images on a token workload), never read as another unit.
ImagesOpt = Annotated[float | None, typer.Option("--images", help="Amount of work in images (CNN presets).")]
SequencesOpt = Annotated[float | None, typer.Option("--sequences", help="Amount of work in sequences (BERT presets).")]
SamplesOpt = Annotated[float | None, typer.Option("--samples", help="Amount of work in images or sequences.")]
ModeOpt = Annotated[str, typer.Option("--mode", help="Training mode: pretrain, finetune or lora.")]
StackOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="typical (PyTorch FSDP/DeepSpeed; the default) or tuned (NVIDIA Megatron-Core/NeMo recipes).",
    ),
]
RecomputeOpt = Annotated[str | None, typer.Option("--recompute", help=RECOMPUTE_HELP)]
BatchPerGpuOpt = Annotated[int | None, typer.Option("--batch-per-gpu", help="Micro-batch per GPU (samples).")]
GlobalBatchOpt = Annotated[int | None, typer.Option("--global-batch", help="Global batch (samples per step).")]
EvaluationsOpt = Annotated[
    float | None,
    typer.Option("--evaluations", help="Evaluation passes over the run (with --eval-samples); 0 by default."),
]
EvalSamplesOpt = Annotated[
    float | None,
    typer.Option(
        "--eval-samples", help="Samples (images or sequences) each evaluation pass runs: a forward pass each."
    ),
]
TrainableShareOpt = Annotated[
    float | None,
    typer.Option(
        "--trainable-share",
        help="LoRA: the share of the parameters the adapters train, e.g. 0.0065 for PEFT's 'trainable%: 0.65'; "
        "default 0.01.",
    ),
]
PackedOpt = Annotated[
    bool,
    typer.Option(
        "--packed/--padded",
        help="Samples packed into sequences of --seq-len (attention per sample), or each padded to it (the default). "
        "Give the real tokens with --tokens-per-sequence or --padding-share.",
    ),
]
TokensPerSequenceOpt = Annotated[
    float | None,
    typer.Option("--tokens-per-sequence", help="Mean real tokens of one sample, when fewer than --seq-len."),
]
PaddingShareOpt = Annotated[
    float | None,
    typer.Option(
        "--padding-share", help="Share of --seq-len that padding fills, e.g. 0.65 (or --tokens-per-sequence)."
    ),
]
ProfileOpt = Annotated[
    Path | None,
    typer.Option("--profile", help="A calibration profile (gpuplan calibrate -o FILE): the job's measured speed."),
]


def profile_keyword(profile: Path | None) -> dict[str, Any]:
    """The library keyword of --profile, when given."""
    return {"profile": profile} if profile is not None else {}


PrecisionOpt = Annotated[
    str, typer.Option("--precision", help="fp32, tf32, fp16, bf16, fp8, nvfp4 or mxfp4 (FP4: Blackwell only).")
]
MeasuredOpt = Annotated[
    float | None,
    typer.Option("--measured", help="Your measured throughput (workload unit, total) on --measured-on."),
]
MeasuredOnOpt = Annotated[
    str | None, typer.Option("--measured-on", help="Where --measured was taken: GPU or GPU:COUNT, e.g. A100-80GB:8.")
]
EfficiencyOpt = Annotated[
    float | None,
    typer.Option("--efficiency", help="Your model FLOPs utilisation (0-1), e.g. 0.3; replaces the model's."),
]


# The work flags named by their unit (parameter name = the library's keyword).
UNIT_FLAGS = ("images", "sequences", "samples")


@dataclass(frozen=True)
class WorkloadFlags:
    """The flags that shape the workload (its Workload fields a user sets, and --tokens/--work), as one option group
    (planner.cli.groups) of every command that resolves a workload."""

    params: ParamsOpt = None
    layers: LayersOpt = None
    hidden: HiddenOpt = None
    heads: HeadsOpt = None
    vocab: VocabOpt = None
    seq_len: SeqLenOpt = None
    tokens: TokensOpt = None
    images: ImagesOpt = None
    sequences: SequencesOpt = None
    samples: SamplesOpt = None
    mode: ModeOpt = "pretrain"
    stack: StackOpt = None
    recompute: RecomputeOpt = None
    batch_per_gpu: BatchPerGpuOpt = None
    global_batch: GlobalBatchOpt = None
    evaluations: EvaluationsOpt = None
    eval_samples: EvalSamplesOpt = None
    trainable_share: TrainableShareOpt = None
    packed: PackedOpt = False
    tokens_per_sequence: TokensPerSequenceOpt = None
    padding_share: PaddingShareOpt = None

    def workload(self, name: str) -> Workload:
        """The Workload these flags describe on preset ``name`` (or 'transformer').

        ``--tokens``/``--work`` is the amount of work in the workload's own unit, so it is passed as ``work``;
        ``--images``, ``--sequences`` and ``--samples`` as the library's keywords of those names. Raises InputError
        (one line, naming the field) for an unknown workload or an invalid value.
        """
        units = {field: getattr(self, field) for field in UNIT_FLAGS}
        fields = {field: getattr(self, field) for field in USER_FIELDS}
        return resolve_workload(name, work=self.tokens, **units, **fields)


@dataclass(frozen=True)
class EvidenceFlags:
    """The user's own evidence about speed (planner.perf.options.ModelOptions, whose fields these are)."""

    measured: MeasuredOpt = None
    measured_on: MeasuredOnOpt = None
    efficiency: EfficiencyOpt = None

    def options(self) -> ModelOptions:
        """The evidence as the model takes it; InputError for a pair given half or both kinds at once."""
        return ModelOptions(**{name: getattr(self, name) for name in EVIDENCE_FIELDS})
