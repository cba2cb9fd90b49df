"""The plan form as a value: read from and written to the page URL, so a link reproduces the answer.

Pure functions (no Streamlit): the page turns ``st.query_params`` into a ``PlanForm`` with ``from_query``,
writes ``to_query`` back after each submit (both on ``planner.ui.url_form``), and hands the form's workload
(``planner.ui.workload_inputs.form_workload``), its ``rank_request`` and ``offer_filters`` to ``planner.api.rank``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.catalog.owned import OWNED
from planner.catalog.schema import PROVIDERS
from planner.catalog.tpu import ACCELERATOR_KINDS
from planner.cost.commitment import DEFAULT_UTILISATION
from planner.cost.request import ORDERS, PRICINGS, RankRequest
from planner.hardware import PRECISIONS
from planner.perf.workloads import CUSTOM, MODES, RECOMPUTE, STACKS, workload_names
from planner.ui.url_form import read_query, write_query

PRICING = PRICINGS
ORDER_BY = ORDERS
MAX_NODES = 16


@dataclass(frozen=True)
class PlanForm:
    """Everything the plan page asks; 0 (or empty) means "not set" for the optional numbers."""

    workload: str = "llama-3-8b"
    work: float = 0.0  # 0: the preset's default amount for the mode
    mode: str = "pretrain"
    precision: str = "bf16"
    stack: str = "typical"
    recompute: str = "auto"  # the script's activation checkpointing: auto, on or off
    params_billions: float = 0.0  # custom model (or overrides of a preset's shape)
    layers: int = 0
    hidden: int = 0
    heads: int = 0
    seq_len: int = 0
    global_batch: int = 0  # samples per optimizer step; 0: the preset's
    evaluations: int = 0  # evaluation passes over the run; 0: none
    eval_samples: int = 0  # samples each evaluation pass runs forward
    trainable_share: float = 0.0  # LoRA: the share of the parameters the adapters train; 0: the model's default
    tokens_per_sequence: float = 0.0  # mean real tokens of a sample; 0: every token is real
    packed: bool = False  # samples packed into each sequence rather than padded
    deadline_hours: float = 0.0
    budget_usd: float = 0.0
    pricing: str = "both"
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    max_nodes: int = 1
    by: str = "cost"
    available_only: bool = False  # only offerings whose cloud reported capacity at the last refresh
    accelerator: str = "any"  # gpu, tpu (Cloud TPU slices) or any
    max_age_days: float = 0.0  # refuse prices older than this (0: any age), as the CLI's --max-age
    utilisation: float = DEFAULT_UTILISATION  # share of committed hours used: prices committed-1y/3y
    runs_per_month: float = 0.0  # the plan view's runs a month (planner.api.plan); 0: no plan


# Field -> URL key; short keys keep shared links readable.
URL_KEYS: dict[str, str] = {
    "workload": "w",
    "work": "work",
    "mode": "mode",
    "precision": "prec",
    "stack": "stack",
    "recompute": "recompute",
    "params_billions": "params_b",
    "layers": "layers",
    "hidden": "hidden",
    "heads": "heads",
    "seq_len": "seq",
    "global_batch": "batch",
    "evaluations": "evals",
    "eval_samples": "eval_samples",
    "trainable_share": "share",
    "tokens_per_sequence": "real_tokens",
    "packed": "packed",
    "deadline_hours": "deadline_h",
    "budget_usd": "budget_usd",
    "pricing": "pricing",
    "providers": "provider",
    "regions": "region",
    "gpus": "gpu",
    "max_nodes": "nodes",
    "by": "by",
    "available_only": "available",
    "accelerator": "accel",
    "max_age_days": "max_age_d",
    "utilisation": "util",
    "runs_per_month": "runs",
}
DEFAULT = PlanForm()


def choices(catalog_regions: Sequence[str], catalog_gpus: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The allowed values of every choice field (regions and GPUs come from the catalog)."""
    return {
        "workload": tuple(workload_names()),
        "mode": MODES,
        "precision": PRECISIONS,
        "stack": STACKS,
        "recompute": RECOMPUTE,
        "pricing": PRICING,
        "by": ORDER_BY,
        "providers": (*PROVIDERS, OWNED),
        "regions": tuple(catalog_regions),
        "gpus": tuple(catalog_gpus),
        "accelerator": ACCELERATOR_KINDS,
    }


def from_query(
    params: Mapping[str, str | Sequence[str]], allowed: Mapping[str, Sequence[str]]
) -> tuple[PlanForm, list[str]]:
    """The form a URL describes, and one line per value that was ignored (the default is used instead)."""
    return read_query(params, allowed, DEFAULT, URL_KEYS, bounds={"max_nodes": (1, MAX_NODES)})


def to_query(form: PlanForm) -> dict[str, str]:
    """The URL parameters of ``form``: only what differs from the defaults, so the default page is a bare URL."""
    return write_query(form, DEFAULT, URL_KEYS)


def rank_request(form: PlanForm) -> RankRequest:
    """The one RankRequest of the form, handed whole to ``planner.api.rank``; InputError names the field."""
    return RankRequest(
        deadline_hours=form.deadline_hours or None,
        budget_usd=form.budget_usd or None,
        pricing=form.pricing,
        max_nodes=form.max_nodes,
        by=form.by,
        precision=form.precision,
        utilisation=form.utilisation,
    )


def offer_filters(form: PlanForm) -> dict[str, Any]:
    """Which offerings the form asks about, as keyword arguments of ``planner.api.rank``."""
    return {
        "provider": list(form.providers) or None,
        "region": list(form.regions) or None,
        "gpu": list(form.gpus) or None,
        "available_only": form.available_only,
        "accelerator": form.accelerator,
        "max_age_hours": form.max_age_days * 24 or None,
    }


def is_custom(form: PlanForm) -> bool:
    """Whether the form describes the generic transformer rather than a preset."""
    return form.workload == CUSTOM
