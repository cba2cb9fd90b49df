"""`gpuplan rank` and `gpuplan compare`: every offering priced per training run, ranked; a few side by side.

Exit codes: 0 with options, 1 when nothing meets the constraints (the reason is one line on stderr, like
grep's "no match"), 2 for bad input, 3 for a catalog older than --max-age.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner import checks
from planner.cli.groups import with_groups
from planner.cli.rank_opts import OutputFlags, RankFlags, WhereFlags
from planner.cli.workload_opts import ProfileOpt, WorkloadFlags, WorkloadOpt, profile_keyword
from planner.cost.result import SPOT_FAR_BELOW_NOTE, SPOT_FLOOR_NOTE, TABLE_COLUMNS

if TYPE_CHECKING:
    from planner.cost.rank import RankResult
    from planner.cost.request import RankRequest

MinMemoryOpt = Annotated[float | None, typer.Option("--min-gpu-memory", help="At least this much memory per GPU, GiB.")]
TopOpt = Annotated[int | None, typer.Option("--top", "-k", help="Show the best K options (table: 20 by default).")]

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
WIDE_DROP_ORDER = ("available_now", "price_basis", "price_stale", "pareto", "spot_risky", "co2_kg", "notes",
                   "p_no_interruption", "cost_high_usd", "cost_low_usd", "expected_interruptions", "gpus_per_node",
                   "nodes")  # fmt: skip
DEFAULT_TABLE_TOP = 20
# The options an HTML report shows without --top.
HTML_TOP = 20
# When nothing meets the deadline, or holds the job, on --max-nodes instances, rank is asked again with up to this many.
WIDER_MAX_NODES = 16


def note(message: str) -> None:
    """A message for the user, on stderr so that stdout stays data (catalog text in it cannot drive the terminal)."""
    from planner.cli import in_cli_words
    from planner.report import visible

    print(visible(in_cli_words(message)), file=sys.stderr)


def _payload(result: RankResult, table: Any) -> dict[str, Any]:
    from planner import report

    return report.envelope(
        {
            "catalog_as_of": result.catalog_as_of,
            "message": result.message,
            "headline": result.headline_lines(),
            "options": report.records(table),
            "excluded": report.records(result.excluded),
            "assumptions": result.assumptions,
            "notes": result.notes,
        },
        snapshots=result.snapshots,
        ages_days=report.oldest_price_days(result.table),
    )


def _render(result: RankResult, table: Any, out: OutputFlags, title: str, view: tuple[str, ...]) -> None:
    from planner import report

    fmt, output = out.fmt, out.output
    if fmt == "csv":
        text = report.to_csv(table)
    elif fmt == "json":
        text = report.to_json(_payload(result, table))
    elif fmt == "html":
        text = report.html_report(result, top=len(table) if len(table) else HTML_TOP)
    elif len(table) == 0:
        return  # an empty table says nothing: the reason follows on stderr ("no option: ...")
    else:
        shown = _mark_spot(report.with_gpu_label(table))
        text = report.render_table(
            shown,
            title=title,
            columns=[c for c in view if c in shown.columns],
            fit=True,
            drop_first=WIDE_DROP_ORDER if out.wide else (),
            # compare's compact "why" stays one line per row: cut with an ellipsis (CSV and JSON have all of it).
            one_line=("why",),
        )
        if output is not None:
            # A table written to a file keeps the headline the terminal shows above it.
            text = "".join(f"{report.visible(line)}\n" for line in result.headline_lines()) + text
    report.emit(text, output, raw=fmt == "csv")


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


def _far_below(table: Any) -> Any:
    """Which rows are spot runs priced under half their type's median across regions (rank's notes say so)."""
    if table is None or "notes" not in table.columns or "pricing" not in table.columns:
        return None
    notes = table["notes"].fillna("").astype(str)
    return (table["pricing"] == "spot") & notes.str.contains(SPOT_FAR_BELOW_NOTE, regex=False)


def _mark_spot(table: Any) -> Any:
    """The table view says where the number stands that a spot run may well not deliver: RISKY (the high scenario
    more than doubles it), FLOOR (a floor price, not a market one) and LOW (far under the type's other regions, no
    second source). CSV and JSON carry ``spot_risky`` and ``notes``."""
    for mask, word in ((_risky(table), "RISKY"), (_at_floor(table), "FLOOR"), (_far_below(table), "LOW")):
        if _shows(mask):
            table.loc[mask, "pricing"] = table.loc[mask, "pricing"] + f" {word}"
    return table


def _finish(
    result: RankResult,
    out: OutputFlags,
    *,
    shown: int,
    total: int,
    shown_table: Any = None,
    hint: str | None = None,
) -> None:
    """Messages after the data: notes, exclusions and assumptions (table view), the reason for nothing.

    ``quiet`` keeps only the warnings and the reason for nothing: the rest is already in the data or the JSON.
    ``shown_table``: the rows the table shows; a note explains each spot marker (RISKY, FLOOR) among them.
    ``hint``: what would give an answer where there is none (more instances), said after the reason.
    """
    from planner.report import notes_to_show

    fmt, wide, quiet = out.fmt, out.wide, out.quiet
    for message in notes_to_show(result.notes, quiet=quiet):
        note(message)
    if fmt == "table" and not quiet and _shows(_risky(shown_table)):
        note(
            "spot RISKY: in the high scenario (the interruption band's upper end, the model's slow end) the run takes "
            "more than twice its interruption-free time or cost; its cost is the expected one (--wide: the range)"
        )
    if fmt == "table" and not quiet and _shows(_at_floor(shown_table)):
        note(f"spot FLOOR: {SPOT_FLOOR_NOTE} (the clouds' deepest discount)")
    if fmt == "table" and not quiet and _shows(_far_below(shown_table)):
        note(f"spot LOW: {SPOT_FAR_BELOW_NOTE}")
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


@with_groups
def rank(
    *,
    workload: WorkloadOpt,
    asked: RankFlags,
    where: WhereFlags,
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", "-g", help="Only these GPUs (any spelling); repeatable.")
    ] = None,
    instance: Annotated[list[str] | None, typer.Option("--instance", "-i", help="Only these instance types.")] = None,
    min_gpu_memory: MinMemoryOpt = None,
    top: TopOpt = None,
    profile: ProfileOpt = None,
    job: WorkloadFlags,
    out: OutputFlags,
) -> None:
    """Rank every offering for a training job by cost per run (or time), under a deadline and a budget."""
    from planner import report
    from planner.api import rank as api_rank

    report.check_format(out.fmt, report.RANK_FORMATS)
    checks.optional_whole("top", top)
    built = job.workload(workload)
    # Every option is ranked (the count is shown); the table keeps the best ``top`` below.
    request = asked.request()
    # A terminal table of hundreds of rows helps nobody; CSV and JSON carry every option unless --top says otherwise.
    shown_top = top if top is not None or out.fmt in ("csv", "json") else DEFAULT_TABLE_TOP

    def ranked(asked: RankRequest) -> RankResult:
        return api_rank(
            built,
            request=asked,
            gpu=gpu,
            instance_type=instance,
            min_gpu_memory_gib=min_gpu_memory,
            **where.filters(),
            **profile_keyword(profile),
        )

    result = ranked(request)
    hint = None
    if result.empty and request.max_nodes < WIDER_MAX_NODES:
        # Nothing meets the deadline, or holds the job, on this many instances: say whether more of them, joined by
        # their network, would.
        wider = ranked(replace(request, max_nodes=WIDER_MAX_NODES))
        if not wider.empty:
            best = [wider.option_line(row) for row in [wider.best()] if row is not None]
            verb = "meet it" if request.deadline_hours is not None or request.budget_usd is not None else "run it"
            hint = "; ".join([f"with --max-nodes {WIDER_MAX_NODES}, {len(wider.table)} options {verb}", *best])
    total = len(result.table)
    if out.fmt == "table" and out.output is None:
        # The headline answer first: the best on-demand option beside the best spot option; catalog text in it is
        # shown inert, and it folds to the terminal like the table.
        import textwrap

        from planner.report import terminal_width, visible

        for line in result.headline_lines():
            print(textwrap.fill(visible(line), terminal_width(), subsequent_indent="  "))
    view = TABLE_VIEW if out.wide else COMPACT_VIEW
    table = result.table
    if out.fmt == "table":
        # One row for an offering sold alike in many regions (Lambda's one price in 17); CSV and JSON keep each.
        # Ordered by CO2, regions whose grids differ are different answers: their rows stay apart.
        table = report.collapse_regions(table, (*view, "co2_kg") if request.by == "co2" else view)
    table = table.head(shown_top) if shown_top is not None else table
    deadline = request.deadline_hours
    title = f"{built.name}: {total} options by {request.by}" + (f", {deadline:g} h deadline" if deadline else "")
    _render(result, table, out, title, view)
    shown = int(table["regions"].sum()) if "regions" in table.columns else len(table)
    if out.fmt == "table" and shown > len(table) and not out.quiet:
        note("offerings sold alike in several regions are one row (region '+N more'); --format csv or json lists each")
    _finish(result, out, shown=shown, total=total, shown_table=table, hint=hint)


@with_groups
def compare(
    *,
    workload: WorkloadOpt,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", "-g", help="A GPU to compare; repeat for each.")] = None,
    instance: Annotated[
        list[str] | None, typer.Option("--instance", "-i", help="An instance type to compare; repeat for each.")
    ] = None,
    asked: RankFlags,
    where: WhereFlags,
    profile: ProfileOpt = None,
    job: WorkloadFlags,
    out: OutputFlags,
) -> None:
    """Put a few GPUs (--gpu) or instance types (--instance) side by side for the same job: the best of each."""
    from planner import report
    from planner.api import compare as api_compare
    from planner.cost.compare import COMPARE_COLUMNS

    report.check_format(out.fmt, report.RANK_FORMATS)
    built = job.workload(workload)
    request = asked.request()
    result = api_compare(
        built,
        gpus=gpu or [],
        instance_types=instance or [],
        request=request,
        **where.filters(),
        **({"profile": profile} if profile is not None else {}),
    )
    wide_view = tuple(c for c in COMPARE_COLUMNS if c not in HIDDEN_IN_TABLE)
    # A choice without an option says why; the compact view shows only that (the options' own notes are --wide's).
    table = result.table
    if out.fmt == "table" and not out.wide:
        # The empty rank already says "no option": the cell starts with the reason itself.
        why = table["notes"].where(table["rank"].isna(), "").map(lambda text: str(text).removeprefix("no option: "))
        table = table.assign(why=why)
    view = wide_view if out.wide else ("choice", *COMPACT_VIEW, "why")
    _render(result, table, out, f"{built.name}: best option of each, by {request.by}", view)
    _finish(result, out, shown=len(result.table), total=len(result.table), shown_table=result.table)


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `gpuplan rank` and `gpuplan compare`."""
    app.command("rank")(rank)
    app.command("compare")(compare)
