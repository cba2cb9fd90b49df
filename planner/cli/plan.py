"""`gpuplan plan`: N runs of a job a month, the cheapest mix of a commitment and on-demand or spot, with totals.

Exit codes: 0 with a plan, 1 when no offering has both a commitment price and an option for the job, 2 for bad input.
"""

from __future__ import annotations

from typing import Annotated

import typer

from planner.cli.groups import with_groups
from planner.cli.rank import note
from planner.cli.rank_opts import FormatOpt, MaxNodesOpt, OutputOpt, ProviderOpt, RegionOpt
from planner.cli.workload_opts import PrecisionOpt, WorkloadFlags, WorkloadOpt
from planner.cost.commitment import DEFAULT_UTILISATION

# The table's columns (CSV and JSON carry every column of planner.cost.commitment_plan.PLAN_COLUMNS).
PLAN_VIEW = ("provider", "region", "instance_type", "price_basis", "committed_usd_per_hour", "on_demand_usd_per_hour",
             "break_even_vs_on_demand", "break_even_vs_spot", "committed_instances", "flex_pricing",
             "total_usd_per_month", "total_usd_per_year", "all_on_demand_usd_per_month")  # fmt: skip
# What a terminal too narrow for the table leaves out first.
PLAN_DROP_ORDER = ("all_on_demand_usd_per_month", "price_basis", "on_demand_usd_per_hour", "committed_usd_per_hour",
                   "total_usd_per_year", "provider")  # fmt: skip
DEFAULT_SHOWN = 10


@with_groups
def plan(
    *,
    workload: WorkloadOpt,
    runs_per_month: Annotated[float, typer.Option("--runs-per-month", "-n", help="Runs of this job a month.")],
    term: Annotated[str, typer.Option("--term", help="Commitment term: 1y or 3y.")] = "1y",
    utilisation: Annotated[
        float, typer.Option("--utilisation", help="Share of the committed hours your team fills (0-1].")
    ] = DEFAULT_UTILISATION,
    no_spot: Annotated[
        bool, typer.Option("--no-spot", help="Take the load a commitment leaves on demand only.")
    ] = False,
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", "-g", help="Only these GPUs (any spelling); repeatable.")
    ] = None,
    instance: Annotated[list[str] | None, typer.Option("--instance", "-i", help="Only these instance types.")] = None,
    provider: ProviderOpt = None,
    region: RegionOpt = None,
    max_nodes: MaxNodesOpt = 1,
    precision: PrecisionOpt = "bf16",
    top: Annotated[int, typer.Option("--top", "-k", help="Show the K cheapest plans (table).")] = DEFAULT_SHOWN,
    job: WorkloadFlags,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
) -> None:
    """N runs of a job a month: commit for the base load, on demand or spot for the rest; monthly and yearly totals."""
    from planner import report
    from planner.api import plan as api_plan

    report.check_format(fmt)
    built = job.workload(workload)
    frame = api_plan(
        built,
        runs_per_month=runs_per_month,
        term=term,
        utilisation=utilisation,
        spot=not no_spot,
        gpu=gpu,
        instance_type=instance,
        provider=provider,
        region=region,
        max_nodes=max_nodes,
        precision=precision,
    )
    if fmt == "json":
        from planner.api import provider_ages

        # The ages are the commitment prices' (each row's as_of); the on-demand and spot ones are rank's.
        ages = {provider: hours / 24 for provider, hours in provider_ages(frame).items()}
        payload = {"runs_per_month": runs_per_month, "term": term, "utilisation": utilisation,
                   "plans": report.records(frame)}  # fmt: skip
        report.emit(report.to_json(report.envelope(payload, snapshots=[], ages_days=ages)), output)
    elif fmt == "csv":
        report.emit(report.to_csv(frame), output)
    elif len(frame):
        title = f"{built.name}: {runs_per_month:g} runs a month, {term} commitment at {utilisation:.0%} utilisation"
        text = report.render_table(
            frame.head(top), title=title, columns=PLAN_VIEW, fit=True, drop_first=PLAN_DROP_ORDER
        )
        report.emit(text, output)
    if frame.empty:
        note("no plan: no offering for this job has a commitment price in the catalog")
        raise typer.Exit(1)
    if fmt == "table":
        note(
            f"committed prices are per hour of the term (upfront fees spread over it), used or not; break-evens are "
            f"the utilisation above which the commitment costs less than on demand or spot (expected interruptions "
            f"included); the mix assumes {utilisation:.0%} of the committed hours are used"
        )


def register(app: typer.Typer, catalog_app: typer.Typer) -> None:
    """Add `gpuplan plan`."""
    app.command("plan")(plan)
