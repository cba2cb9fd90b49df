"""A full disk (issue 43): read commands still read the intact store, and nothing advises deleting it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import CliRun
from factories import make_offer, write_catalog

from planner.catalog.store import CatalogStore, default_store_path
from planner.errors import CatalogError


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written before the disk filled up; then every read-write connection may not grow the file by a
    page (SQLite's own SQLITE_FULL, "database or disk is full"), as on a full disk."""
    write_catalog(
        {
            "aws": [
                make_offer(zone="use1-az1"),
                make_offer(
                    instance_type="p4d.24xlarge",
                    gpu="A100-40GB",
                    gpu_memory_gib=40.0,
                    zone="use1-az1",
                    price_usd_per_hour=32.77,
                ),
            ]
        }
    )
    real = sqlite3.connect

    def connect(database: Any, *args: Any, uri: bool = False, **kwargs: Any) -> sqlite3.Connection:
        db = real(database, *args, uri=uri, **kwargs)
        if not uri:  # the read-only fallback opens by URI and never grows the file
            db.execute("PRAGMA max_page_count = 1")  # SQLite keeps the current size: no page more
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


def test_the_injection_is_a_real_full_disk(full_disk: None) -> None:
    db = sqlite3.connect(default_store_path())
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [(f"k{i}", "x" * 4000) for i in range(50)])
    db.close()


@pytest.mark.parametrize(
    "args",
    [
        ["offers", "-p", "aws"],
        ["offers", "-f", "json"],
        ["catalog", "status"],
        ["catalog", "history", "-i", "p5.48xlarge", "-r", "us-east-1"],
        ["rank", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9"],
        ["compare", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9", "-i", "p5.48xlarge", "-i", "p4d.24xlarge"],
    ],
    ids=["offers", "offers-json", "status", "history", "rank", "compare"],
)
def test_read_commands_work_on_a_full_disk(full_disk: None, cli: CliRun, args: list[str]) -> None:
    code, out, err = cli(*args)
    assert code in (0, 3), err  # 3: the fixture's prices are old enough to be stale for some commands
    assert out and "delete" not in err


def test_a_refresh_on_a_full_disk_says_so_and_never_advises_deleting(full_disk: None) -> None:
    with CatalogStore() as store:  # opening would seed the bundled catalog: no room for it
        assert store.read_only and "full" in (store.write_error or "")
        assert set(store.read_current()["provider"]) == {"aws"}
        with pytest.raises(CatalogError) as caught:
            store.write_snapshot("aws", [make_offer()], source="new", as_of="2026-11-20T00:00:00+00:00")
    message = str(caught.value)
    assert "cannot be written now (database or disk is full)" in message and "free disk space" in message
    assert "delete" not in message


def test_a_damaged_store_still_gets_the_delete_advice(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CatalogError, match="delete it to start again"):
        CatalogStore(path)
