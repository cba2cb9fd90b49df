"""The catalog store: every refresh kept as a snapshot, and which snapshot is current; in a SQLite file (WAL, the
default) or a PostgreSQL database (``GPUPLAN_DATABASE_URL``), the differences kept in backends.py.

A refresh writes its snapshot and switches ``current`` for its provider in one transaction, so a reader
never sees a half-written catalog and a failed or killed refresh leaves the previous snapshot current. A snapshot
holds its provider's offerings and commitment prices (planner.catalog.commitments) alike.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sqlite3
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from planner._data import data_dir
from planner.catalog import commitment_table
from planner.catalog.backends import (
    POSTGRES_SCHEMES,
    Backend,
    SqliteBackend,
    commitments_ddl,
    database_errors,
    open_backend,
    redacted,
)
from planner.catalog.commitments import Commitment, bundled_rows, commitments_frame
from planner.catalog.schema import COLUMN_NAMES, COLUMNS, PROVIDERS, SCHEMA_VERSION, Offer
from planner.catalog.validate import Rejected, ValidationReport, validate_rows
from planner.errors import CatalogError

if TYPE_CHECKING:
    import pandas as pd

STORE_ENV = "GPUPLAN_HOME"
DATABASE_URL_ENV = "GPUPLAN_DATABASE_URL"
STORE_FILE = "catalog.sqlite"
_SQL_KIND = {"text": "TEXT", "real": "REAL", "integer": "INTEGER"}
# Statements that bring a store of the previous schema version up to the key's version, in place.
# Version 2: capacity columns; offerings stored before them read as available_now 'unknown'.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: (
        "ALTER TABLE offerings ADD COLUMN available_now TEXT NOT NULL DEFAULT 'unknown'",
        "ALTER TABLE offerings ADD COLUMN available_checked_at TEXT",
    ),
    # Version 3: the spot price's own date; offerings stored before it read as missing (spot price of as_of).
    3: ("ALTER TABLE offerings ADD COLUMN spot_as_of TEXT",),
    # Version 4: the commitments table, in the back end's dialect (backends.commitments_ddl), filled with the prices
    # a store of version 3 served by _keep_commitments.
    4: (),
}


def default_store_path() -> Path:
    """``$GPUPLAN_HOME/catalog.sqlite``, else the per-user data directory of the platform."""
    override = os.environ.get(STORE_ENV)
    if override:
        return Path(override).expanduser() / STORE_FILE
    from platformdirs import user_data_dir

    return Path(user_data_dir("gpu-planner", appauthor=False)) / STORE_FILE


@dataclass(frozen=True)
class SnapshotInfo:
    """One refresh of one provider."""

    id: int
    provider: str
    kind: str  # "bundled" or "live"
    source: str
    as_of: str
    created_at: str
    row_count: int
    rejected_count: int

    def age_hours(self, now: datetime | None = None) -> float:
        """Hours between the prices' ``as_of`` and now."""
        taken = datetime.fromisoformat(self.as_of)
        if taken.tzinfo is None:
            taken = taken.replace(tzinfo=UTC)
        return ((now or datetime.now(UTC)) - taken).total_seconds() / 3600


@dataclass(frozen=True)
class NewSnapshot:
    """The rows of one provider to store as its next snapshot, and where they came from."""

    provider: str
    rows: Iterable[Mapping[str, Any]] | ValidationReport
    source: str
    as_of: str
    kind: str = "live"
    # Its commitment prices; None keeps the provider's current ones.
    commitments: Iterable[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class WriteResult:
    """What a snapshot write stored and what it turned away."""

    snapshot: SnapshotInfo
    rejected: list[Rejected]  # the offerings' and then the commitment prices'
    commitments: int = 0  # the fresh commitment prices stored (those carried over from before not counted)


# The typed current frame of the last few stores this process read, by store, with the change mark it was read at.
_FRAMES: dict[str, tuple[tuple[Any, ...], pd.DataFrame]] = {}
_FRAMES_KEPT = 4

# The meta key, per provider, naming the bundled commitment prices its bundled snapshot was seeded with.
_SEEDED_COMMITMENTS = "seeded_commitments:"

_SNAPSHOT_FIELDS = "id, provider, kind, source, as_of, created_at, row_count, rejected_count"


class CatalogStore:
    """Snapshots of offerings per provider, with history. Opening it seeds it from the bundled snapshot.

    ``location``: a SQLite file, or a ``postgresql://`` URL; by default ``$GPUPLAN_DATABASE_URL``, else the per-user
    SQLite file (``default_store_path``).
    """

    def __init__(self, location: Path | str | None = None, *, seed: bool = True) -> None:
        if location is None:
            location = os.environ.get(DATABASE_URL_ENV) or default_store_path()
        postgres = isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)
        self.path: Path | None = None if postgres else Path(location)
        self.location = redacted(str(location)) if postgres else str(location)
        errors = database_errors(location)
        self.write_error: str | None = None  # why a writable store could not be written when opened (a full disk)
        try:
            self._db: Backend = open_backend(location)
            self.read_only = self._db.read_only
            try:
                self._ensure_schema()
                if seed and not self.read_only:
                    self.seed_bundled()
            except BaseException:
                self._db.close()
                raise
        except CatalogError:
            raise
        except sqlite3.DatabaseError as exc:
            store_path = self.path
            if store_path is not None and store_path.is_file() and not _damaged(exc):
                # A full disk or a failed write (seeding, migrating, the WAL files) leaves the store intact: read it
                # as it is and write nothing, so read commands still work.
                self._reopen_read_only(store_path, str(exc))
                return
            advice = "delete it to start again from the bundled catalog, or " if _damaged(exc) else ""
            raise CatalogError(
                f"cannot use the catalog store at {self.location}: {exc} ({advice}set {STORE_ENV} to another folder)"
            ) from None
        except OSError as exc:
            raise CatalogError(
                f"cannot create the catalog store at {self.location}: {exc.strerror or exc} "
                f"(set {STORE_ENV} to a writable folder)"
            ) from None
        except Exception as exc:
            if not isinstance(exc, errors):
                raise
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = (
                f"check {DATABASE_URL_ENV} and that the server is up"
                if postgres
                else f"delete it to start again from the bundled catalog, or set {STORE_ENV} to another folder"
            )
            raise CatalogError(f"cannot use the catalog store at {self.location}: {reason} ({hint})") from None

    def _reopen_read_only(self, path: Path, reason: str) -> None:
        """Fall back to reading the intact store when it cannot be written; refreshes then say why."""
        try:
            self._db = SqliteBackend(path, read_only=True)
            self.read_only = True
            self.write_error = reason
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            raise CatalogError(
                f"cannot read the catalog store at {path}: {exc} (set {STORE_ENV} to another folder)"
            ) from None

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def __enter__(self) -> CatalogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema and seeding ---------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        row = None
        if self._db.table_exists("meta"):
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None:
            version = int(row[0])
            if version > SCHEMA_VERSION:
                raise CatalogError(
                    f"the catalog store at {self.location} has schema version {version}, "
                    f"newer than this gpu-planner ({SCHEMA_VERSION}); upgrade gpu-planner or set {STORE_ENV}"
                )
            if version < SCHEMA_VERSION:
                self._migrate()
            return
        if self.read_only:
            raise CatalogError(f"the read-only file {self.location} is not a gpu-planner catalog store")
        self._db.create_tables()
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING",
            (str(SCHEMA_VERSION),),
        )

    def _migrate(self) -> None:
        """Apply every migration above the store's version in one transaction (another process may race us)."""
        self._require_writable()
        with self._transaction():
            version = int(self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target]:
                    self._db.execute(statement)
                if target == 4:
                    for statement in commitments_ddl(self._db.real_type):
                        self._db.execute(statement)
                    self._keep_commitments()
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

    def _keep_commitments(self) -> None:
        """Schema 4: each provider's current snapshot takes the commitment prices the store served before it, the live
        file a refresh wrote beside a SQLite store (``commitments/<provider>.csv``) or else the bundled rows (call
        inside the migration's transaction). The files are left where they are, for an older gpu-planner."""
        source = commitment_table.bundled_source()
        current = self._db.execute(
            "SELECT c.provider, c.snapshot_id, s.kind FROM current c JOIN snapshots s ON s.id = c.snapshot_id"
        ).fetchall()
        for provider, snapshot_id, kind in current:
            commitment_table.insert(self._db, int(snapshot_id), commitment_table.served_before(self.path, provider))
            if kind == "bundled":
                self._set_meta(_SEEDED_COMMITMENTS + provider, source)

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _require_writable(self) -> None:
        if self.write_error:
            raise CatalogError(
                f"the catalog store at {self.location} cannot be written now ({self.write_error}); it can be read "
                f"but not refreshed (free disk space, or set {STORE_ENV} to another folder)"
            )
        if self.read_only:
            raise CatalogError(
                f"the catalog store at {self.location} is read-only; it can be read but not refreshed "
                f"(set {STORE_ENV} to a writable folder to refresh)"
            )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One writer at a time; every write also renews the change mark that readers' cached frames are keyed on."""
        with self._db.transaction():
            yield
            self._set_meta("changed", uuid.uuid4().hex)

    def seed_bundled(self) -> list[WriteResult]:
        """Load the bundled snapshot, with its bundled commitment prices, for every provider that has no current
        snapshot or an older bundled one (older offerings or older commitment prices).

        A live snapshot is never replaced by the bundled one.
        """
        manifest_path = data_dir() / "catalog" / "manifest.json"
        if not manifest_path.is_file() or self.read_only:
            return []
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        commitments_source = commitment_table.bundled_source()
        results = []
        current = {info.provider: info for info in self.current_snapshots()}
        commitments: list[Commitment] | None = None
        for provider, entry in manifest["providers"].items():
            info = current.get(provider)
            if info is not None and self._seeded(provider, info.kind, info.source, entry["source"], commitments_source):
                continue
            rows = _read_bundled_rows(data_dir() / "catalog" / entry["file"])
            commitments = bundled_rows() if commitments is None else commitments
            accepted, rejected = _split(provider, rows, None)
            self._require_writable()
            with self._transaction():
                existing = self._db.execute(
                    "SELECT s.kind, s.source FROM current c JOIN snapshots s ON s.id = c.snapshot_id"
                    " WHERE c.provider = ?",
                    (provider,),
                ).fetchone()
                if existing is not None and self._seeded(
                    provider, existing[0], existing[1], entry["source"], commitments_source
                ):
                    continue  # another process seeded it first
                own = [row for row in commitments if row["provider"] == provider]
                snapshot = self._insert(
                    provider,
                    accepted,
                    len(rejected),
                    kind="bundled",
                    source=entry["source"],
                    as_of=entry["as_of"],
                    commitments=own,
                )
                self._set_meta(_SEEDED_COMMITMENTS + provider, commitments_source)
            results.append(WriteResult(snapshot, rejected, len(own)))
        return results

    def _seeded(self, provider: str, kind: str, source: str, bundled_source: str, commitments_source: str) -> bool:
        """Whether a current snapshot of ``kind`` and ``source`` needs no seeding: a live one, or the bundled one of
        this bundle with this bundle's commitment prices."""
        if kind == "live":
            return True
        return source == bundled_source and self._meta(_SEEDED_COMMITMENTS + provider) == commitments_source

    # -- writing --------------------------------------------------------------------------------
    def write_snapshot(
        self,
        provider: str,
        rows: Iterable[Mapping[str, Any]] | ValidationReport,
        *,
        source: str,
        as_of: str,
        kind: str = "live",
        only_if_stale: bool = False,
        merge_regions: Collection[str] | None = None,
        commitments: Iterable[Mapping[str, Any]] | None = None,
    ) -> WriteResult | None:
        """Validate ``rows`` and store them as the provider's new current snapshot, atomically.

        ``rows`` may be a ValidationReport from ``validate_rows`` (the refresh validates once, before deciding what
        to carry over); its accepted rows are stored as they are.

        Rows of another provider are rejected. If no row survives validation, nothing changes and a
        ``CatalogError`` says why: an empty refresh never replaces a good catalog.

        ``merge_regions``: the regions this write renews. Their rows come from ``rows``; every other region's
        rows are the provider's current snapshot *as it is inside the write transaction* (flagged
        ``carried_over``), whatever ``rows`` holds for them. Writers of one store are serialised (``BEGIN
        IMMEDIATE`` in SQLite, an advisory lock in PostgreSQL), so two refreshes of one provider for different
        regions both keep their update instead of the later one writing back the earlier one's stale copy.

        ``commitments``: the snapshot's commitment prices, validated here (a bad row is rejected, the others kept).
        None keeps the provider's current ones. With ``merge_regions`` the regions not renewed keep theirs, and a
        write without one valid commitment price keeps them all: a feed that failed never erases the prices before it.
        """
        accepted, rejected = _split(provider, rows, merge_regions)
        fresh, bad = commitment_table.split(provider, commitments)
        self._require_writable()
        with self._transaction():
            if merge_regions is not None:
                # Re-read inside the lock: another writer may have renewed other regions since the caller read.
                accepted = accepted + self._carried_rows(provider, set(merge_regions))
            if only_if_stale:
                existing = self._db.execute(
                    "SELECT s.kind, s.source FROM current c JOIN snapshots s ON s.id = c.snapshot_id"
                    " WHERE c.provider = ?",
                    (provider,),
                ).fetchone()
                if existing is not None and (existing[0] == "live" or existing[1] == source):
                    return None  # another process seeded it first
            kept = commitment_table.for_new_snapshot(self._db, provider, fresh, merge_regions)
            info = self._insert(
                provider, accepted, len(rejected), kind=kind, source=source, as_of=as_of, commitments=kept
            )
        return WriteResult(snapshot=info, rejected=rejected + bad, commitments=len(fresh or []))

    def write_snapshots(self, snapshots: Sequence[NewSnapshot]) -> list[WriteResult]:
        """Validate every snapshot, then make them all current in one transaction: all or none (a pulled catalog of
        several providers is never half swapped in). A provider without one valid row is a ``CatalogError``."""
        split = [_split(new.provider, new.rows, None) for new in snapshots]
        prices = [commitment_table.split(new.provider, new.commitments) for new in snapshots]
        self._require_writable()
        with self._transaction():
            infos = [
                self._insert(
                    new.provider,
                    accepted,
                    len(rejected),
                    kind=new.kind,
                    source=new.source,
                    as_of=new.as_of,
                    commitments=commitment_table.for_new_snapshot(self._db, new.provider, fresh, None),
                )
                for new, (accepted, rejected), (fresh, _) in zip(snapshots, split, prices, strict=True)
            ]
        return [
            WriteResult(info, rejected + bad, len(fresh or []))
            for info, (_, rejected), (fresh, bad) in zip(infos, split, prices, strict=True)
        ]

    def _insert(
        self,
        provider: str,
        accepted: list[Offer],
        rejected_count: int,
        *,
        kind: str,
        source: str,
        as_of: str,
        commitments: Sequence[Commitment] = (),
    ) -> SnapshotInfo:
        """Store ``accepted`` as a new snapshot and make it the provider's current one (call inside a transaction)."""
        created_at = datetime.now(UTC).isoformat(timespec="seconds")
        snapshot_id = self._db.insert_id(
            "INSERT INTO snapshots (provider, kind, source, as_of, created_at, row_count, rejected_count,"
            " schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (provider, kind, source, as_of, created_at, len(accepted), rejected_count, SCHEMA_VERSION),
        )
        placeholders = ", ".join("?" for _ in range(len(COLUMN_NAMES) + 1))
        self._db.executemany(
            f"INSERT INTO offerings (snapshot_id, {', '.join(COLUMN_NAMES)}) VALUES ({placeholders})",
            ([snapshot_id, *(cast(Mapping[str, Any], row)[name] for name in COLUMN_NAMES)] for row in accepted),
        )
        commitment_table.insert(self._db, snapshot_id, commitments)
        self._db.execute(
            "INSERT INTO current (provider, snapshot_id) VALUES (?, ?)"
            " ON CONFLICT(provider) DO UPDATE SET snapshot_id = excluded.snapshot_id",
            (provider, snapshot_id),
        )
        return SnapshotInfo(snapshot_id, provider, kind, source, as_of, created_at, len(accepted), rejected_count)

    def _carried_rows(self, provider: str, renewed: set[str]) -> list[Offer]:
        """The provider's current rows outside ``renewed``, flagged carried_over (call inside a transaction)."""
        cursor = self._db.execute(
            f"SELECT {', '.join('o.' + n for n in COLUMN_NAMES)} FROM current c"
            " JOIN offerings o ON o.snapshot_id = c.snapshot_id WHERE c.provider = ?",
            (provider,),
        )
        carried = []
        for values in cursor.fetchall():
            row = dict(zip(COLUMN_NAMES, values, strict=True))
            if row["region"] in renewed:
                continue
            flags = [f for f in str(row.get("flags") or "").split(";") if f]
            if "carried_over" not in flags:
                row["flags"] = ";".join([*flags, "carried_over"])
            carried.append(cast(Offer, row))  # stored rows were validated when written
        return carried

    # -- reading --------------------------------------------------------------------------------
    def current_snapshots(self) -> list[SnapshotInfo]:
        """The current snapshot of every provider that has one, in provider order."""
        rows = self._db.execute(
            f"SELECT {', '.join('s.' + f.strip() for f in _SNAPSHOT_FIELDS.split(','))}"
            " FROM current c JOIN snapshots s ON s.id = c.snapshot_id"
        ).fetchall()
        infos = [SnapshotInfo(*row) for row in rows]
        return sorted(infos, key=lambda i: PROVIDERS.index(i.provider) if i.provider in PROVIDERS else 99)

    def snapshots(self, provider: str | None = None) -> list[SnapshotInfo]:
        """Every snapshot ever written (oldest first), optionally of one provider."""
        query = f"SELECT {_SNAPSHOT_FIELDS} FROM snapshots"
        params: tuple[str, ...] = ()
        if provider is not None:
            query += " WHERE provider = ?"
            params = (provider,)
        return [SnapshotInfo(*row) for row in self._db.execute(query + " ORDER BY id", params).fetchall()]

    def snapshot_rows(self, snapshot_id: int) -> list[tuple[Any, ...]]:
        """The offerings of one snapshot, as stored, in the schema's column order (a snapshot never changes)."""
        return list(
            self._db.execute(
                f"SELECT {', '.join(COLUMN_NAMES)} FROM offerings WHERE snapshot_id = ? ORDER BY instance_type, region,"
                " zone",
                (snapshot_id,),
            ).fetchall()
        )

    def snapshot_commitments(self, snapshot_id: int) -> list[tuple[Any, ...]]:
        """The commitment prices of one snapshot, as stored, in ``COMMITMENT_COLUMNS`` order (key order)."""
        return commitment_table.stored(self._db, "m.snapshot_id = ?", [snapshot_id])

    def read_commitments(self, snapshot_ids: Sequence[int] | None = None) -> pd.DataFrame:
        """The commitment prices of every provider's current snapshot, or of the given snapshots (current or not:
        a report pinned to them reads the same prices after any later refresh), in key order."""
        if snapshot_ids is None:
            return commitments_frame(commitment_table.stored(self._db, "c.provider IS NOT NULL", []))
        ids = sorted({int(i) for i in snapshot_ids})
        marks = ", ".join("?" for _ in ids)
        return commitments_frame(commitment_table.stored(self._db, f"m.snapshot_id IN ({marks})", ids) if ids else [])

    def snapshot_infos(self, snapshot_ids: Sequence[int]) -> list[SnapshotInfo]:
        """The snapshots of ``snapshot_ids`` that exist, in id order (an id no snapshot has is left out)."""
        ids = sorted({int(i) for i in snapshot_ids})
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        query = f"SELECT {_SNAPSHOT_FIELDS} FROM snapshots WHERE id IN ({marks}) ORDER BY id"
        return [SnapshotInfo(*row) for row in self._db.execute(query, ids).fetchall()]

    def read_snapshots(self, snapshot_ids: Sequence[int]) -> pd.DataFrame:
        """The offerings of the given snapshots (current or not) as one DataFrame with the schema's columns, in a
        fixed order: a report pinned to them reads the same rows after any later refresh."""
        import pandas as pd

        ids = sorted({int(i) for i in snapshot_ids})
        rows: list[tuple[Any, ...]] = []
        if ids:
            marks = ", ".join("?" for _ in ids)
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMN_NAMES)} FROM offerings WHERE snapshot_id IN ({marks})"
                " ORDER BY snapshot_id, instance_type, region, zone",
                ids,
            ).fetchall()
        return _typed_frame(pd.DataFrame.from_records(rows, columns=list(COLUMN_NAMES)))

    def change_mark(self) -> tuple[Any, ...]:
        """What changes with every write: the mark each write transaction renews, and the newest snapshot id (which
        a store written by an older gpu-planner, one without the mark, still advances)."""
        row = self._db.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'changed'), (SELECT max(id) FROM snapshots)"
        ).fetchone()
        return (row[0], row[1])

    def read_current(self) -> pd.DataFrame:
        """All current offerings of every provider as a DataFrame with the schema's columns.

        Read once per process and store change: later calls cost one small query and return a view of the cached
        frame that the caller may change freely (a change copies the columns it touches, never the cache).
        """
        import pandas as pd

        # The mark is read before the rows: a write landing in between makes the next call read again, never the
        # reverse (old rows kept under a new mark).
        mark = self.change_mark()
        cached = _FRAMES.pop(self._db.cache_key, None)
        if cached is None or cached[0] != mark:
            rows = self._db.execute(
                f"SELECT {', '.join('o.' + n for n in COLUMN_NAMES)} FROM current c"
                " JOIN offerings o ON o.snapshot_id = c.snapshot_id"
            ).fetchall()
            cached = (mark, _typed_frame(pd.DataFrame.from_records(rows, columns=list(COLUMN_NAMES))))
        _FRAMES[self._db.cache_key] = cached  # most recently used last
        while len(_FRAMES) > _FRAMES_KEPT:
            del _FRAMES[next(iter(_FRAMES))]
        return _view(cached[1])

    def history(self, instance_type: str, region: str, provider: str | None = None) -> pd.DataFrame:
        """The price of one offering across every snapshot, oldest first (one row per snapshot and zone); the names
        are matched in any case."""
        import pandas as pd

        query = (
            "SELECT s.id AS snapshot_id, s.kind AS snapshot_kind, s.created_at, o.provider, o.instance_type,"
            " o.region, o.zone, o.gpu, o.gpu_count, o.price_usd_per_hour, o.spot_price_usd_per_hour, o.as_of"
            " FROM offerings o JOIN snapshots s ON s.id = o.snapshot_id"
            # Any case, as GPU names are read: "P5.48XLARGE", "US-EAST-1".
            " WHERE lower(o.instance_type) = lower(?) AND lower(o.region) = lower(?)"
        )
        params: list[str] = [instance_type, region]
        if provider is not None:
            query += " AND o.provider = ?"
            params.append(provider)
        cursor = self._db.execute(query + " ORDER BY s.id, o.zone", params)
        columns = [d[0] for d in cursor.description]
        return pd.DataFrame.from_records(cursor.fetchall(), columns=columns)


def _split(
    provider: str, rows: Iterable[Mapping[str, Any]] | ValidationReport, merge_regions: Collection[str] | None
) -> tuple[list[Offer], list[Rejected]]:
    """The rows a snapshot of ``provider`` keeps and those it turns away (invalid, or another provider's); none kept
    is a CatalogError, so that an empty refresh never replaces a good catalog."""
    if provider not in PROVIDERS:
        raise CatalogError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    report = rows if isinstance(rows, ValidationReport) else validate_rows(rows)
    accepted = [row for row in report.accepted if row["provider"] == provider]
    rejected = report.rejected + [
        Rejected(
            row["provider"],
            row["instance_type"],
            row["region"],
            row["zone"],
            reason=f"row of provider {row['provider']!r} in a {provider} snapshot",
        )
        for row in report.accepted
        if row["provider"] != provider
    ]
    if merge_regions is not None:
        renewed = set(merge_regions)
        accepted = [row for row in accepted if row["region"] in renewed]
    if not accepted:
        reasons = "; ".join(str(r) for r in rejected[:3]) or "no rows"
        raise CatalogError(f"{provider}: refresh produced no valid offering ({reasons}); kept the previous catalog")
    return accepted, rejected


def _view(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame the caller can change without changing ``frame``: under pandas' copy-on-write (the only mode from
    pandas 3) a shallow copy, which copies a column only when it is written; else a deep copy."""
    import pandas as pd

    copy_on_write = int(pd.__version__.split(".")[0]) >= 3 or bool(pd.options.mode.copy_on_write)
    return frame.copy(deep=not copy_on_write)


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite found the file damaged or not a database (then, and only then, deleting it is the advice)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or (
        code is None and not isinstance(exc, sqlite3.OperationalError)
    )


def _read_bundled_rows(path: Path) -> list[dict[str, str]]:
    """Rows of one bundled provider file (the project's schema plus documentation columns)."""
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _typed_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Give every column its schema dtype (float for reals, so missing prices are NaN)."""
    for column in COLUMNS:
        if column.kind == "real":
            frame[column.name] = frame[column.name].astype("float64")
        elif column.kind == "integer":
            frame[column.name] = frame[column.name].astype("int64")
    return frame
