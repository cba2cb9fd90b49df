"""NVIDIA's tuned-stack speed-ups applied to another vendor's GPU are said to be uncalibrated, wherever they show."""

from __future__ import annotations

import pandas as pd
from factories import make_offer

import planner

MI300X = {"provider": "azure", "instance_type": "Standard_ND96isr_MI300X_v5", "region": "eastus2", "zone": "",
          "gpu": "MI300X", "gpu_memory_gib": 192.0, "interconnect": "nvlink", "price_usd_per_hour": 48.0,
          "spot_price_usd_per_hour": None, "spot_interruption": None}  # fmt: skip
CATALOG = pd.DataFrame([make_offer(), make_offer(**MI300X)])


def _stack_notes(notes: list[str]) -> list[str]:
    return [note for note in notes if "tuned stack" in note]


def test_rank_with_the_tuned_stack_names_the_non_nvidia_gpus() -> None:
    tuned = planner.rank("llama-3-8b", catalog=CATALOG, tokens=1e9, stack="tuned")
    assert set(tuned.table["gpu"]) == {"H100-SXM", "MI300X"}
    assert _stack_notes(tuned.notes) == [
        "warning: tuned stack figures are NVIDIA's recipes (Megatron-Core/NeMo); on MI300X they are not calibrated: "
        "NVIDIA's speed-up is assumed (stack typical leaves it out)"
    ]


def test_no_note_for_the_typical_stack_or_nvidia_only() -> None:
    assert _stack_notes(planner.rank("llama-3-8b", catalog=CATALOG, tokens=1e9).notes) == []
    nvidia = planner.rank("llama-3-8b", catalog=CATALOG, tokens=1e9, stack="tuned", gpu="H100")
    assert _stack_notes(nvidia.notes) == []


def test_estimate_with_the_tuned_stack_on_mi300x_leads_with_the_caveat() -> None:
    tuned = planner.estimate("llama-3-8b", "MI300X", 8, stack="tuned")
    assert tuned.assumptions[0].startswith("tuned stack figures are NVIDIA's recipes (Megatron-Core/NeMo); on MI300X")
    assert not _stack_notes(planner.estimate("llama-3-8b", "MI300X", 8).assumptions)
    assert not _stack_notes(planner.estimate("llama-3-8b", "H100", 8, stack="tuned").assumptions)
