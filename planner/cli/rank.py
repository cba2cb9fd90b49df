"""`gpuplan` commands of this area (to be filled in by its issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add this module's commands to the CLI."""
