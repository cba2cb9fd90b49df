"""Typer options describing a workload, shared by `gpuplan estimate` and `gpuplan rank`.

Declare the parameters with these aliases and pass their values to ``workload_from_cli``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from planner.perf.workloads import Workload, get_workload, workload_names

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
ModeOpt = Annotated[str, typer.Option("--mode", help="Training mode: pretrain, finetune or lora.")]
StackOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="typical (PyTorch FSDP/DeepSpeed; the default) or tuned (NVIDIA Megatron-Core/NeMo recipes).",
    ),
]
BatchPerGpuOpt = Annotated[int | None, typer.Option("--batch-per-gpu", help="Micro-batch per GPU (samples).")]
GlobalBatchOpt = Annotated[int | None, typer.Option("--global-batch", help="Global batch (samples per step).")]
PrecisionOpt = Annotated[str, typer.Option("--precision", help="fp32, tf32, fp16, bf16 or fp8.")]
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


def workload_from_cli(
    workload: str,
    *,
    params: float | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    vocab: int | None = None,
    seq_len: int | None = None,
    tokens: float | None = None,
    mode: str | None = None,
    stack: str | None = None,
    batch_per_gpu: int | None = None,
    global_batch: int | None = None,
    measured: float | None = None,
    measured_on: str | None = None,
    efficiency: float | None = None,
) -> tuple[Workload, dict[str, Any]]:
    """The Workload the flags describe, plus the extra ``estimate()`` options (measured, measured_on, efficiency).

    Raises InputError (one line) for an unknown workload or an invalid value.
    """
    built = get_workload(
        workload,
        params=params,
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        seq_len=seq_len,
        work=tokens,
        mode=mode,
        stack=stack,
        batch_per_gpu=batch_per_gpu,
        global_batch=global_batch,
    )
    extra: dict[str, Any] = {}
    if measured is not None:
        extra["measured"] = measured
    if measured_on is not None:
        extra["measured_on"] = measured_on
    if efficiency is not None:
        extra["efficiency"] = efficiency
    return built, extra


# The workload flags every command declares, by parameter name (the keyword arguments of workload_from_cli).
WORKLOAD_FLAGS = (
    "params",
    "layers",
    "hidden",
    "heads",
    "vocab",
    "seq_len",
    "tokens",
    "mode",
    "stack",
    "batch_per_gpu",
    "global_batch",
    "measured",
    "measured_on",
    "efficiency",
)


def workload_from_flags(workload: str, values: Mapping[str, Any]) -> tuple[Workload, dict[str, Any]]:
    """``workload_from_cli`` fed from a command's parameters (pass ``locals()``), so no command repeats the list."""
    return workload_from_cli(workload, **{name: values[name] for name in WORKLOAD_FLAGS})
