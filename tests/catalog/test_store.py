"""The store, on SQLite and PostgreSQL: snapshots, atomic switching, history, and what happens when things go wrong."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore, default_store_path
from planner.errors import CatalogError

REPO = Path(__file__).resolve().parents[2]


def _rows(n: int, price: float = 10.0, provider: str = "aws") -> list[dict[str, object]]:
    return [
        make_offer(provider=provider, instance_type=f"p5.{i}xlarge", zone=f"use1-az{i}", price_usd_per_hour=price + i)
        for i in range(n)
    ]


def test_store_lives_under_gpuplan_home(isolated_store: Path) -> None:
    assert default_store_path() == isolated_store / "catalog.sqlite"
    with CatalogStore(seed=False) as store:
        assert store.path == isolated_store / "catalog.sqlite"
        mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_write_switches_current_and_keeps_history(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        first = store.write_snapshot("aws", _rows(3, 10.0), source="t1", as_of="2026-01-01T00:00:00+00:00")
        second = store.write_snapshot("aws", _rows(2, 20.0), source="t2", as_of="2026-02-01T00:00:00+00:00")
        assert first is not None and second is not None
        current = store.read_current()
        assert sorted(current["price_usd_per_hour"]) == [20.0, 21.0]
        assert [s.source for s in store.current_snapshots()] == ["t2"]
        assert [s.source for s in store.snapshots("aws")] == ["t1", "t2"]
        history = store.history("p5.0xlarge", "us-east-1")
        assert list(history["price_usd_per_hour"]) == [10.0, 20.0]
        assert list(history["snapshot_id"]) == [first.snapshot.id, second.snapshot.id]


def test_read_snapshots_reads_old_snapshots_after_a_refresh(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        first = store.write_snapshot("aws", _rows(3, 10.0), source="t1", as_of="2026-01-01T00:00:00+00:00")
        store.write_snapshot("aws", _rows(2, 20.0), source="t2", as_of="2026-02-01T00:00:00+00:00")
        assert first is not None
        pinned = store.read_snapshots([first.snapshot.id])
        assert list(pinned["price_usd_per_hour"]) == [10.0, 11.0, 12.0]
        assert dict(pinned.dtypes) == dict(store.read_current().dtypes)
        assert [info.source for info in store.snapshot_infos([first.snapshot.id, 999])] == ["t1"]
        assert store.read_snapshots([]).empty and store.snapshot_infos([]) == []


def test_providers_are_independent(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", _rows(2), source="a", as_of="2026-01-01T00:00:00+00:00")
        store.write_snapshot(
            "azure",
            [make_offer(provider="azure", instance_type="Standard_ND96isr_H100_v5", region="eastus", zone="")],
            source="z",
            as_of="2026-01-01T00:00:00+00:00",
        )
        assert sorted(store.read_current()["provider"]) == ["aws", "aws", "azure"]


def test_invalid_rows_are_reported_not_dropped(store_location: str) -> None:
    rows = [*_rows(2), make_offer(instance_type="bad", price_usd_per_hour=0.0), make_offer(provider="gcp")]
    with CatalogStore(store_location, seed=False) as store:
        result = store.write_snapshot("aws", rows, source="t", as_of="2026-01-01T00:00:00+00:00")
        assert result is not None
        assert result.snapshot.row_count == 2
        assert result.snapshot.rejected_count == 2
        reasons = " | ".join(str(r) for r in result.rejected)
        assert "0 is not 'free'" in reasons
        assert "row of provider 'gcp'" in reasons


def test_empty_refresh_keeps_previous_snapshot(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", _rows(2), source="good", as_of="2026-01-01T00:00:00+00:00")
        with pytest.raises(CatalogError, match="kept the previous catalog"):
            store.write_snapshot("aws", [make_offer(gpu_count=0)], source="bad", as_of="2026-01-02T00:00:00+00:00")
        assert [s.source for s in store.current_snapshots()] == ["good"]
        assert len(store.read_current()) == 2


def test_exception_mid_write_rolls_back(store_location: str) -> None:
    def rows() -> object:
        yield from _rows(3, 99.0)
        raise RuntimeError("network dropped mid-page")

    with CatalogStore(store_location, seed=False) as store:
        store.write_snapshot("aws", _rows(2), source="good", as_of="2026-01-01T00:00:00+00:00")
        with pytest.raises(RuntimeError):
            store.write_snapshot("aws", rows(), source="bad", as_of="2026-01-02T00:00:00+00:00")  # type: ignore[arg-type]
        assert [s.source for s in store.snapshots()] == ["good"]
        assert sorted(store.read_current()["price_usd_per_hour"]) == [10.0, 11.0]


_SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from factories import make_offer
    from planner.catalog.store import CatalogStore

    class HalfThenHang:
        # Delegates to the real connection; inserts half the rows, then hangs inside the open transaction.
        def __init__(self, db):
            self.db = db
        def __getattr__(self, name):
            return getattr(self.db, name)
        def executemany(self, sql, seq):
            rows = list(seq)
            self.db.executemany(sql, rows[: len(rows) // 2])
            print("writing", flush=True)
            time.sleep(60)

    store = CatalogStore(sys.argv[1], seed=False)
    store._db = HalfThenHang(store._db)
    rows = [make_offer(instance_type=f"x{i}", zone="", price_usd_per_hour=1000.0) for i in range(400)]
    store.write_snapshot("aws", rows, source="killed", as_of="2026-01-02T00:00:00+00:00")
    """
)


def test_kill_during_write_leaves_previous_snapshot(tmp_path: Path, store_location: str) -> None:
    path = store_location
    with CatalogStore(path, seed=False) as store:
        store.write_snapshot("aws", _rows(2), source="good", as_of="2026-01-01T00:00:00+00:00")
    script = tmp_path / "writer.py"
    script.write_text(_SLOW_WRITER)
    # The writer holds the write transaction open while it streams rows; a kill -9 there must roll back.
    proc = subprocess.Popen(
        [sys.executable, str(script), path, str(REPO / "tests")],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    line = b""
    while time.monotonic() < deadline and b"writing" not in line:
        line = proc.stdout.readline()
    assert b"writing" in line, "the writer never reached the middle of its transaction"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    with CatalogStore(path, seed=False) as store:
        assert [s.source for s in store.current_snapshots()] == ["good"]
        assert sorted(store.read_current()["price_usd_per_hour"]) == [10.0, 11.0]
        if store.path is not None:
            assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_reader_in_another_process_sees_old_or_new_never_half(store_location: str) -> None:
    path = store_location
    with CatalogStore(path, seed=False) as store:
        store.write_snapshot("aws", _rows(50, 1.0), source="old", as_of="2026-01-01T00:00:00+00:00")
    reader = textwrap.dedent(
        """
        import json, sys
        from planner.catalog.store import CatalogStore
        counts = set()
        with CatalogStore(sys.argv[1], seed=False) as store:
            for _ in range(200):
                counts.add(len(store.read_current()))
        print(json.dumps(sorted(counts)))
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", reader, path],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    with CatalogStore(path, seed=False) as store:
        for i in range(10):
            size = 50 if i % 2 else 400
            store.write_snapshot("aws", _rows(size, 2.0), source=f"new{i}", as_of="2026-01-02T00:00:00+00:00")
    out, _ = proc.communicate(timeout=120)
    seen = set(json.loads(out))
    assert seen <= {50, 400}


def test_unreadable_store_gives_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CatalogError, match="cannot use the catalog store") as info:
        CatalogStore(path)
    assert "\n" not in str(info.value)


def test_newer_schema_is_refused(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        store._db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(CatalogError, match="schema version 99"):
        CatalogStore(store_location)


def test_store_of_schema_1_is_migrated_and_its_rows_read_unknown(tmp_path: Path) -> None:
    from factories import make_offer

    from planner.catalog.schema import COLUMN_NAMES

    path = tmp_path / "c.sqlite"
    old_columns = [c for c in COLUMN_NAMES if not c.startswith("available_") and c != "spot_as_of"]
    with sqlite3.connect(path) as db:
        # The version-1 layout, as gpu-planner 0.1 created it.
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE snapshots (id INTEGER PRIMARY KEY AUTOINCREMENT, provider TEXT NOT NULL, kind TEXT NOT NULL,"
            " source TEXT NOT NULL, as_of TEXT NOT NULL, created_at TEXT NOT NULL, row_count INTEGER NOT NULL,"
            " rejected_count INTEGER NOT NULL, schema_version INTEGER NOT NULL);"
            f"CREATE TABLE offerings (snapshot_id INTEGER NOT NULL, {', '.join(old_columns)});"
            "CREATE TABLE current (provider TEXT PRIMARY KEY, snapshot_id INTEGER NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '1');"
            "INSERT INTO snapshots VALUES (1, 'aws', 'live', 'old', '2026-11-01T00:00:00+00:00',"
            " '2026-11-01T00:00:00+00:00', 1, 0, 1);"
            "INSERT INTO current VALUES ('aws', 1);"
        )
        row = make_offer()
        db.execute(
            f"INSERT INTO offerings (snapshot_id, {', '.join(old_columns)}) VALUES (1, {', '.join('?' * len(old_columns))})",
            [row[c] for c in old_columns],
        )
    with CatalogStore(path, seed=False) as store:
        frame = store.read_current()
        assert list(frame["available_now"]) == ["unknown"]
        assert frame["available_checked_at"].isna().all()
        assert frame["spot_as_of"].isna().all()  # schema 3: the spot price is of the row's as_of
        fresh = make_offer(
            instance_type="p5e.48xlarge", available_now="true", available_checked_at="2026-11-20T06:00:00"
        )
        store.write_snapshot("aws", [fresh], source="new", as_of="2026-11-20T06:00:00+00:00")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "4"


def test_store_in_unwritable_place(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CatalogError, match="cannot"):
        CatalogStore(blocker / "sub" / "c.sqlite")
