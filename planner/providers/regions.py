"""Where an instance type is sold: the regions its source lists, else the ones known before, else "unknown".

Never every region the cloud runs: a cloud that lists only spare capacity (Lambda) or a size with no regions
(DigitalOcean) does not make a type sold everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from planner.catalog.schema import REGION_UNKNOWN

UNKNOWN_FLAG = "region_unknown"


def regions_by_type(rows: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Instance type -> the real regions catalog rows list it in ("unknown" left out)."""
    known: dict[str, set[str]] = {}
    for row in rows:
        known.setdefault(str(row["instance_type"]), set())
        if row["region"] != REGION_UNKNOWN:
            known[str(row["instance_type"])].add(str(row["region"]))
    return known


def sold_in(listed: Iterable[str], known: Iterable[str] = ()) -> set[str]:
    """The regions a type is sold in: ``listed`` by its source plus ``known`` before, or {"unknown"} if none."""
    regions = (set(listed) | set(known)) - {REGION_UNKNOWN}
    return regions or {REGION_UNKNOWN}
