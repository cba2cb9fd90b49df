"""Per-family facts the price feeds do not carry: GPU, intra-node link, network bandwidth, how it is sold.

Read from ``data/instance_families.csv`` (one row per family or per size, each with the cloud page it came
from). Pure standard library so the live adapters and the bundle builder can call it without pandas.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache

from planner._data import data_dir

FAMILIES_FILE = "instance_families.csv"


@dataclass(frozen=True)
class FamilyFacts:
    """What is known about one instance type from its family's documentation."""

    family: str
    gpu: str  # canonical id from data/gpus.csv
    interconnect: str  # nvswitch, nvlink or pcie
    network_gbps: float | None
    availability: str | None  # set only when the whole family is not sold on demand
    source: str
    gpu_count: float | None = None  # for fixed shapes (GCP a2/a3/a4/g2 host rows carry no GPU count)
    accelerator: str | None = None  # Google Cloud accelerator type attached to the shape
    notes: str = ""


@dataclass(frozen=True)
class _Entry:
    provider: str
    pattern: re.Pattern[str]
    facts: FamilyFacts


def _opt_float(text: str) -> float | None:
    return float(text) if text.strip() else None


@cache
def _entries() -> tuple[_Entry, ...]:
    entries: list[_Entry] = []
    with (data_dir() / FAMILIES_FILE).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            facts = FamilyFacts(
                family=row["family"],
                gpu=row["gpu"],
                interconnect=row["interconnect"],
                network_gbps=_opt_float(row["network_gbps"]),
                availability=row["availability"] or None,
                source=row["source"],
                gpu_count=_opt_float(row["gpu_count"]),
                accelerator=row["accelerator"] or None,
                notes=row["notes"],
            )
            entries.append(_Entry(row["provider"], re.compile(row["pattern"]), facts))
    return tuple(entries)


@cache
def family_facts(provider: str, instance_type: str) -> FamilyFacts | None:
    """Facts for ``instance_type`` of ``provider``, or None when the type is in no covered family.

    The first row whose pattern matches the whole instance type wins.
    """
    for entry in _entries():
        if entry.provider == provider and entry.pattern.fullmatch(instance_type):
            return entry.facts
    return None


def covered_families(provider: str | None = None) -> list[tuple[str, str]]:
    """(provider, family) pairs the table covers, in file order, without repeats."""
    seen = {(e.provider, e.facts.family): None for e in _entries() if provider in (None, e.provider)}
    return list(seen)
