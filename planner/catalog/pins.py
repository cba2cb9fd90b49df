"""Which stored snapshots a report reads: the current ones, the ones named by id, or those current at a moment.

A report pinned to snapshots reads the same rows after any later refresh (snapshots never change), and judges the age
of its prices at the moment those snapshots were current, so that it reproduces byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from numbers import Integral
from typing import TYPE_CHECKING, Any

from planner.errors import LIBRARY_CALLS, InputError

if TYPE_CHECKING:
    import pandas as pd

    from planner.catalog.store import CatalogStore, SnapshotInfo


@dataclass(frozen=True)
class PinnedCatalog:
    """The offerings a report reads, the snapshots they come from, and the moment their ages are judged at (None:
    now, for the current catalog)."""

    frame: pd.DataFrame
    snapshots: list[SnapshotInfo]
    judged_at: datetime | None
    # What was done to the stored prices on the way (the user's negotiated prices), in words.
    notes: list[str] = field(default_factory=list)


def snapshot_ids(snapshot: int | str | Sequence[int | str] | None) -> list[int]:
    """Snapshot ids from an id, a comma-separated text of ids, or a list of either; anything else is an InputError."""
    if snapshot is None:
        return []
    # A single id may be a numpy integer (a cell of catalog_status()).
    items = [snapshot] if isinstance(snapshot, Integral | str) or not isinstance(snapshot, Sequence) else snapshot
    ids: list[int] = []
    for item in items:
        parts = item.split(",") if isinstance(item, str) else [item]
        for part in parts:
            text = str(part).strip()
            if isinstance(part, bool) or not text.isdigit():
                raise InputError(
                    f"must be snapshot ids (whole numbers, comma-separated), got {part!r:.40}", field="snapshot"
                )
            ids.append(int(text))
    return list(dict.fromkeys(ids))


def moment(as_of: str | datetime, field: str = "as_of") -> datetime:
    """An ISO 8601 date or time as an aware datetime (UTC when it names no zone)."""
    try:
        when = as_of if isinstance(as_of, datetime) else datetime.fromisoformat(str(as_of).strip())
    except ValueError:
        raise InputError(
            f"must be an ISO 8601 date or time (2026-05-01T12:00Z), got {as_of!r:.40}", field=field
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def created(info: SnapshotInfo) -> datetime:
    return moment(info.created_at, "created_at")


def pinned_snapshots(
    store: CatalogStore, snapshot: int | str | Sequence[int | str] | None, as_of: str | datetime | None
) -> tuple[list[SnapshotInfo], datetime] | None:
    """The snapshots named by id, or every provider's snapshot current at ``as_of``, and the moment their prices'
    ages are judged at; None when neither is given (the current catalog). One snapshot per provider."""
    ids = snapshot_ids(snapshot)
    if ids and as_of is not None:
        raise InputError(
            "and as_of cannot both be given: pin snapshots by id or by time", field="snapshot", related=("as_of",)
        )
    if ids:
        infos = store.snapshot_infos(ids)
        missing = sorted(set(ids) - {info.id for info in infos})
        if missing:
            raise InputError(
                f"names no stored snapshot: {', '.join(map(str, missing))}; {LIBRARY_CALLS['status']} shows the "
                "current ones' ids",
                field="snapshot",
            )
        providers = [info.provider for info in infos]
        twice = sorted({p for p in providers if providers.count(p) > 1})
        if twice:
            raise InputError(f"names two snapshots of {twice[0]}: give one per provider", field="snapshot")
        return infos, max(created(info) for info in infos)
    if as_of is None:
        return None
    when = moment(as_of)
    latest: dict[str, SnapshotInfo] = {}
    for info in store.snapshots():  # oldest first: the last one written by then wins
        if created(info) <= when:
            latest[info.provider] = info
    if not latest:
        raise InputError(f"is before the first stored snapshot ({when.isoformat()})", field="as_of")
    return sorted(latest.values(), key=lambda info: info.id), when


def sources(snapshots: Sequence[SnapshotInfo]) -> list[dict[str, Any]]:
    """Each snapshot as a report names it: provider, snapshot id, as_of, kind (bundled or live) and source."""
    return [
        {"provider": s.provider, "snapshot_id": s.id, "as_of": s.as_of, "kind": s.kind, "source": s.source}
        for s in snapshots
    ]
