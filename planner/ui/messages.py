"""The app's one line for an error: a library field reworded as the label of the input that sets it.

The CLI rewords ``eval_samples`` as ``--eval-samples``; the app says "Samples per evaluation", so a web user never
reads an argument name (``planner.errors.InputError.reworded``).
"""

from __future__ import annotations

from planner.errors import InputError, PlannerError

# Library field -> the input's label on the plan and estimate pages (without its "0 = ..." hint).
LABELS: dict[str, str] = {
    "workload": "Workload",
    "work": "Amount of work",
    "mode": "Training",
    "precision": "Precision",
    "stack": "Software",
    "recompute": "Activation checkpointing",
    "params": "Parameters",
    "layers": "Layers",
    "hidden": "Hidden size",
    "heads": "Attention heads",
    "seq_len": "Sequence length",
    "global_batch": "Global batch",
    "evaluations": "Evaluation passes",
    "eval_samples": "Samples per evaluation",
    "trainable_share": "LoRA trainable share",
    "gpu": "GPU",
    "gpus": "GPUs",
    "deadline_hours": "Deadline",
    "budget_usd": "Budget",
    "pricing": "Pricing",
    "provider": "Providers",
    "region": "Regions",
    "max_nodes": "Max nodes",
    "by": "Order by",
}


def error_text(exc: PlannerError) -> str:
    """``exc``'s line with every field it names called by its input's label ("Global batch"); others as they are."""
    if isinstance(exc, InputError) and exc.field:
        return exc.reworded(lambda field: f"'{LABELS[field]}'" if field in LABELS else field)
    return str(exc)
