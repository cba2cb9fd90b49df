"""`gpuplan gpus`, `gpuplan offers`, `gpuplan catalog status|history|export|pull`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from planner.catalog.query import SORT_KEYS, OfferFilter
from planner.catalog.schema import PROVIDERS
from planner.cli.rank_opts import AcceleratorOpt, AsOfOpt, MaxAgeOpt, QuietOpt, SnapshotOpt
from planner.report import OFFER_TABLE_COLUMNS, OFFER_WIDE_COLUMNS, OFFER_WIDE_DROP_ORDER

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, csv or json.")]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the data to this file instead of stdout.")
]

WideOpt = Annotated[bool, typer.Option("--wide", help="Table: every column (vCPUs, RAM, network, interruptions).")]


def note(message: str) -> None:
    """A message for the user, on stderr so that stdout stays data (catalog text in it cannot drive the terminal)."""
    from planner.cli import in_cli_words
    from planner.report import visible

    print(visible(in_cli_words(message)), file=sys.stderr)


def render(
    frame: object,
    fmt: str,
    output: Path | None,
    *,
    title: str,
    columns: tuple[str, ...] | None = None,
    drop_first: tuple[str, ...] = (),
) -> None:
    """Table fitted to the terminal (``drop_first`` columns left out first when it is too narrow), CSV or JSON of
    ``frame`` to stdout or ``output``."""
    from planner import report

    report.check_format(fmt)
    if fmt == "csv":
        text = report.to_csv(frame)  # type: ignore[arg-type]
    elif fmt == "json":
        text = report.to_json(frame)  # type: ignore[arg-type]
    else:
        text = report.render_table(frame, title=title, columns=columns, fit=True, drop_first=drop_first)  # type: ignore[arg-type]
    report.emit(text, output, raw=fmt == "csv")


# What `gpus` leaves out first on a terminal too narrow for every column (CSV and JSON carry them all).
GPU_DROP_ORDER = ("tf32_tflops", "memory_type", "nvlink_gbps", "sustained_fp32_tflops", "fp32_tflops", "architecture")


TPU_COLUMNS = ("accelerator_type", "chips", "topology", "vms", "hbm_gib_per_chip", "zones", "min_usd_per_chip_hour",
               "min_spot_usd_per_chip_hour")  # fmt: skip
# What the slice table leaves out first on a narrow terminal (CSV and JSON carry every column).
TPU_DROP_ORDER = ("vms", "hbm_gib_per_chip", "zones")
TPU_TITLE = "Cloud TPU slices (cheapest chip-hour prices in the catalog)"


def gpus(
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    accelerator: Annotated[
        str,
        typer.Option("--accelerator", help="gpu (the GPU hardware table), tpu (Cloud TPU slices) or any (both)."),
    ] = "gpu",
) -> None:
    """List the GPU hardware table: memory, bandwidth, dense peak TFLOP/s per precision, NVLink, TDP, source; with
    --accelerator tpu the Cloud TPU slices: chips, topology, VMs, HBM, zones and chip-hour prices."""
    from planner import checks
    from planner.api import hardware_table, tpu_slices
    from planner.catalog.tpu import ACCELERATOR_KINDS

    kind = checks.choice("accelerator", accelerator.strip().lower(), ACCELERATOR_KINDS)
    if kind == "tpu":
        shown = TPU_COLUMNS if fmt == "table" else None
        render(tpu_slices(), fmt, output, title=TPU_TITLE, columns=shown, drop_first=TPU_DROP_ORDER)
        return
    if kind == "any" and (fmt != "table" or output is not None):
        # One frame for a file: the GPU rows beside the slices, each with the other's columns empty.
        import pandas as pd

        render(pd.concat([hardware_table(), tpu_slices()], ignore_index=True), fmt, output, title="Accelerators")
        return
    if kind == "any":
        render(tpu_slices(), fmt, output, title=TPU_TITLE, columns=TPU_COLUMNS, drop_first=TPU_DROP_ORDER)
    frame = hardware_table()
    columns = (
        "gpu",
        "architecture",
        "memory_gib",
        "memory_bandwidth_gbps",
        "memory_type",
        "fp32_tflops",
        "tf32_tflops",
        "fp16_tflops",
        "fp8_tflops",
        "sustained_fp16_tflops",
        "sustained_source",
        "sustained_fp32_tflops",
        "nvlink_gbps",
        "tdp_w",
    )
    render(
        frame,
        fmt,
        output,
        title="GPU hardware (dense peaks; sustained = the matmul rate the model uses)",
        columns=columns,
        drop_first=GPU_DROP_ORDER,
    )


def offers(
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", "-g", help="GPU name, any spelling; repeat for several.")
    ] = None,
    min_gpus: Annotated[float | None, typer.Option(help="At least this many GPUs per instance.")] = None,
    max_gpus: Annotated[float | None, typer.Option(help="At most this many GPUs per instance.")] = None,
    min_gpu_memory: Annotated[float | None, typer.Option(help="At least this much memory per GPU, GiB.")] = None,
    provider: Annotated[
        list[str] | None, typer.Option("--provider", "-p", help="aws, gcp, azure, lambda or paperspace; repeatable.")
    ] = None,
    region: Annotated[list[str] | None, typer.Option("--region", "-r", help="Region code; repeatable.")] = None,
    instance: Annotated[
        list[str] | None,
        typer.Option("--instance", "--instance-type", "-i", help="Only these instance types; repeatable."),
    ] = None,
    max_price: Annotated[float | None, typer.Option(help="At most this price per instance-hour, USD.")] = None,
    spot: Annotated[
        bool, typer.Option("--spot", help="Only offerings with a spot price; price filters use it.")
    ] = False,
    pricing: Annotated[
        str,
        typer.Option(
            "--pricing", help="on-demand (with spot beside it), committed-1y or committed-3y (commitment prices)."
        ),
    ] = "on-demand",
    utilisation: Annotated[
        float | None,
        typer.Option("--utilisation", help="With a committed pricing: share of the committed hours used (0-1]."),
    ] = None,
    sort: Annotated[str, typer.Option(help=f"One of: {', '.join(SORT_KEYS)}.")] = "price",
    by_zone: Annotated[bool, typer.Option("--by-zone", help="One row per zone instead of per region.")] = False,
    available_only: Annotated[
        bool,
        typer.Option(
            "--available-only", help="Only offerings the cloud reported capacity for at the last refresh (Lambda)."
        ),
    ] = False,
    accelerator: AcceleratorOpt = "any",
    max_age: MaxAgeOpt = None,
    snapshot: SnapshotOpt = None,
    as_of: AsOfOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    wide: WideOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """List GPU offerings of AWS, Google Cloud, Azure, Lambda and Paperspace from the catalog, cheapest first."""
    from planner.api import offers_with_notes

    spec = OfferFilter(
        gpus=gpu or [],
        min_gpus=min_gpus,
        max_gpus=max_gpus,
        min_gpu_memory_gib=min_gpu_memory,
        providers=provider or [],
        regions=region or [],
        instance_types=instance or [],
        max_price_usd_per_hour=max_price,
        spot=spot,
        sort=sort,
        by_zone=by_zone,
        available_only=available_only,
        accelerator=accelerator,
    )
    from planner.report import check_format, notes_to_show

    check_format(fmt)
    from planner import checks
    from planner.cost.commitment import COMMITTED_PRICINGS

    if checks.choice("pricing", pricing, ("on-demand", *COMMITTED_PRICINGS)) != "on-demand":
        _committed_offers(pricing, utilisation, spec, fmt, output)
        return
    found = offers_with_notes(spec, max_age_hours=max_age, snapshot=snapshot, as_of=as_of)
    frame = found.offers
    for message in notes_to_show(found.notes, quiet=quiet):
        note(message)
    if frame.empty:
        note("no offering matches these filters")
    view = OFFER_WIDE_COLUMNS if wide else OFFER_TABLE_COLUMNS
    columns = tuple(c for c in view if c in frame.columns)
    if "spot_note" in frame.columns and not frame["spot_note"].astype(bool).any():
        columns = tuple(c for c in columns if c != "spot_note")  # nothing to say: no empty column
    if by_zone:
        columns = ("provider", "region", "zone", *columns[2:])
    if available_only:
        columns = (*columns, "available_checked_at")
    if fmt == "json":
        # One object like every report: the offerings under "offers", beside the snapshots they come from.
        from planner import report
        from planner.catalog.pins import sources

        ages_days = {provider: hours / 24 for provider, hours in found.ages_hours.items()}
        payload = {"offers": report.records(frame)}
        text = report.to_json(report.envelope(payload, snapshots=sources(found.snapshots), ages_days=ages_days))
        report.emit(text, output)
        return
    render(
        frame,
        fmt,
        output,
        title=f"{len(frame)} offerings",
        columns=columns,
        drop_first=OFFER_WIDE_DROP_ORDER if wide else (),
    )
    if fmt == "table" and not quiet and "spot_note" in frame.columns:
        from planner.catalog.query import spot_note_legend

        for label, meaning in spot_note_legend(frame["spot_note"]):
            note(f"spot note {label}: {meaning}")


# What `offers --pricing committed-1y` shows in its table (CSV and JSON carry every column).
COMMITMENT_VIEW = ("provider", "region", "instance_type", "gpu", "commitment", "payment", "price_basis", "upfront_usd",
                   "hourly_usd_per_hour", "committed_usd_per_hour", "price_usd_per_hour", "on_demand_usd_per_hour",
                   "break_even_vs_on_demand", "as_of")  # fmt: skip


COMMITMENT_DROP_ORDER = ("as_of", "upfront_usd", "hourly_usd_per_hour", "payment", "gpu", "commitment")


def _committed_offers(
    pricing: str, utilisation: float | None, spec: OfferFilter, fmt: str, output: Path | None
) -> None:
    """`offers --pricing committed-Ny`: the commitment prices of the offerings asked for, each with its basis."""
    from planner import report
    from planner.api import commitment_prices, provider_ages
    from planner.cost.commitment import DEFAULT_UTILISATION, term_of

    frame = commitment_prices(
        term_of(pricing),
        utilisation=utilisation,
        gpu=spec.gpus or None,
        provider=spec.providers or None,
        region=spec.regions or None,
        instance_type=spec.instance_types or None,
    ).sort_values(["price_usd_per_hour", "provider", "region"], kind="stable")
    if fmt == "json":
        ages = {provider: hours / 24 for provider, hours in provider_ages(frame).items()}
        report.emit(
            report.to_json(report.envelope({"commitments": report.records(frame)}, snapshots=[], ages_days=ages)),
            output,
        )
    else:
        title = f"{len(frame)} commitment prices"
        render(frame, fmt, output, title=title, columns=COMMITMENT_VIEW, drop_first=COMMITMENT_DROP_ORDER)
    if frame.empty:
        note(f"no {pricing} commitment price matches these filters")
    elif fmt == "table":
        used = DEFAULT_UTILISATION if utilisation is None else utilisation
        note(f"$/h: per used hour at {used:.0%} of the committed hours used (--utilisation); upfront fees spread")


def status(
    provider: Annotated[
        list[str] | None, typer.Option("--provider", "-p", help=f"{', '.join(PROVIDERS)}; repeatable (default all).")
    ] = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
) -> None:
    """Per provider: rows, source (bundled or live), as_of, age of the current catalog, and whether it is stale."""
    from planner.api import catalog_status, stale_warnings

    frame = catalog_status(provider=provider)
    columns = ("provider", "snapshot_id", "rows", "kind", "as_of", "age_days", "stale", "source")
    render(frame, fmt, output, title="Catalog", columns=columns)
    for message in stale_warnings(dict(zip(frame["provider"], frame["age_hours"], strict=True))):
        note(message)


def history(
    instance: Annotated[str, typer.Option("--instance", "-i", help="Instance type, e.g. p5.48xlarge.")],
    region: Annotated[str, typer.Option("--region", "-r", help="Region code, e.g. us-east-1.")],
    provider: Annotated[
        str | None, typer.Option("--provider", "-p", help="aws, gcp, azure, lambda or paperspace.")
    ] = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
) -> None:
    """The price of one offering across every catalog snapshot, oldest first."""
    from planner.api import catalog_history

    for flag, value in (("--instance", instance), ("--region", region), ("--provider", provider)):
        _check_text(flag, value)
    frame = catalog_history(instance, region, provider=provider)
    columns = ("snapshot_id", "snapshot_kind", "created_at", "zone", "gpu", "gpu_count",
               "price_usd_per_hour", "spot_price_usd_per_hour", "as_of")  # fmt: skip
    render(frame, fmt, output, title=f"{instance} in {region}", columns=columns)


def export(
    folder: Annotated[Path, typer.Argument(help="Folder to write (created if missing).")],
) -> None:
    """Write the current catalog to FOLDER: one CSV per provider and manifest.json (as_of, rows, SHA-256)."""
    from planner.api import export_catalog

    manifest = export_catalog(folder)
    for provider, entry in manifest["providers"].items():
        note(f"{provider}: {entry['rows']} rows as of {entry['as_of']} -> {folder / entry['file']}")
    note(f"manifest: {folder / 'manifest.json'}")


def pull(
    source: Annotated[str, typer.Argument(help="A folder or https:// URL that `gpuplan catalog export` wrote.")],
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
) -> None:
    """Check an exported catalog (SHA-256 of every file, every row validated) and make it current, history kept."""
    from planner.api import pull_catalog

    _check_text("SOURCE", source)
    frame = pull_catalog(source)
    render(frame, fmt, output, title=f"Pulled {source}", columns=("provider", "rows", "rejected_rows", "as_of"))
    for row in frame.to_dict("records"):
        if row["rejected_rows"]:
            note(f"warning: {row['provider']}: {row['rejected_rows']} rows rejected, e.g. {row['rejected_examples']}")


def _check_text(flag: str, value: str | None) -> None:
    """An argument the shell passed as bytes that are not UTF-8 (Python keeps them as surrogates) is bad input."""
    from planner.errors import InputError

    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InputError(f"{flag} must be UTF-8 text, got '{shown}'") from None


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add the catalog commands to the CLI."""
    app.command("gpus")(gpus)
    app.command("offers")(offers)
    catalog_app.command("status")(status)
    catalog_app.command("history")(history)
    catalog_app.command("export")(export)
    catalog_app.command("pull")(pull)
