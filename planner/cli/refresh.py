"""`gpuplan catalog refresh`: pull live catalogs and prices from the clouds into the store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def refresh(
    provider: Annotated[
        list[str] | None,
        typer.Option("--provider", "-p", metavar="PROVIDER", help="aws, gcp, azure or all (default); repeatable."),
    ] = None,
    region: Annotated[
        list[str] | None,
        typer.Option(
            "--region",
            "-r",
            metavar="REGION",
            help="Only this region code (each goes to the cloud it belongs to); repeatable.",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="table (summary on stderr only) or json (the full report on stdout).",
        ),
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the JSON report to this file.")
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr (TTY only).")
    ] = True,
) -> None:
    """Refresh the catalog from AWS, Google Cloud and Azure with your credentials; the others keep the last catalog.

    Exit code 0 when every provider refreshed, 3 when some did (partial), 1 when none did.
    """
    from planner import report
    from planner.api import refresh as run_refresh
    from planner.errors import InputError

    if fmt not in ("table", "json"):
        raise InputError(f"--format must be table or json, got {fmt!r}")
    result = run_refresh(provider or "all", regions=region or None, progress=progress)
    print(result.summary(), file=sys.stderr)
    if fmt == "json":
        report.emit(report.to_json(result.to_dict()), output)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `catalog refresh` to the CLI."""
    catalog_app.command("refresh")(refresh)
