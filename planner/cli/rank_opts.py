"""The options `gpuplan rank` and `gpuplan compare` share, as option groups (planner.cli.groups), and the one
RankRequest they make."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from planner.catalog.schema import PROVIDERS
from planner.cli.workload_opts import EvidenceFlags, PrecisionOpt
from planner.cost.request import RankRequest

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, csv, json or html (a one-file report).")]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the data to this file instead of stdout.")
]
DeadlineOpt = Annotated[float | None, typer.Option("--deadline-hours", help="Finish within this many hours.")]
BudgetOpt = Annotated[float | None, typer.Option("--budget-usd", help="Spend at most this many USD per run.")]
ProviderOpt = Annotated[list[str] | None, typer.Option("--provider", "-p", help=f"{', '.join(PROVIDERS)}; repeatable.")]
RegionOpt = Annotated[list[str] | None, typer.Option("--region", "-r", help="Region code; repeatable.")]
PricingOpt = Annotated[
    str,
    typer.Option(
        "--pricing", help="both, on-demand, spot, committed-1y or committed-3y (the cheapest commitment of that term)."
    ),
]
UtilisationOpt = Annotated[
    float,
    typer.Option("--utilisation", help="Share of a commitment's hours your team fills (0-1]; prices committed hours."),
]
MaxNodesOpt = Annotated[int, typer.Option("--max-nodes", help="Consider 1 to this many instances joined by network.")]
MaxAgeOpt = Annotated[
    float | None, typer.Option("--max-age", help="Refuse a catalog older than this many hours (exit code 3).")
]
ByOpt = Annotated[str, typer.Option("--by", help="Order by cost, time, cost-time (cost x time) or co2 (kgCO2e).")]
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
SnapshotOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--snapshot",
        help="Read these stored snapshots (ids from `catalog status`, one per provider; repeatable or comma-separated) "
        "instead of the current catalog: the answer reproduces after later refreshes.",
    ),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", help="Read each provider's snapshot that was current at this ISO 8601 time."),
]
AvailableOpt = Annotated[
    bool,
    typer.Option("--available-only", help="Only offerings the cloud reported capacity for at the last refresh."),
]
AcceleratorOpt = Annotated[
    str,
    typer.Option("--accelerator", help="gpu, tpu (Cloud TPU slices) or any (both, ranked side by side)."),
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

# The request's own defaults, so that a flag left out asks what the library would.
_DEFAULT: dict[str, Any] = {item.name: item.default for item in dataclasses.fields(RankRequest)}


@dataclass(frozen=True)
class RequestFlags:
    """What the job must meet and how options are ordered: RankRequest fields."""

    deadline_hours: DeadlineOpt = _DEFAULT["deadline_hours"]
    budget_usd: BudgetOpt = _DEFAULT["budget_usd"]
    pricing: PricingOpt = _DEFAULT["pricing"]
    utilisation: UtilisationOpt = _DEFAULT["utilisation"]
    max_nodes: MaxNodesOpt = _DEFAULT["max_nodes"]
    by: ByOpt = _DEFAULT["by"]
    precision: PrecisionOpt = _DEFAULT["precision"]


@dataclass(frozen=True)
class SpotFlags:
    """How spot stops and overheads are priced: RankRequest fields (``interruption_rate`` sets the per-node-hour
    rate that replaces the published bands)."""

    checkpoint_interval_hours: CheckpointOpt = _DEFAULT["checkpoint_interval_hours"]
    restart_overhead_hours: RestartOpt = _DEFAULT["restart_overhead_hours"]
    startup_overhead_hours: StartupOpt = _DEFAULT["startup_overhead_hours"]
    interruption_rate: InterruptionRateOpt = _DEFAULT["interruption_rate_per_node_hour"]
    checkpoint_storage_gbps: CheckpointStorageOpt = _DEFAULT["checkpoint_storage_gbps"]


@dataclass(frozen=True)
class RankFlags:
    """Everything a RankRequest is made of, as flags: what the job must meet, the user's evidence, the spot model."""

    ask: RequestFlags
    evidence: EvidenceFlags
    spot: SpotFlags

    def request(self, *, top: int | None = None) -> RankRequest:
        """The one RankRequest of these flags; InputError names the field (the CLI rewords it as its flag)."""
        spot = dataclasses.asdict(self.spot)
        return RankRequest(
            **dataclasses.asdict(self.ask),
            **{name: value for name, value in spot.items() if name != "interruption_rate"},
            interruption_rate_per_node_hour=self.spot.interruption_rate,
            top=top,
            model=self.evidence.options(),
        )


@dataclass(frozen=True)
class WhereFlags:
    """Which part of the catalog is asked: planner.api.rank's filters and its age limit."""

    provider: ProviderOpt = None
    region: RegionOpt = None
    max_age: MaxAgeOpt = None
    available_only: AvailableOpt = False
    accelerator: AcceleratorOpt = "any"
    snapshot: SnapshotOpt = None
    as_of: AsOfOpt = None

    def filters(self) -> dict[str, Any]:
        """The filters as planner.api.rank's keyword arguments."""
        return {
            "provider": self.provider,
            "region": self.region,
            "max_age_hours": self.max_age,
            "available_only": self.available_only,
            "accelerator": self.accelerator,
            "snapshot": self.snapshot,
            "as_of": self.as_of,
        }


@dataclass(frozen=True)
class OutputFlags:
    """How the answer is written."""

    fmt: FormatOpt = "table"
    output: OutputOpt = None
    wide: WideOpt = False
    quiet: QuietOpt = False
