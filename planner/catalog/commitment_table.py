"""The store's ``commitments`` table: commitment prices (planner.catalog.commitments) kept by snapshot id, as the
offerings are, read and written through a back end (planner.catalog.backends) inside the store's transactions."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from planner._data import data_dir
from planner.catalog.backends import Backend
from planner.catalog.commitments import (
    COMMITMENT_COLUMNS,
    COMMITMENT_KEY,
    Commitment,
    bundled_rows,
    manifest_entry,
    read_csv,
    validate_commitments,
)
from planner.catalog.validate import Rejected

# Where gpu-planner before schema 4 kept live commitment prices: one CSV per provider beside the SQLite file.
LEGACY_FOLDER = "commitments"


def insert(db: Backend, snapshot_id: int, rows: Sequence[Commitment]) -> None:
    placeholders = ", ".join("?" for _ in range(len(COMMITMENT_COLUMNS) + 1))
    db.executemany(
        f"INSERT INTO commitments (snapshot_id, {', '.join(COMMITMENT_COLUMNS)}) VALUES ({placeholders})",
        ([snapshot_id, *(cast(Mapping[str, Any], row)[name] for name in COMMITMENT_COLUMNS)] for row in rows),
    )


def stored(db: Backend, where: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Stored rows (``COMMITMENT_COLUMNS`` order) of current snapshots (``c``) or of any (``m.snapshot_id``), in key
    order."""
    order = ", ".join("m." + name for name in COMMITMENT_KEY)
    return list(
        db.execute(
            f"SELECT {', '.join('m.' + n for n in COMMITMENT_COLUMNS)} FROM commitments m"
            f" LEFT JOIN current c ON c.snapshot_id = m.snapshot_id WHERE {where} ORDER BY {order}",
            params,
        ).fetchall()
    )


def for_new_snapshot(
    db: Backend, provider: str, fresh: list[Commitment] | None, renewed: Collection[str] | None
) -> list[Commitment]:
    """The commitment prices a new snapshot of ``provider`` holds (call inside a transaction): ``fresh`` as they are
    for a whole catalog (``renewed`` None); else the current ones outside ``renewed`` and ``fresh``, or all the
    current ones when ``fresh`` is None or empty (a feed that failed never erases the prices before it)."""
    if fresh is not None and renewed is None:
        return fresh
    previous = [
        cast(Commitment, dict(zip(COMMITMENT_COLUMNS, row, strict=True)))  # stored rows were validated
        for row in stored(db, "c.provider = ?", [provider])
    ]
    if not fresh:
        return previous
    regions = set(renewed or ())
    return validate_commitments([*(row for row in previous if row["region"] not in regions), *fresh]).accepted


def split(provider: str, rows: Iterable[Mapping[str, Any]] | None) -> tuple[list[Commitment] | None, list[Rejected]]:
    """The commitment prices a snapshot of ``provider`` keeps and those it turns away (invalid, or another
    provider's); None when none were given."""
    if rows is None:
        return None, []
    report = validate_commitments(rows)
    theirs = [row for row in report.accepted if row["provider"] != provider]
    rejected = report.rejected + [
        Rejected(
            row["provider"],
            row["instance_type"],
            row["region"],
            "",
            f"commitment of {row['provider']!r} in a {provider} snapshot",
        )
        for row in theirs
    ]
    return [row for row in report.accepted if row["provider"] == provider], rejected


def served_before(store_path: Path | None, provider: str) -> list[Commitment]:
    """The commitment prices a store of schema 3 served for ``provider``: the live file a refresh wrote beside a
    SQLite store (``commitments/<provider>.csv``), else the bundled rows."""
    legacy = None if store_path is None else store_path.parent / LEGACY_FOLDER / f"{provider}.csv"
    live = validate_commitments(read_csv(legacy)).accepted if legacy is not None and legacy.is_file() else []
    return [row for row in live if row["provider"] == provider] or bundled_rows(provider)


def bundled_source() -> str:
    """The bundled commitment prices' source in the manifest (it changes with them), empty without them."""
    manifest = data_dir() / "catalog" / "manifest.json"
    return str(manifest_entry().get("source", "")) if manifest.is_file() else ""
