"""`gpuplan rank` and `gpuplan compare`: every offering priced per training run, ranked; a few side by side.

Exit codes: 0 with options, 1 when nothing meets the constraints (the reason is one line on stderr, like
grep's "no match"), 2 for bad input, 3 for a catalog older than --max-age.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner import checks
from planner.catalog.schema import PROVIDERS
from planner.cli.workload_opts import (
    BatchPerGpuOpt,
    EfficiencyOpt,
    EvalSamplesOpt,
    EvaluationsOpt,
    GlobalBatchOpt,
    HeadsOpt,
    HiddenOpt,
    ImagesOpt,
    LayersOpt,
    MeasuredOnOpt,
    MeasuredOpt,
    ModeOpt,
    ParamsOpt,
    PrecisionOpt,
    RecomputeOpt,
    SamplesOpt,
    SeqLenOpt,
    SequencesOpt,
    StackOpt,
    TokensOpt,
    TrainableShareOpt,
    VocabOpt,
    WorkloadOpt,
    workload_from_flags,
)
from planner.cost.result import SPOT_FLOOR_NOTE, TABLE_COLUMNS

if TYPE_CHECKING:
    from planner.cost.rank import RankResult

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, csv or json.")]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the data to this file instead of stdout.")
]
DeadlineOpt = Annotated[float | None, typer.Option("--deadline-hours", help="Finish within this many hours.")]
BudgetOpt = Annotated[float | None, typer.Option("--budget-usd", help="Spend at most this many USD per run.")]
ProviderOpt = Annotated[list[str] | None, typer.Option("--provider", "-p", help=f"{', '.join(PROVIDERS)}; repeatable.")]
RegionOpt = Annotated[list[str] | None, typer.Option("--region", "-r", help="Region code; repeatable.")]
PricingOpt = Annotated[str, typer.Option("--pricing", help="both, on-demand or spot.")]
MaxNodesOpt = Annotated[int, typer.Option("--max-nodes", help="Consider 1 to this many instances joined by network.")]
MinMemoryOpt = Annotated[float | None, typer.Option("--min-gpu-memory", help="At least this much memory per GPU, GiB.")]
MaxAgeOpt = Annotated[
    float | None, typer.Option("--max-age", help="Refuse a catalog older than this many hours (exit code 3).")
]
ByOpt = Annotated[str, typer.Option("--by", help="Order by cost, time, cost-time (cost x time) or co2 (kgCO2e).")]
TopOpt = Annotated[int | None, typer.Option("--top", "-k", help="Show the best K options (table: 20 by default).")]
CheckpointOpt = Annotated[
    float | None,
    typer.Option(
        "--checkpoint-interval-hours", help="Hours between checkpoints on spot (default: Young/Daly optimum)."
    ),
]
InterruptionRateOpt = Annotated[
    float | None,
    typer.Option("--interruption-rate", help="Your own spot reclaims per node-hour; replaces the published bands."),
]
CheckpointStorageOpt = Annotated[
    float | None,
    typer.Option("--checkpoint-storage-gbps", help="Checkpoint write bandwidth per node, Gbit/s (default 10)."),
]
RestartOpt = Annotated[float, typer.Option("--restart-overhead-hours", help="Hours to resume after a spot stop.")]
StartupOpt = Annotated[
    float, typer.Option("--startup-overhead-hours", help="Hours to boot, pull images and stage data, billed.")
]

# What the table view shows (CSV and JSON carry every column): a compact set that fits a terminal, the rest
# with --wide. "gpus" is report.gpu_label's "2x8 H100-SXM" (nodes x GPUs per node, GPU).
COMPACT_VIEW = ("rank", "provider", "region", "instance_type", "gpus", "pricing", "price_usd_per_hour",
                "time_to_solution_hours", "cost_usd")  # fmt: skip
# --wide shows every column but these (CSV and JSON carry them).
HIDDEN_IN_TABLE = (
    "zone",
    "energy_kwh",
    "energy_low_kwh",
    "energy_high_kwh",
    "time_low_hours",
    "time_high_hours",
    "checkpoint_every_hours",
    "price_as_of",
    "price_age_days",
    "price_per_gpu_usd_per_hour",
)
TABLE_VIEW = tuple(c for c in TABLE_COLUMNS if c not in HIDDEN_IN_TABLE)
# --wide on a terminal too narrow for every column leaves these out, first to last, until the rest fits (folded);
# the notes before what tells one option from another (node count, GPUs per node).
WIDE_DROP_ORDER = ("available_now", "price_stale", "pareto", "spot_risky", "co2_kg", "notes", "p_no_interruption",
                   "cost_high_usd", "cost_low_usd", "expected_interruptions", "gpus_per_node", "nodes")  # fmt: skip
AvailableOpt = Annotated[
    bool,
    typer.Option("--available-only", help="Only offerings the cloud reported capacity for at the last refresh."),
]
WideOpt = Annotated[
    bool, typer.Option("--wide", help="Table: every column (GPUs per node, cost range, interruptions, notes).")
]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="On stderr only warnings that change the answer (stale prices, clouds left out) and why nothing fits.",
    ),
]
DEFAULT_TABLE_TOP = 20
# When nothing meets the deadline, or holds the job, on --max-nodes instances, rank is asked again with up to this many.
WIDER_MAX_NODES = 16


def note(message: str) -> None:
    """A message for the user, on stderr so that stdout stays data (catalog text in it cannot drive the terminal)."""
    from planner.cli import in_cli_words
    from planner.report import visible

    print(visible(in_cli_words(message)), file=sys.stderr)


def _payload(result: RankResult, table: Any) -> dict[str, Any]:
    from planner import report

    return {
        "catalog_as_of": result.catalog_as_of,
        "message": result.message,
        "headline": result.headline_lines(),
        "options": report.records(table),
        "excluded": report.records(result.excluded),
        "assumptions": result.assumptions,
        "notes": result.notes,
    }


def _render(
    result: RankResult, table: Any, fmt: str, output: Path | None, title: str, view: tuple[str, ...], *, wide: bool
) -> None:
    from planner import report

    if fmt == "csv":
        text = report.to_csv(table)
    elif fmt == "json":
        text = report.to_json(_payload(result, table))
    elif len(table) == 0:
        return  # an empty table says nothing: the reason follows on stderr ("no option: ...")
    else:
        shown = _mark_spot(report.with_gpu_label(table))
        text = report.render_table(
            shown,
            title=title,
            columns=[c for c in view if c in shown.columns],
            fit=True,
            drop_first=WIDE_DROP_ORDER if wide else (),
            # compare's compact "why" stays one line per row: cut with an ellipsis (CSV and JSON have all of it).
            one_line=("why",),
        )
        if output is not None:
            # A table written to a file keeps the headline the terminal shows above it.
            text = "".join(f"{report.visible(line)}\n" for line in result.headline_lines()) + text
    report.emit(text, output)


def _risky(table: Any) -> Any:
    """Which rows are spot runs whose high scenario more than doubles the interruption-free time or cost."""
    if table is None or "spot_risky" not in table.columns or "pricing" not in table.columns:
        return None
    return (table["pricing"] == "spot") & table["spot_risky"].eq(True)


def _shows(mask: Any) -> bool:
    return bool(mask is not None and mask.any())


def _at_floor(table: Any) -> Any:
    """Which rows are spot runs priced at the 90%-off floor of their zone (rank's notes say so)."""
    if table is None or "notes" not in table.columns or "pricing" not in table.columns:
        return None
    return (table["pricing"] == "spot") & table["notes"].fillna("").astype(str).str.contains(
        SPOT_FLOOR_NOTE, regex=False
    )


def _mark_spot(table: Any) -> Any:
    """The table view says where the number stands that a spot run may well not deliver: RISKY (the high scenario
    more than doubles it) and FLOOR (a floor price, not a market one). CSV and JSON carry ``spot_risky`` and
    ``notes``."""
    for mask, word in ((_risky(table), "RISKY"), (_at_floor(table), "FLOOR")):
        if _shows(mask):
            table.loc[mask, "pricing"] = table.loc[mask, "pricing"] + f" {word}"
    return table


def _finish(
    result: RankResult,
    fmt: str,
    *,
    shown: int,
    total: int,
    wide: bool,
    quiet: bool,
    shown_table: Any = None,
    hint: str | None = None,
) -> None:
    """Messages after the data: notes, exclusions and assumptions (table view), the reason for nothing.

    ``quiet`` keeps only the warnings and the reason for nothing: the rest is already in the data or the JSON.
    ``shown_table``: the rows the table shows; a note explains each spot marker (RISKY, FLOOR) among them.
    ``hint``: what would give an answer where there is none (more instances), said after the reason.
    """
    from planner.report import notes_to_show

    for message in notes_to_show(result.notes, quiet=quiet):
        note(message)
    if fmt == "table" and not quiet and _shows(_risky(shown_table)):
        note(
            "spot RISKY: in the high scenario (the interruption band's upper end, the model's slow end) the run takes "
            "more than twice its interruption-free time or cost; its cost is the expected one (--wide: the range)"
        )
    if fmt == "table" and not quiet and _shows(_at_floor(shown_table)):
        note(f"spot FLOOR: {SPOT_FLOOR_NOTE} (the clouds' deepest discount)")
    if fmt == "table" and not quiet:
        if shown < total:
            rows = len(shown_table) if shown_table is not None else shown
            in_rows = f" in {rows} rows" if rows != shown else ""
            note(f"showing {shown} of {total} options{in_rows}; --top K or --format csv for more")
        if not wide and shown:
            note("--wide adds GPUs per node, cost range, expected interruptions, Pareto and notes")
        if len(result.excluded):
            reasons = result.excluded.drop_duplicates(["provider", "instance_type", "reason"])
            families = reasons["instance_type"].nunique()
            note(f"left out: {families} instance types ({len(reasons)} reasons; --format json lists them)")
        if result.catalog_as_of:
            note(f"prices as of {result.catalog_as_of}")
        for line in result.assumptions:
            note(f"- {line}")
    if result.empty:
        note(f"no option: {result.message or 'no choice has an option (see each one why)'}")
        if hint:
            note(hint)  # what would give an answer follows the reason there is none
        raise typer.Exit(1)


def rank(
    workload: WorkloadOpt,
    deadline_hours: DeadlineOpt = None,
    budget_usd: BudgetOpt = None,
    provider: ProviderOpt = None,
    region: RegionOpt = None,
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", "-g", help="Only these GPUs (any spelling); repeatable.")
    ] = None,
    instance: Annotated[list[str] | None, typer.Option("--instance", "-i", help="Only these instance types.")] = None,
    pricing: PricingOpt = "both",
    max_nodes: MaxNodesOpt = 1,
    min_gpu_memory: MinMemoryOpt = None,
    max_age: MaxAgeOpt = None,
    available_only: AvailableOpt = False,
    by: ByOpt = "cost",
    top: TopOpt = None,
    precision: PrecisionOpt = "bf16",
    params: ParamsOpt = None,
    layers: LayersOpt = None,
    hidden: HiddenOpt = None,
    heads: HeadsOpt = None,
    vocab: VocabOpt = None,
    seq_len: SeqLenOpt = None,
    tokens: TokensOpt = None,
    images: ImagesOpt = None,
    sequences: SequencesOpt = None,
    samples: SamplesOpt = None,
    mode: ModeOpt = "pretrain",
    stack: StackOpt = None,
    recompute: RecomputeOpt = None,
    batch_per_gpu: BatchPerGpuOpt = None,
    global_batch: GlobalBatchOpt = None,
    evaluations: EvaluationsOpt = None,
    eval_samples: EvalSamplesOpt = None,
    trainable_share: TrainableShareOpt = None,
    measured: MeasuredOpt = None,
    measured_on: MeasuredOnOpt = None,
    efficiency: EfficiencyOpt = None,
    checkpoint_interval_hours: CheckpointOpt = None,
    restart_overhead_hours: RestartOpt = 0.25,
    startup_overhead_hours: StartupOpt = 0.25,
    interruption_rate: InterruptionRateOpt = None,
    checkpoint_storage_gbps: CheckpointStorageOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    wide: WideOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Rank every offering for a training job by cost per run (or time), under a deadline and a budget."""
    from planner import report
    from planner.api import rank as api_rank

    report.check_format(fmt)
    checks.optional_whole("top", top)
    built, extra = workload_from_flags(workload, locals())
    # A terminal table of hundreds of rows helps nobody; CSV and JSON carry every option unless --top says otherwise.
    shown_top = top if top is not None or fmt != "table" else DEFAULT_TABLE_TOP
    ask = functools.partial(
        api_rank,
        built,
        deadline_hours=deadline_hours,
        budget_usd=budget_usd,
        provider=provider,
        region=region,
        gpu=gpu,
        instance_type=instance,
        pricing=pricing,
        min_gpu_memory_gib=min_gpu_memory,
        max_age_hours=max_age,
        available_only=available_only,
        by=by,
        precision=precision,
        checkpoint_interval_hours=checkpoint_interval_hours,
        restart_overhead_hours=restart_overhead_hours,
        startup_overhead_hours=startup_overhead_hours,
        interruption_rate_per_node_hour=interruption_rate,
        checkpoint_storage_gbps=checkpoint_storage_gbps,
        **extra,
    )
    result = ask(max_nodes=max_nodes)
    hint = None
    if result.empty and max_nodes < WIDER_MAX_NODES:
        # Nothing meets the deadline, or holds the job, on this many instances: say whether more of them, joined by
        # their network, would.
        wider = ask(max_nodes=WIDER_MAX_NODES)
        if not wider.empty:
            best = [wider.option_line(row) for row in [wider.best()] if row is not None]
            verb = "meet it" if deadline_hours is not None or budget_usd is not None else "run it"
            hint = "; ".join([f"with --max-nodes {WIDER_MAX_NODES}, {len(wider.table)} options {verb}", *best])
    total = len(result.table)
    if fmt == "table" and output is None:
        # The headline answer first: the best on-demand option beside the best spot option; catalog text in it is
        # shown inert, and it folds to the terminal like the table.
        import textwrap

        from planner.report import terminal_width, visible

        for line in result.headline_lines():
            print(textwrap.fill(visible(line), terminal_width(), subsequent_indent="  "))
    view = TABLE_VIEW if wide else COMPACT_VIEW
    table = result.table
    if fmt == "table":
        # One row for an offering sold alike in many regions (Lambda's one price in 17); CSV and JSON keep each.
        # Ordered by CO2, regions whose grids differ are different answers: their rows stay apart.
        table = report.collapse_regions(table, (*view, "co2_kg") if by == "co2" else view)
    table = table.head(shown_top) if shown_top is not None else table
    title = f"{built.name}: {total} options by {by}" + (f", {deadline_hours:g} h deadline" if deadline_hours else "")
    _render(result, table, fmt, output, title, view, wide=wide)
    shown = int(table["regions"].sum()) if "regions" in table.columns else len(table)
    if fmt == "table" and shown > len(table) and not quiet:
        note("offerings sold alike in several regions are one row (region '+N more'); --format csv or json lists each")
    _finish(result, fmt, shown=shown, total=total, wide=wide, quiet=quiet, shown_table=table, hint=hint)


def compare(
    workload: WorkloadOpt,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", "-g", help="A GPU to compare; repeat for each.")] = None,
    instance: Annotated[
        list[str] | None, typer.Option("--instance", "-i", help="An instance type to compare; repeat for each.")
    ] = None,
    deadline_hours: DeadlineOpt = None,
    budget_usd: BudgetOpt = None,
    provider: ProviderOpt = None,
    region: RegionOpt = None,
    pricing: PricingOpt = "both",
    max_nodes: MaxNodesOpt = 1,
    max_age: MaxAgeOpt = None,
    available_only: AvailableOpt = False,
    by: ByOpt = "cost",
    precision: PrecisionOpt = "bf16",
    params: ParamsOpt = None,
    layers: LayersOpt = None,
    hidden: HiddenOpt = None,
    heads: HeadsOpt = None,
    vocab: VocabOpt = None,
    seq_len: SeqLenOpt = None,
    tokens: TokensOpt = None,
    images: ImagesOpt = None,
    sequences: SequencesOpt = None,
    samples: SamplesOpt = None,
    mode: ModeOpt = "pretrain",
    stack: StackOpt = None,
    recompute: RecomputeOpt = None,
    batch_per_gpu: BatchPerGpuOpt = None,
    global_batch: GlobalBatchOpt = None,
    evaluations: EvaluationsOpt = None,
    eval_samples: EvalSamplesOpt = None,
    trainable_share: TrainableShareOpt = None,
    measured: MeasuredOpt = None,
    measured_on: MeasuredOnOpt = None,
    efficiency: EfficiencyOpt = None,
    checkpoint_interval_hours: CheckpointOpt = None,
    restart_overhead_hours: RestartOpt = 0.25,
    startup_overhead_hours: StartupOpt = 0.25,
    interruption_rate: InterruptionRateOpt = None,
    checkpoint_storage_gbps: CheckpointStorageOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    wide: WideOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Put a few GPUs (--gpu) or instance types (--instance) side by side for the same job: the best of each."""
    from planner import report
    from planner.api import compare as api_compare
    from planner.cost.compare import COMPARE_COLUMNS

    report.check_format(fmt)
    built, extra = workload_from_flags(workload, locals())
    result = api_compare(
        built,
        gpus=gpu or [],
        instance_types=instance or [],
        deadline_hours=deadline_hours,
        budget_usd=budget_usd,
        provider=provider,
        region=region,
        pricing=pricing,
        max_nodes=max_nodes,
        max_age_hours=max_age,
        available_only=available_only,
        by=by,
        precision=precision,
        checkpoint_interval_hours=checkpoint_interval_hours,
        restart_overhead_hours=restart_overhead_hours,
        startup_overhead_hours=startup_overhead_hours,
        interruption_rate_per_node_hour=interruption_rate,
        checkpoint_storage_gbps=checkpoint_storage_gbps,
        **extra,
    )
    wide_view = tuple(c for c in COMPARE_COLUMNS if c not in HIDDEN_IN_TABLE)
    # A choice without an option says why; the compact view shows only that (the options' own notes are --wide's).
    table = result.table
    if fmt == "table" and not wide:
        # The empty rank already says "no option": the cell starts with the reason itself.
        why = table["notes"].where(table["rank"].isna(), "").map(lambda text: str(text).removeprefix("no option: "))
        table = table.assign(why=why)
    view = wide_view if wide else ("choice", *COMPACT_VIEW, "why")
    _render(result, table, fmt, output, f"{built.name}: best option of each, by {by}", view, wide=wide)
    _finish(
        result,
        fmt,
        shown=len(result.table),
        total=len(result.table),
        wide=wide,
        quiet=quiet,
        shown_table=result.table,
    )


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `gpuplan rank` and `gpuplan compare`."""
    app.command("rank")(rank)
    app.command("compare")(compare)
