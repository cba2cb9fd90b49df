"""The catalog store: SQLite (WAL) holding every refresh as a snapshot, and which snapshot is current.

A refresh writes its snapshot and switches ``current`` for its provider in one transaction, so a reader
never sees a half-written catalog and a failed or killed refresh leaves the previous snapshot current.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sqlite3
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from planner._data import data_dir
from planner.catalog.schema import COLUMN_NAMES, COLUMNS, PROVIDERS, SCHEMA_VERSION, Offer
from planner.catalog.validate import Rejected, ValidationReport, validate_rows
from planner.errors import CatalogError

if TYPE_CHECKING:
    import pandas as pd

STORE_ENV = "GPUPLAN_HOME"
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
class WriteResult:
    """What a snapshot write stored and what it turned away."""

    snapshot: SnapshotInfo
    rejected: list[Rejected]


_SNAPSHOT_FIELDS = "id, provider, kind, source, as_of, created_at, row_count, rejected_count"

_DDL = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    provider TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('bundled', 'live')),
    source TEXT NOT NULL,
    as_of TEXT NOT NULL,
    created_at TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    rejected_count INTEGER NOT NULL,
    schema_version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS offerings (
    snapshot_id INTEGER NOT NULL REFERENCES snapshots(id),
    {", ".join(f"{c.name} {_SQL_KIND[c.kind]}{'' if c.nullable else ' NOT NULL'}" for c in COLUMNS)}
);
CREATE INDEX IF NOT EXISTS offerings_by_snapshot ON offerings (snapshot_id);
CREATE INDEX IF NOT EXISTS offerings_by_key ON offerings (instance_type, region);
CREATE TABLE IF NOT EXISTS current (
    provider TEXT PRIMARY KEY,
    snapshot_id INTEGER NOT NULL REFERENCES snapshots(id)
);
"""


class CatalogStore:
    """Snapshots of offerings per provider, with history. Opening it seeds it from the bundled snapshot."""

    def __init__(self, path: Path | str | None = None, *, seed: bool = True) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        # A store on a read-only mount (a shared team catalog, a container image) is opened for reading only.
        self.read_only = self.path.is_file() and not _writable(self.path)
        self.write_error: str | None = None  # why a writable store could not be written when opened (a full disk)
        try:
            if self.read_only:
                self._db = _connect_read_only(self.path)
                self._ensure_schema()
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._ensure_schema()
            if seed:
                self.seed_bundled()
        except sqlite3.DatabaseError as exc:
            if self.path.is_file() and not _damaged(exc):
                # A full disk or a failed write (seeding, migrating, the WAL files) leaves the store intact: read it
                # as it is and write nothing, so read commands still work.
                self._reopen_read_only(f"{exc}")
                return
            advice = "delete it to start again from the bundled catalog, or " if _damaged(exc) else ""
            raise CatalogError(
                f"cannot use the catalog store at {self.path}: {exc} ({advice}set {STORE_ENV} to another folder)"
            ) from None
        except OSError as exc:
            raise CatalogError(
                f"cannot create the catalog store at {self.path}: {exc.strerror or exc} "
                f"(set {STORE_ENV} to a writable folder)"
            ) from None

    def _reopen_read_only(self, reason: str) -> None:
        """Fall back to reading the intact store when it cannot be written; refreshes then say why."""
        with contextlib.suppress(AttributeError, sqlite3.Error):
            self._db.close()
        try:
            self._db = _connect_read_only(self.path)
            self.read_only = True
            self.write_error = reason
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            raise CatalogError(
                f"cannot read the catalog store at {self.path}: {exc} (set {STORE_ENV} to another folder)"
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
        with contextlib.suppress(sqlite3.OperationalError):  # a new store: no meta table yet
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None:
            version = int(row[0])
            if version > SCHEMA_VERSION:
                raise CatalogError(
                    f"the catalog store at {self.path} has schema version {version}, "
                    f"newer than this gpu-planner ({SCHEMA_VERSION}); upgrade gpu-planner or set {STORE_ENV}"
                )
            if version < SCHEMA_VERSION:
                self._migrate()
            return
        if self.read_only:
            raise CatalogError(f"the read-only file {self.path} is not a gpu-planner catalog store")
        # executescript commits on its own; every statement is idempotent, so two first uses may race.
        self._db.executescript(_DDL)
        self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _migrate(self) -> None:
        """Apply every migration above the store's version in one transaction (another process may race us)."""
        with self._transaction():
            version = int(self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target]:
                    self._db.execute(statement)
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

    def _require_writable(self) -> None:
        if self.write_error:
            raise CatalogError(
                f"the catalog store at {self.path} cannot be written now ({self.write_error}); it can be read but "
                f"not refreshed (free disk space, or set {STORE_ENV} to another folder)"
            )
        if self.read_only:
            raise CatalogError(
                f"the catalog store at {self.path} is read-only; it can be read but not refreshed "
                f"(set {STORE_ENV} to a writable folder to refresh)"
            )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def seed_bundled(self) -> list[WriteResult]:
        """Load the bundled snapshot for every provider that has no current snapshot or an older bundled one.

        A live snapshot is never replaced by the bundled one.
        """
        manifest_path = data_dir() / "catalog" / "manifest.json"
        if not manifest_path.is_file() or self.read_only:
            return []
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        results = []
        current = {info.provider: info for info in self.current_snapshots()}
        for provider, entry in manifest["providers"].items():
            info = current.get(provider)
            if info is not None and (info.kind == "live" or info.source == entry["source"]):
                continue
            rows = _read_bundled_rows(data_dir() / "catalog" / entry["file"])
            result = self.write_snapshot(
                provider, rows, source=entry["source"], as_of=entry["as_of"], kind="bundled", only_if_stale=True
            )
            if result is not None:
                results.append(result)
        return results

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
    ) -> WriteResult | None:
        """Validate ``rows`` and store them as the provider's new current snapshot, atomically.

        ``rows`` may be a ValidationReport from ``validate_rows`` (the refresh validates once, before deciding what
        to carry over); its accepted rows are stored as they are.

        Rows of another provider are rejected. If no row survives validation, nothing changes and a
        ``CatalogError`` says why: an empty refresh never replaces a good catalog.

        ``merge_regions``: the regions this write renews. Their rows come from ``rows``; every other region's
        rows are the provider's current snapshot *as it is inside the write transaction* (flagged
        ``carried_over``), whatever ``rows`` holds for them. Writers of one store are serialised (``BEGIN
        IMMEDIATE``), so two refreshes of one provider for different regions both keep their update instead
        of the later one writing back the earlier one's stale copy.
        """
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
        created_at = datetime.now(UTC).isoformat(timespec="seconds")
        placeholders = ", ".join("?" for _ in range(len(COLUMN_NAMES) + 1))
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
            cursor = self._db.execute(
                "INSERT INTO snapshots (provider, kind, source, as_of, created_at, row_count, rejected_count,"
                " schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (provider, kind, source, as_of, created_at, len(accepted), len(rejected), SCHEMA_VERSION),
            )
            snapshot_id = int(cursor.lastrowid or 0)
            self._db.executemany(
                f"INSERT INTO offerings (snapshot_id, {', '.join(COLUMN_NAMES)}) VALUES ({placeholders})",
                ([snapshot_id, *(cast(Mapping[str, Any], row)[name] for name in COLUMN_NAMES)] for row in accepted),
            )
            self._db.execute(
                "INSERT INTO current (provider, snapshot_id) VALUES (?, ?)"
                " ON CONFLICT(provider) DO UPDATE SET snapshot_id = excluded.snapshot_id",
                (provider, snapshot_id),
            )
        info = SnapshotInfo(snapshot_id, provider, kind, source, as_of, created_at, len(accepted), len(rejected))
        return WriteResult(snapshot=info, rejected=rejected)

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

    def read_current(self) -> pd.DataFrame:
        """All current offerings of every provider as a DataFrame with the schema's columns."""
        import pandas as pd

        rows = self._db.execute(
            f"SELECT {', '.join('o.' + n for n in COLUMN_NAMES)} FROM current c"
            " JOIN offerings o ON o.snapshot_id = c.snapshot_id"
        ).fetchall()
        return _typed_frame(pd.DataFrame.from_records(rows, columns=list(COLUMN_NAMES)))

    def history(self, instance_type: str, region: str, provider: str | None = None) -> pd.DataFrame:
        """The price of one offering across every snapshot, oldest first (one row per snapshot and zone); the names
        are matched in any case."""
        import pandas as pd

        query = (
            "SELECT s.id AS snapshot_id, s.kind AS snapshot_kind, s.created_at, o.provider, o.instance_type,"
            " o.region, o.zone, o.gpu, o.gpu_count, o.price_usd_per_hour, o.spot_price_usd_per_hour, o.as_of"
            " FROM offerings o JOIN snapshots s ON s.id = o.snapshot_id"
            # Any case, as GPU names are read: "P5.48XLARGE", "US-EAST-1".
            " WHERE o.instance_type = ? COLLATE NOCASE AND o.region = ? COLLATE NOCASE"
        )
        params: list[str] = [instance_type, region]
        if provider is not None:
            query += " AND o.provider = ?"
            params.append(provider)
        cursor = self._db.execute(query + " ORDER BY s.id, o.zone", params)
        columns = [d[0] for d in cursor.description]
        return pd.DataFrame.from_records(cursor.fetchall(), columns=columns)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception (the connection is in autocommit)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk): keep that error
            self._db.execute("ROLLBACK")


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite found the file damaged or not a database (then, and only then, deleting it is the advice)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or (
        code is None and not isinstance(exc, sqlite3.OperationalError)
    )


def _writable(path: Path) -> bool:
    """Whether SQLite can write the store: the file, and its folder for the WAL and shared-memory files.

    ``os.access`` answers EROFS for a read-only mount even to root, for whom permission bits do not count.
    """
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection; ``immutable`` when SQLite cannot even create the WAL index beside the file."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, isolation_level=None)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # SQLite opens lazily: fail here, not later
        return db
    except sqlite3.OperationalError:
        pass
    # Nothing writes a read-only mount, so telling SQLite the file cannot change is true, and needs no lock.
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


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
