"""Shared test set-up: every test gets its own empty catalog store, never the user's."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", help="run tests that call real cloud APIs with your credentials")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--live") or os.environ.get("GPUPLAN_LIVE") == "1":
        return
    skip = pytest.mark.skip(reason="live cloud test: opt in with --live or GPUPLAN_LIVE=1")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point GPUPLAN_HOME at a fresh folder so no test reads or writes the user's catalog."""
    home = tmp_path_factory.mktemp("gpuplan-home")
    monkeypatch.setenv("GPUPLAN_HOME", str(home))
    monkeypatch.delenv("GPUPLAN_DATA_DIR", raising=False)
    monkeypatch.delenv("GPUPLAN_DATABASE_URL", raising=False)  # never a developer's team server
    # Never the developer's own negotiated prices: a prices file only where a test writes one.
    monkeypatch.setenv("GPUPLAN_PRICES_FILE", str(home / "prices.toml"))
    # Nor their owned servers: an owned file only where a test writes one.
    monkeypatch.setenv("GPUPLAN_OWNED_FILE", str(home / "owned.toml"))
    return home


@pytest.fixture
def no_bundled_catalog(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled data without its offering catalog: a fixture store of a few providers is then the whole catalog
    (the store seeds every provider without a snapshot from the bundle, and the bundle grows with each cloud)."""
    import json

    from planner._data import data_dir
    from planner.catalog.schema import SCHEMA_VERSION

    source = data_dir()
    target = tmp_path_factory.mktemp("data")
    for item in source.iterdir():
        if item.name != "catalog":
            (target / item.name).symlink_to(item)
    (target / "catalog").mkdir()
    manifest = {"schema_version": SCHEMA_VERSION, "providers": {}}
    (target / "catalog" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv("GPUPLAN_DATA_DIR", str(target))
    return target


CliRun = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> CliRun:
    """Run `gpuplan ARGS...` in-process: (exit code, stdout, stderr), as a user's shell would see them."""
    from planner.cli.main import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["gpuplan", *args])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session: $GPUPLAN_TEST_DATABASE_URL, else one this worker starts (postgres_server).

    Without one the PostgreSQL tests skip with the reason, except in CI (CI=true), where they fail: a CI that lost
    its server must not pass by testing only SQLite.
    """
    import postgres_server

    given = os.environ.get("GPUPLAN_TEST_DATABASE_URL")
    if given:
        yield given
        return
    try:
        server = postgres_server.start_server()
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"no PostgreSQL server for the tests: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    try:
        yield server.url
    finally:
        server.stop()
