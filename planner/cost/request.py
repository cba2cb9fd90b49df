"""What a ranking is asked for, and the seam to the performance model: a validated request, an estimator protocol.

``RankRequest`` names fields, never CLI flags: a bad value raises InputError with ``field`` set to the field's name
(``deadline_hours``), which the CLI rewords as its flag. The estimator is anything shaped like
``planner.perf.model.estimate``; ranking reads only the fields of ``ConfigAnswer`` from its answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

from planner import checks
from planner.cost.commitment import COMMITTED_PRICINGS, DEFAULT_UTILISATION, utilisation_value
from planner.errors import InputError
from planner.perf.options import ModelOptions

if TYPE_CHECKING:
    from planner.perf.workloads import Workload

# committed-1y/-3y price each offering at its cheapest commitment of that term (planner.cost.commitment).
PRICINGS = ("both", "on-demand", "spot", *COMMITTED_PRICINGS)
ORDERS = ("cost", "time", "cost-time", "co2")
# Options grow with offerings x node counts; beyond this many instances the catalog's network figures say little.
MAX_NODES = 64
# Reclaims per node-hour for offerings without an interruption label (planner.cost.lines: the mid hazard band).
_DEFAULT_RATE_FIELD = "default_interruption_rate"


class ConfigAnswer(Protocol):
    """What ranking reads from the performance model's answer for one configuration."""

    @property
    def fits_in_memory(self) -> bool: ...
    @property
    def why_not_fits(self) -> str | None: ...
    @property
    def min_gpus_to_fit(self) -> int | None: ...
    @property
    def throughput(self) -> float | None: ...
    @property
    def throughput_low(self) -> float | None: ...
    @property
    def throughput_high(self) -> float | None: ...
    @property
    def time_to_solution_hours(self) -> float | None: ...
    @property
    def energy_kwh(self) -> float | None: ...
    @property
    def gpu_calibrated(self) -> bool: ...
    @property
    def held_out_error_pct(self) -> float | None: ...
    @property
    def slower_at_scale(self) -> float | None: ...


class Estimator(Protocol):
    """The performance model as ranking calls it (``planner.perf.model.estimate`` is one)."""

    def __call__(
        self,
        workload: Workload,
        gpu: str,
        gpus: int,
        precision: str,
        *,
        gpus_per_node: int | None = None,
        interconnect: str | None = None,
        network_gbps: float | None = None,
        measured: float | None = None,
        measured_on: str | None = None,
        efficiency: float | None = None,
    ) -> ConfigAnswer: ...


@dataclass(frozen=True)
class RankRequest:
    """How to price and rank the options of one job; every field is checked when the request is made.

    Times are hours, money USD per run. ``pricing``: both, on-demand, spot, committed-1y or committed-3y; a committed
    price is per used hour when the team fills ``utilisation`` of the committed hours. ``by``: cost, time, cost-time
    or co2. ``max_nodes``: consider 1 to this many instances joined by their network. ``top``: keep the best ``top``.
    Spot (planner.cost.spot): reclaims per node-hour come from a hazard band chosen by the offering's interruption
    label, ``default_interruption_rate`` where it has none, or ``interruption_rate_per_node_hour`` (from one's own
    history) everywhere; checkpoints of the job's state are written at ``checkpoint_storage_gbps`` per node every
    ``checkpoint_interval_hours`` (None: the Young/Daly interval); each stop costs rework,
    ``restart_overhead_hours`` and a wait for capacity. Runs longer than ``spot_warning_hours`` (None: the
    data table's bound) carry a note: spot ones need checkpoints and restarts, on-demand ones face host maintenance.
    """

    deadline_hours: float | None = None
    budget_usd: float | None = None
    pricing: str = "both"
    max_nodes: int = 1
    by: str = "cost"
    top: int | None = None
    precision: str = "bf16"
    checkpoint_interval_hours: float | None = None
    restart_overhead_hours: float = 0.25
    startup_overhead_hours: float = 0.25
    default_interruption_rate: float | None = None
    interruption_rate_per_node_hour: float | None = None
    checkpoint_storage_gbps: float | None = None
    spot_warning_hours: float | None = None
    utilisation: float = DEFAULT_UTILISATION
    model: ModelOptions = field(default_factory=ModelOptions)

    def __post_init__(self) -> None:
        from planner.cost.lines import DEFAULT_INTERRUPTION_RATE
        from planner.hardware import PRECISIONS

        checks.choice("pricing", self.pricing, PRICINGS)
        checks.choice("by", self.by, ORDERS)
        checks.choice("precision", self.precision, PRECISIONS)
        numbers = {
            "deadline_hours": checks.optional_number("deadline_hours", self.deadline_hours),
            "budget_usd": checks.optional_number("budget_usd", self.budget_usd),
            "checkpoint_interval_hours": checks.optional_number(
                "checkpoint_interval_hours", self.checkpoint_interval_hours
            ),
            "interruption_rate_per_node_hour": checks.optional_number(
                "interruption_rate_per_node_hour", self.interruption_rate_per_node_hour, allow_zero=True
            ),
            "checkpoint_storage_gbps": checks.optional_number("checkpoint_storage_gbps", self.checkpoint_storage_gbps),
            "spot_warning_hours": checks.optional_number("spot_warning_hours", self.spot_warning_hours),
            "restart_overhead_hours": checks.number(
                "restart_overhead_hours", self.restart_overhead_hours, allow_zero=True
            ),
            "startup_overhead_hours": checks.number(
                "startup_overhead_hours", self.startup_overhead_hours, allow_zero=True
            ),
            _DEFAULT_RATE_FIELD: checks.number(
                _DEFAULT_RATE_FIELD,
                DEFAULT_INTERRUPTION_RATE if self.default_interruption_rate is None else self.default_interruption_rate,
                allow_zero=True,
            ),
            "max_nodes": checks.whole("max_nodes", self.max_nodes, most=MAX_NODES),
            "top": checks.optional_whole("top", self.top),
            "utilisation": utilisation_value(self.utilisation),
        }
        for name, value in numbers.items():
            object.__setattr__(self, name, value)
        if not isinstance(self.model, ModelOptions):
            raise InputError(f"must be ModelOptions, got {type(self.model).__name__}", field="model")

    @property
    def interruption_rate(self) -> float:
        """The spot reclaim rate per node-hour for offerings without an interruption label, default filled in."""
        return float(self.default_interruption_rate or 0.0)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names a caller may pass as keyword arguments (``model`` is built from its own three)."""
        return tuple(f.name for f in fields(cls) if f.name != "model")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> tuple[RankRequest, dict[str, Any]]:
        """A request from keyword arguments, and the arguments it did not take (workload fields and the like)."""
        own = {k: v for k, v in options.items() if k in cls.field_names()}
        model_names = {f.name for f in fields(ModelOptions)}
        model = ModelOptions(**{k: v for k, v in options.items() if k in model_names})
        rest = {k: v for k, v in options.items() if k not in own and k not in model_names}
        return cls(**own, model=model), rest
