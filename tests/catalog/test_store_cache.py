"""A warm read of the current catalog comes from the process's cache, which every write to the store invalidates;
and what the back end is chosen by (a ``postgresql://`` URL, ``GPUPLAN_DATABASE_URL``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore
from planner.errors import CatalogError

REPO = Path(__file__).resolve().parents[2]


class CountingReads:
    """The store's back end, counting the statements that read the offerings themselves."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.row_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def execute(self, sql: str, params: Any = ()) -> Any:
        if "JOIN offerings" in sql:
            self.row_reads += 1
        return self.backend.execute(sql, params)


def _write(store: CatalogStore, price: float, source: str) -> None:
    store.write_snapshot(
        "aws", [make_offer(price_usd_per_hour=price)], source=source, as_of="2026-11-01T00:00:00+00:00"
    )


def test_a_warm_read_does_not_read_the_rows_again(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        _write(store, 10.0, "first")
        counting = CountingReads(store._db)
        store._db = counting  # type: ignore[assignment]
        first = store.read_current()
        second = store.read_current()
        assert counting.row_reads <= 1  # the write above may have left nothing cached; the second read never reads
        assert second.equals(first)
    with CatalogStore(store_location, seed=False) as reopened:  # a new connection of the same process
        counting = CountingReads(reopened._db)
        reopened._db = counting  # type: ignore[assignment]
        assert reopened.read_current().equals(first)
        assert counting.row_reads == 0


def test_a_write_from_another_connection_is_seen_on_the_next_read(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as reader, CatalogStore(store_location, seed=False) as writer:
        _write(writer, 10.0, "first")
        assert list(reader.read_current()["price_usd_per_hour"]) == [10.0]
        _write(writer, 20.0, "second")
        assert list(reader.read_current()["price_usd_per_hour"]) == [20.0]


def test_a_failed_write_keeps_the_cached_catalog(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        _write(store, 10.0, "good")
        before = store.read_current()
        with pytest.raises(CatalogError):
            store.write_snapshot("aws", [make_offer(gpu_count=0)], source="bad", as_of="2026-11-02T00:00:00+00:00")
        assert store.read_current().equals(before)


def test_changing_the_returned_frame_never_changes_the_cache(store_location: str) -> None:
    with CatalogStore(store_location, seed=False) as store:
        _write(store, 10.0, "first")
        frame = store.read_current()
        frame.loc[0, "price_usd_per_hour"] = -1.0
        frame["gpu"] = "changed"
        frame["region"] = frame["region"].str.upper()
        del frame["zone"]
        frame["price_usd_per_hour"] *= 3
        again = store.read_current()
    assert list(again["price_usd_per_hour"]) == [10.0]
    assert list(again["gpu"]) == [make_offer()["gpu"]]
    assert list(again["region"]) == [make_offer()["region"]]
    assert "zone" in again.columns


def test_database_url_env_selects_postgresql(monkeypatch: pytest.MonkeyPatch, postgres_url: str) -> None:
    import postgres_server

    url = postgres_server.new_schema(postgres_url)
    monkeypatch.setenv("GPUPLAN_DATABASE_URL", url)
    with CatalogStore() as store:
        assert store.path is None
        assert store.location == url
        assert {s.kind for s in store.current_snapshots()} == {"bundled"}  # seeded, as a new SQLite store is
        _write(store, 0.5, "team refresh")
    from planner import offers

    cheapest = offers(provider="aws")  # the library's default store is the server's
    assert cheapest["price_usd_per_hour"].tolist() == [0.5]


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    with pytest.raises(CatalogError, match="cannot use the catalog store at postgresql://planner:\\*\\*\\*@") as info:
        CatalogStore("postgresql://planner:s3cret@127.0.0.1:1/catalog")
    assert "s3cret" not in str(info.value)
    assert "\n" not in str(info.value)
    assert "GPUPLAN_DATABASE_URL" in str(info.value)


def _run_postgres_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """One PostgreSQL store test in a fresh pytest whose server cannot be had (no binaries where it is told to look)."""
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "GPUPLAN_TEST_DATABASE_URL", "PYTEST_XDIST_WORKER"}}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-k", "postgresql",
         str(Path(__file__).with_name("test_store.py") ) + "::test_providers_are_independent"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**clean, "GPUPLAN_PG_BINDIR": str(tmp_path / "none"), **env},
    )  # fmt: skip


def test_without_a_server_the_postgresql_tests_skip_locally_and_fail_in_ci(tmp_path: Path) -> None:
    local = _run_postgres_test(tmp_path)
    assert local.returncode == 0, local.stdout[-2000:]
    assert "1 skipped" in local.stdout and "no PostgreSQL server" in local.stdout
    in_ci = _run_postgres_test(tmp_path, CI="true")
    assert in_ci.returncode != 0, in_ci.stdout[-2000:]
    assert "no PostgreSQL server for the tests" in in_ci.stdout


def test_a_postgresql_connection_is_reused_and_a_dead_one_replaced(postgres_url: str) -> None:
    import postgres_server
    import psycopg

    url = postgres_server.new_schema(postgres_url)
    with CatalogStore(url, seed=False) as store:
        first = store._db.db
        backend_pid = first.info.backend_pid
    with CatalogStore(url, seed=False) as store:
        assert store._db.db is first  # no new handshake for a warm query
    with psycopg.connect(postgres_url, autocommit=True) as admin:  # as a server restart would: the session ends
        admin.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
    with CatalogStore(url, seed=False) as store:
        assert store._db.db is not first
        _write(store, 10.0, "after")
        assert list(store.read_current()["price_usd_per_hour"]) == [10.0]
