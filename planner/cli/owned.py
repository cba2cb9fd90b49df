"""`gpuplan owned`: your owned servers (or the bundled examples) priced per hour, beside the cheapest rental."""

from __future__ import annotations

from typing import Annotated

import typer

from planner.cli.catalog import FormatOpt, OutputOpt, note, render
from planner.cli.rank_opts import AsOfOpt, SnapshotOpt

# What the table shows; CSV and JSON carry every column of planner.buy_or_rent.
TABLE_COLUMNS = (
    "server",
    "gpus",
    "gpu",
    "utilisation",
    "owned_usd_per_hour",
    "rent_provider",
    "rent_instance_type",
    "rent_usd_per_hour",
    "break_even_utilisation",
    "cheaper_at_stated_utilisation",
)
DROP_FIRST = ("rent_instance_type", "cheaper_at_stated_utilisation", "gpus")


def owned(
    examples: Annotated[
        bool, typer.Option("--examples", help="The bundled example servers (sourced list prices), not your file.")
    ] = False,
    path: Annotated[
        bool, typer.Option("--path", help="Print where your owned.toml is read from and where the examples are.")
    ] = False,
    snapshot: SnapshotOpt = None,
    as_of: AsOfOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
) -> None:
    """Buy or rent: each owned server's price per hour of use beside the cheapest on-demand rental of the same GPUs,
    and the utilisation above which owning costs less."""
    from planner.api import buy_or_rent
    from planner.catalog.owned import examples_path, owned_path
    from planner.report import check_format

    if path:
        print(f"owned servers: {owned_path()}\nexamples to copy: {examples_path()}")
        return
    check_format(fmt)
    frame = buy_or_rent(examples=examples, snapshot=snapshot, as_of=as_of)
    if frame.empty:
        note(f"no owned servers: write {owned_path()} (copy from `gpuplan owned --examples`, docs/owned.md)")
        if fmt == "table":
            return
    elif examples:
        note(f"examples from {examples_path().name}: copy one into {owned_path()} to rank it beside the clouds")
    render(
        frame,
        fmt,
        output,
        title="Buy or rent: owned price per hour of use vs the cheapest on-demand rental of the same GPUs",
        columns=TABLE_COLUMNS,
        drop_first=DROP_FIRST,
    )


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `gpuplan owned` to the CLI."""
    app.command("owned")(owned)
