"""The store's tests run on both back ends: each gets a fresh SQLite file or a fresh PostgreSQL schema."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a new, empty catalog store lives: a file path or a ``postgresql://`` URL."""
    if request.param == "sqlite":
        return str(tmp_path / "c.sqlite")
    import postgres_server

    return postgres_server.new_schema(request.getfixturevalue("postgres_url"))
