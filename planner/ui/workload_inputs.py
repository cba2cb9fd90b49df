"""What the plan and estimate pages share about the workload: the batch and evaluation-schedule inputs, and
``form_workload``, which turns either page's form into a workload through ``planner.perf.workloads.get_workload``
(0 means "not set"), so the library, the CLI (``--global-batch``, ``--evaluations``, ``--eval-samples``) and the app
build the same workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.perf.workloads import Workload, get_workload

GLOBAL_BATCH_HELP = (
    "Samples per optimizer step over all GPUs (images or sequences). 0: the preset's. The layout search never "
    "changes a batch you give without saying so in the assumptions."
)
EVALUATIONS_HELP = (
    "How many evaluation passes the run makes (for example one per epoch). Each evaluated sample is a forward pass "
    "on the training GPUs, counted in the time to solution. 0: none."
)
EVAL_SAMPLES_HELP = "Samples each evaluation pass runs (ImageNet-1k's validation set: 50,000 images). 0: none."
TRAINABLE_SHARE_LABEL = "LoRA trainable share (0 = 0.01)"
TRAINABLE_SHARE_HELP = (
    "LoRA only: the share of the parameters the adapters train, e.g. 0.0065 where PEFT prints 'trainable%: 0.65'. "
    "Only they carry gradients, optimizer state and checkpoints. 0: the model's default, 0.01 (1%)."
)


def trainable_share_input(container: Any, prefix: str) -> None:
    """The LoRA trainable share, keyed ``<prefix>trainable_share`` (read only when the mode is LoRA)."""
    container.number_input(
        TRAINABLE_SHARE_LABEL,
        min_value=0.0,
        max_value=1.0,
        step=0.001,
        format="%.5f",
        key=prefix + "trainable_share",
        help=TRAINABLE_SHARE_HELP,
    )


REAL_TOKENS_HELP = (
    "Mean real tokens of one sample when fewer than the sequence length (fine-tuning on short examples). Work and "
    "throughput count real tokens and samples. 0: every token is real."
)
PACKED_HELP = (
    "Samples packed into each sequence (attention per sample) rather than each padded to the sequence length; "
    "needs the real tokens per sample."
)


def packing_inputs(columns: Sequence[Any], prefix: str) -> None:
    """The real tokens per sample and whether samples are packed, keyed ``<prefix><field>``."""
    columns[0].number_input(
        "Real tokens per sample (0 = all)",
        min_value=0.0,
        step=64.0,
        format="%g",
        key=prefix + "tokens_per_sequence",
        help=REAL_TOKENS_HELP,
    )
    columns[1].checkbox("Packed sequences", key=prefix + "packed", help=PACKED_HELP)


def schedule_inputs(columns: Sequence[Any], prefix: str) -> None:
    """Global batch, evaluation passes and samples per pass, one per column, keyed ``<prefix><field>``."""
    columns[0].number_input(
        "Global batch (0 = preset's)", min_value=0, step=64, key=prefix + "global_batch", help=GLOBAL_BATCH_HELP
    )
    columns[1].number_input(
        "Evaluation passes (0 = none)", min_value=0, step=1, key=prefix + "evaluations", help=EVALUATIONS_HELP
    )
    columns[2].number_input(
        "Samples per evaluation", min_value=0, step=1000, key=prefix + "eval_samples", help=EVAL_SAMPLES_HELP
    )


def form_workload(form: Any) -> Workload:
    """The workload a page's form describes: ``workload``, ``work``, ``mode``, ``stack`` and ``recompute``, and
    whichever of the shape, batch and schedule fields the form has (0 means not set). InputError, one line, when
    they do not make a workload."""
    optional = ("layers", "hidden", "heads", "seq_len", "global_batch", "evaluations", "eval_samples")
    return get_workload(
        form.workload,
        work=form.work or None,
        mode=form.mode,
        stack=form.stack,
        recompute=form.recompute,
        params=getattr(form, "params_billions", 0.0) * 1e9 or None,
        # The share belongs to LoRA: kept in the form when the mode changes, read only while it is LoRA.
        trainable_share=(form.trainable_share or None) if form.mode == "lora" else None,
        tokens_per_sequence=getattr(form, "tokens_per_sequence", 0.0) or None,
        packed=bool(getattr(form, "packed", False)),
        **{name: getattr(form, name, 0) or None for name in optional},
    )
