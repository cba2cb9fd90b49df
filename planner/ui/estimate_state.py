"""The estimate page's form as a value, read from and written to the page URL like the plan page's.

Pure functions (no Streamlit): ``from_query`` and ``to_query`` (on ``planner.ui.url_form``); the page hands the
form's workload (``planner.ui.workload_inputs.form_workload``) to ``planner.api.estimate``. 0 means "not set": the
preset's amount of work (for the mode) and shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.hardware import PRECISIONS
from planner.perf.workloads import MODES, RECOMPUTE, STACKS, WORKLOADS
from planner.ui.url_form import read_query, write_query

MAX_GPUS = 4096


@dataclass(frozen=True)
class EstimateForm:
    """Everything the estimate page asks."""

    workload: str = "llama-3-8b"
    gpu: str = "H100-SXM"
    gpus: int = 8
    precision: str = "bf16"
    mode: str = "pretrain"
    work: float = 0.0  # 0: the preset's default amount for the mode
    stack: str = "typical"
    recompute: str = "auto"
    seq_len: int = 0
    global_batch: int = 0
    evaluations: int = 0
    eval_samples: int = 0
    trainable_share: float = 0.0  # LoRA: the share of the parameters the adapters train; 0: the model's default
    tokens_per_sequence: float = 0.0  # mean real tokens of a sample; 0: every token is real
    packed: bool = False  # samples packed into each sequence rather than padded


URL_KEYS: dict[str, str] = {
    "workload": "w",
    "gpu": "gpu",
    "gpus": "n",
    "precision": "prec",
    "mode": "mode",
    "work": "work",
    "stack": "stack",
    "recompute": "recompute",
    "seq_len": "seq",
    "global_batch": "batch",
    "evaluations": "evals",
    "eval_samples": "eval_samples",
    "trainable_share": "share",
    "tokens_per_sequence": "real_tokens",
    "packed": "packed",
}
DEFAULT = EstimateForm()


def choices(gpus: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The allowed values of every choice field."""
    return {
        "workload": tuple(WORKLOADS),
        "gpu": tuple(gpus),
        "precision": PRECISIONS,
        "mode": MODES,
        "stack": STACKS,
        "recompute": RECOMPUTE,
    }


def from_query(
    params: Mapping[str, str | Sequence[str]], allowed: Mapping[str, Sequence[str]]
) -> tuple[EstimateForm, list[str]]:
    """The form a URL describes, and one line per value that was ignored (the default is used instead)."""
    return read_query(params, allowed, DEFAULT, URL_KEYS, bounds={"gpus": (1, MAX_GPUS)})


def to_query(form: EstimateForm) -> dict[str, str]:
    """The URL parameters of ``form``: only what differs from the defaults, so the default page is a bare URL."""
    return write_query(form, DEFAULT, URL_KEYS)
