"""`gpuplan catalog refresh`: pull live catalogs and prices from the clouds into the store."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

import typer

from planner.catalog.schema import PROVIDERS
from planner.providers.base import ProgressHook
from planner.refresh import MAX_TIME_LIMIT_S

# A whole refresh of every provider takes 1-3 minutes; a hung connection used to hold it for 4-5 (issue 12).
DEFAULT_TIME_LIMIT_S = 600.0


class RichProgress(ProgressHook):
    """A rich progress bar on stderr, one task per provider, advanced as regions finish."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("{task.description:>6}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("regions"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self._tasks: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.stop()

    def start(self, provider: str, total: int) -> None:
        with self._lock:
            self._tasks[provider] = self._bar.add_task(provider, total=total)

    def advance(self, provider: str, region: str, ok: bool) -> None:
        with self._lock:
            task = self._tasks.get(provider)
            if task is not None:
                self._bar.update(task, advance=1)


def refresh(
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider", "-p", metavar="PROVIDER", help=f"{', '.join(PROVIDERS)} or all (default); repeatable."
        ),
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
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit",
            metavar="SECONDS",
            help=f"Give up on a provider still fetching after this long (it keeps its last catalog); up to "
            f"{MAX_TIME_LIMIT_S:g}.",
        ),
    ] = DEFAULT_TIME_LIMIT_S,
    public: Annotated[
        bool,
        typer.Option(
            "--public",
            help="AWS from its public Price List files and Google Cloud with an API key only, even with credentials.",
        ),
    ] = False,
) -> None:
    """Refresh the catalog from every provider with your credentials; a provider that fails keeps its last catalog.

    Without credentials AWS reads its public Price List files, Google Cloud uses GPUPLAN_GCP_API_KEY if set.

    Exit code 0 when every provider refreshed, 3 when some did (partial), 1 when none did.
    """
    from planner import report
    from planner.api import refresh as run_refresh
    from planner.errors import InputError

    if fmt not in ("table", "json"):
        raise InputError(f"must be table or json, got {fmt!r}", field="format")
    if progress and sys.stderr.isatty():
        with RichProgress() as bar:
            result = run_refresh(
                provider or "all", regions=region or None, progress=bar, time_limit_s=time_limit, public=public
            )
    else:
        result = run_refresh(provider or "all", regions=region or None, time_limit_s=time_limit, public=public)
    print(result.summary(), file=sys.stderr)
    if fmt == "json":
        report.emit(report.to_json(result.to_dict()), output)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `catalog refresh` to the CLI."""
    catalog_app.command("refresh")(refresh)
