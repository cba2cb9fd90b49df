"""No NVIDIA tuned-stack speed-up on another vendor's GPU (data/software_stacks.csv), and the user is told so."""

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
        "warning: tuned stack figures are NVIDIA's recipes (Megatron-Core/NeMo); on MI300X no tuned recipe is "
        "measured, so they are estimated as the typical stack (no NVIDIA speed-up)"
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


def test_the_tuned_stack_on_mi300x_runs_as_the_typical_stack() -> None:
    # Issue 39: NVIDIA's speed-ups put MI300X 34.5% off published runs; AMD has no measured tuned recipe in data/.
    for workload, gpus in (("llama-3-8b", 8), ("bert-large", 8), ("llama-3-70b", 64)):
        tuned = planner.estimate(workload, "MI300X", gpus, stack="tuned")
        typical = planner.estimate(workload, "MI300X", gpus)
        assert tuned.throughput == typical.throughput
        assert tuned.parallelism == typical.parallelism
    assert planner.estimate("llama-3-8b", "MI300X", 8, precision="fp8", stack="tuned").throughput == (
        planner.estimate("llama-3-8b", "MI300X", 8, precision="fp8").throughput
    )


def test_the_tuned_stack_still_speeds_up_nvidia_gpus() -> None:
    tuned = planner.estimate("llama-3-8b", "H100", 8, stack="tuned").throughput
    typical = planner.estimate("llama-3-8b", "H100", 8).throughput
    assert tuned is not None and typical is not None and tuned > 1.1 * typical
