"""Where the catalog store keeps its tables: SQLite (the embedded default) or PostgreSQL (a team's server).

Each back end gives the store the same few things: run a statement, run one statement over many rows, a write
transaction that admits one writer of the store at a time, and its table definitions. The store's SQL is written
once, with ``?`` placeholders; the PostgreSQL back end turns them into psycopg's ``%s`` (no statement holds a ``%``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from planner.catalog.commitments import COMMITMENT_COLUMNS, COMMITMENT_KINDS_STORED
from planner.catalog.schema import COLUMNS
from planner.errors import CatalogError, install_command

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Cursor(Protocol):
    """What the store reads from a statement: sqlite3's and psycopg's cursors both have it."""

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def commitments_ddl(real: str) -> tuple[str, ...]:
    """The commitment prices' table (planner.catalog.commitments), keyed by snapshot as the offerings are: schema 4
    added it, so the migration to 4 runs these too."""
    kinds = {"text": "TEXT", "real": real, "integer": "INTEGER"}
    columns = ", ".join(
        f"{name} {kinds[COMMITMENT_KINDS_STORED.get(name, 'text')]} NOT NULL" for name in COMMITMENT_COLUMNS
    )
    return (
        f"CREATE TABLE IF NOT EXISTS commitments (snapshot_id INTEGER NOT NULL REFERENCES snapshots(id), {columns})",
        "CREATE INDEX IF NOT EXISTS commitments_by_snapshot ON commitments (snapshot_id)",
    )


def ddl(*, id_column: str, real: str) -> str:
    """The store's tables; the two dialects differ only in the snapshot id and the float type (REAL is 4 bytes in
    PostgreSQL)."""
    kinds = {"text": "TEXT", "real": real, "integer": "INTEGER"}
    columns = ", ".join(f"{c.name} {kinds[c.kind]}{'' if c.nullable else ' NOT NULL'}" for c in COLUMNS)
    return f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (
    {id_column},
    provider TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('bundled', 'live')),
    source TEXT NOT NULL,
    as_of TEXT NOT NULL,
    created_at TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    rejected_count INTEGER NOT NULL,
    schema_version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS offerings (snapshot_id INTEGER NOT NULL REFERENCES snapshots(id), {columns});
CREATE INDEX IF NOT EXISTS offerings_by_snapshot ON offerings (snapshot_id);
CREATE INDEX IF NOT EXISTS offerings_by_key ON offerings (instance_type, region);
CREATE TABLE IF NOT EXISTS current (provider TEXT PRIMARY KEY, snapshot_id INTEGER NOT NULL REFERENCES snapshots(id));
""" + "".join(f"{statement};\n" for statement in commitments_ddl(real))


class SqliteBackend:
    """One SQLite file in WAL mode; writers are serialised by ``BEGIN IMMEDIATE``."""

    real_type = "REAL"

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.location = str(path)
        self.cache_key = str(path.resolve())
        # A store on a read-only mount (a shared team catalog, a container image) is opened for reading only.
        self.read_only = read_only or (path.is_file() and not _writable(path))
        if self.read_only:
            self.db = _connect_read_only(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self.db.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT and return the id it gave its row."""
        return int(self.db.execute(sql, params).lastrowid or 0)

    def table_exists(self, name: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
            is not None
        )

    def create_tables(self) -> None:
        # executescript commits on its own; every statement is idempotent, so two first uses may race.
        self.db.executescript(ddl(id_column="id INTEGER PRIMARY KEY AUTOINCREMENT", real=self.real_type))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception (the connection is in autocommit)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk): keep that error
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


class PostgresBackend:
    """A PostgreSQL database (its connection's ``search_path`` schema); writers are serialised by a transaction-level
    advisory lock on that schema, taken first in every write transaction, so a refresh re-reads what the one before
    it committed (as ``BEGIN IMMEDIATE`` does in SQLite). Each statement reads one committed state (READ COMMITTED),
    so a reader never sees half a refresh."""

    read_only = False
    real_type = "DOUBLE PRECISION"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise CatalogError(f"a PostgreSQL catalog store needs psycopg: {install_command('postgres')}") from None
        self.location = redacted(url)
        self.cache_key = url
        self.db = _idle_connection(url) or psycopg.connect(url, autocommit=True, connect_timeout=10)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self.db.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.db.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), rows)

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        row = self.execute(sql + " RETURNING id", params).fetchone()
        return int(row[0])

    def table_exists(self, name: str) -> bool:
        return self.execute("SELECT to_regclass(?)", (name,)).fetchone()[0] is not None

    def create_tables(self) -> None:
        # Under the writers' lock: two first uses creating the same table at once can otherwise collide.
        with self.transaction():
            for statement in ddl(
                id_column="id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", real=self.real_type
            ).split(";"):
                if statement.strip():
                    self.execute(statement)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self.db.transaction():
            self.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema()))")
            yield

    def close(self) -> None:
        """Keep the connection for the next store this process opens on the URL (a warm query then skips the
        handshake, which costs more than the query), unless it is mid-transaction or enough are kept."""
        import psycopg

        idle = _IDLE.setdefault(self.cache_key, [])
        if (
            not self.db.closed
            and self.db.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            and len(idle) < _IDLE_KEPT
        ):
            idle.append((os.getpid(), self.db))
        else:
            self.db.close()


# Connections closed by their store, per URL, with the process that opened them (a forked child opens its own).
_IDLE: dict[str, list[tuple[int, Any]]] = {}
_IDLE_KEPT = 2


def _idle_connection(url: str) -> Any:
    """A kept connection to ``url`` that still answers, or None."""
    idle = _IDLE.get(url, [])
    while idle:
        pid, db = idle.pop()
        if pid != os.getpid():
            continue
        try:
            db.execute("SELECT 1")  # a server restart leaves the connection open on this side only
            return db
        except Exception:
            db.close()
    return None


@atexit.register
def _close_idle() -> None:
    for idle in _IDLE.values():
        for pid, db in idle:
            if pid == os.getpid():
                db.close()
    _IDLE.clear()


Backend = SqliteBackend | PostgresBackend


def database_errors(location: Path | str) -> tuple[type[Exception], ...]:
    """The exceptions the back end of ``location`` raises for a database it cannot use."""
    if isinstance(location, str) and location.startswith(POSTGRES_SCHEMES):
        with contextlib.suppress(ImportError):  # without psycopg, opening says which extra to install
            import psycopg

            return (psycopg.Error,)
    return (sqlite3.DatabaseError,)


def open_backend(location: Path | str) -> Backend:
    """The back end a location names: a ``postgresql://`` URL, else a SQLite file path."""
    if isinstance(location, str) and location.startswith(POSTGRES_SCHEMES):
        return PostgresBackend(location)
    return SqliteBackend(Path(location))


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


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
