"""Time, billed hours and energy per (family, nodes, pricing, spot label): everything about an option but its price.

The grid is small (families x nodes x 2 x labels), so the spot, billing and energy arithmetic runs once per cell;
options then gather their cell and multiply by their own price. Each spot cell is worked out under three
scenarios (low, expected, high hazard, with the model's fast and slow ends): the cost band and the risk flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner import energy
from planner.cost import spot
from planner.cost.families import Families, ModelGrid
from planner.cost.lines import SPOT_BUCKETS, billed_hours, billing_steps

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from planner.cost.request import RankRequest

    FloatArray = npt.NDArray[np.float64]

# Spot labels of the grid: the published ones (Spot Advisor buckets, Azure eviction bands), then "no label".
N_BUCKETS = len(SPOT_BUCKETS) + 1


@dataclass(frozen=True)
class CostGrid:
    """Flat arrays over cells; ``cell()`` gives the index. NaN/inf where the model or spot gives no answer."""

    max_nodes: int
    training_hours: FloatArray  # the model's time to solution
    work_hours: FloatArray  # training + start-up
    wall_hours: FloatArray  # expected: start-up + held hours + unbilled waits for capacity
    wall_low_hours: FloatArray
    wall_high_hours: FloatArray  # NaN where the high scenario would never finish
    interruptions: FloatArray
    p_no_interruption: FloatArray
    checkpoint_interval_hours: FloatArray  # NaN where no checkpoint is needed (on demand, or one segment)
    checkpoint_write_hours: FloatArray  # total hours spent writing checkpoints
    wait_hours: FloatArray  # expected unbilled waits for capacity
    billed_hours: FloatArray  # per instance, rounded to the cloud's billing
    billed_low_hours: FloatArray
    billed_high_hours: FloatArray
    energy_kwh: FloatArray  # facility energy: node power x PUE x held hours
    energy_low_kwh: FloatArray
    energy_high_kwh: FloatArray
    spot_risky: npt.NDArray[np.bool_]  # the high scenario more than doubles time or cost, or never finishes
    modelled: npt.NDArray[np.bool_]
    finishes: npt.NDArray[np.bool_]

    def cell(
        self, family: npt.NDArray[np.int64], nodes: int, spot: int, bucket: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """Cell index of options of ``family`` on ``nodes`` instances, priced on spot (1) or on demand (0)."""
        result: npt.NDArray[np.int64] = ((family * self.max_nodes + nodes - 1) * 2 + spot) * N_BUCKETS + bucket
        return result

    def nodes_of(self, cell: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Instances of each cell."""
        result: npt.NDArray[np.int64] = (cell // (N_BUCKETS * 2)) % self.max_nodes + 1
        return result

    def spot_of(self, cell: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """1 for spot cells, 0 for on-demand ones."""
        result: npt.NDArray[np.int64] = (cell // N_BUCKETS) % 2
        return result


def bucket_bands(providers: npt.NDArray[np.object_]) -> list[list[str]]:
    """The hazard band of each (family, spot label), the last label being "none published"."""
    labels: list[str | None] = [*SPOT_BUCKETS, None]
    return [[spot.band_for(str(p), label) for label in labels] for p in providers]


def hazard_table(fams: Families, request: RankRequest) -> FloatArray:
    """Reclaims per node-hour, shape (family, label, scenario low/expected/high).

    The user's own rate (``interruption_rate_per_node_hour``) replaces every band; ``default_interruption_rate``
    rescales the default band. Either keeps the default band's spread between its low and high scenarios.
    """
    import numpy as np

    bands = spot.hazard_bands()
    default = bands[spot.default_band()]
    spread = np.array(default.rates()) / default.expected
    table = np.array([[bands[b].rates() for b in row] for row in bucket_bands(fams.provider)], dtype=float)
    table = table.reshape(len(fams), N_BUCKETS, 3)
    if request.interruption_rate_per_node_hour is not None:
        table[:, :, :] = request.interruption_rate_per_node_hour * spread
    else:
        table[:, -1, :] = request.interruption_rate * spread
    result: FloatArray = table
    return result


def _effective_tdp_w(fams: Families, expected_factor: float) -> FloatArray:
    """Each family's GPU TDP, W; where a family states its wall power (an owned server), the TDP that gives that
    power at the expected node factor, so its energy band keeps the factor's spread around the stated figure."""
    import numpy as np

    tdp_w = energy.gpu_tdp_w(list(fams.gpu))
    if fams.node_power_kw is None:
        return tdp_w
    stated: FloatArray = fams.node_power_kw * 1000.0 / (fams.gpu_count * expected_factor)
    result: FloatArray = np.where(np.isnan(stated), tdp_w, stated)
    return result


def cost_grid(
    fams: Families, model: ModelGrid, request: RankRequest, *, trained_params: float = 0.0, frozen_params: float = 0.0
) -> CostGrid:
    """Expected wall-clock, billed hours and energy (with their low/high band) of every cell.

    The request's ``checkpoint_interval_hours`` None picks the Young/Daly interval per cell; ``trained_params`` (the
    parameters that train) size the checkpoint, written at ``checkpoint_storage_gbps`` per node, and
    ``frozen_params`` (LoRA's base model) are read back whole by every node on each restart.
    """
    import numpy as np

    startup_overhead_hours = request.startup_overhead_hours
    checkpoint_interval_hours = request.checkpoint_interval_hours

    constants = spot.spot_model()
    max_nodes = model.hours.shape[1]
    shape = (len(fams), max_nodes, 2, N_BUCKETS)

    def spread(per_family_node: FloatArray) -> FloatArray:
        return np.broadcast_to(per_family_node[:, :, None, None], shape)

    def per_family(values: FloatArray) -> FloatArray:
        return np.broadcast_to(np.asarray(values, dtype=float)[:, None, None, None], shape)

    increment_s, minimum_s = billing_steps([str(p) for p in fams.provider])
    inc = np.broadcast_to(increment_s[:, None, None, None], shape)
    least = np.broadcast_to(minimum_s[:, None, None, None], shape)
    nodes = np.broadcast_to(np.arange(1, max_nodes + 1, dtype=float)[None, :, None, None], shape)
    # On-demand cells (spot axis 0) are never interrupted.
    on_spot = np.broadcast_to(np.array([0.0, 1.0])[None, None, :, None], shape)
    rates = hazard_table(fams, request)
    hazard = [
        spot.job_hazard(on_spot * rates[:, None, None, :, k], nodes, constants.correlation_exponent) for k in range(3)
    ]
    asked_gbps = request.checkpoint_storage_gbps
    gbps = constants.checkpoint_storage_gbps if asked_gbps is None else asked_gbps
    checkpoint = spot.checkpoint_hours(trained_params, nodes, gbps, constants.checkpoint_bytes_per_param)
    reload = spot.reload_hours(frozen_params, gbps, constants.frozen_weight_bytes_per_param)
    # Provisioning and framework start-up, then read the checkpoint back (and a LoRA run's frozen base model).
    restart = request.restart_overhead_hours + checkpoint + reload
    if checkpoint_interval_hours is None:
        interval = spot.young_daly_interval(checkpoint, hazard[1])
    else:
        interval = np.where(hazard[1] > 0, checkpoint_interval_hours, np.inf)

    hours = spread(model.hours)
    runs = [
        spot.run_on_spot(spread(h), hazard[k], interval, checkpoint, restart, constants.capacity_wait_hours[k])
        for k, h in enumerate((model.hours_low, model.hours, model.hours_high))
    ]
    low, mid, high = runs

    def wall_of(run: spot.SpotRun) -> FloatArray:
        result: FloatArray = startup_overhead_hours + run.exposed_hours + run.wait_hours
        return result

    wall = wall_of(mid)
    finishes = np.isfinite(wall)
    wall_low = np.minimum(wall_of(low), wall)
    wall_high = np.maximum(wall_of(high), wall)
    high_finishes = np.isfinite(wall_high)

    def billed(exposed: FloatArray, ok: npt.NDArray[np.bool_]) -> FloatArray:
        return billed_hours(np.where(ok, startup_overhead_hours + exposed, 0.0), inc, least)

    billed_mid = billed(mid.exposed_hours, finishes)
    billed_low = np.minimum(billed(low.exposed_hours, finishes), billed_mid)
    billed_high = np.where(high_finishes, np.maximum(billed(high.exposed_hours, high_finishes), billed_mid), np.nan)
    # Spot risk: the high scenario against the same run without interruptions (the model's slow end in both).
    free = startup_overhead_hours + spread(model.hours_high)
    with np.errstate(invalid="ignore", divide="ignore"):
        risky = (on_spot > 0) & (
            ~high_finishes
            | (wall_high > constants.risky_ratio * free)
            | (billed_high > constants.risky_ratio * billed(spread(model.hours_high), finishes))
        )

    # Facility energy of the held hours (work, checkpoints, rework, restarts), at the fitted node factor's band.
    factor = energy.node_factor()
    tdp_w = per_family(_effective_tdp_w(fams, factor.expected))
    pue_of = energy.facility_pue(list(fams.provider))
    if fams.pue is not None:  # an owned server's own PUE
        pue_of = np.where(np.isnan(fams.pue), pue_of, fams.pue)
    pue = per_family(pue_of)
    fleet_gpus = per_family(fams.gpu_count) * nodes

    def facility_kwh(at: float, hours: FloatArray) -> FloatArray:
        result: FloatArray = energy.node_energy_kwh(tdp_w, fleet_gpus, hours, at) * pue
        return result

    return CostGrid(
        max_nodes=max_nodes,
        training_hours=hours.reshape(-1),
        work_hours=(hours + startup_overhead_hours).reshape(-1),
        wall_hours=wall.reshape(-1),
        wall_low_hours=wall_low.reshape(-1),
        wall_high_hours=np.where(high_finishes, wall_high, np.nan).reshape(-1),
        interruptions=mid.interruptions.reshape(-1),
        p_no_interruption=mid.p_no_interruption.reshape(-1),
        checkpoint_interval_hours=np.where(mid.checkpoint_write_hours > 0, interval, np.nan).reshape(-1),
        checkpoint_write_hours=mid.checkpoint_write_hours.reshape(-1),
        wait_hours=mid.wait_hours.reshape(-1),
        billed_hours=billed_mid.reshape(-1),
        billed_low_hours=billed_low.reshape(-1),
        billed_high_hours=billed_high.reshape(-1),
        energy_kwh=facility_kwh(factor.expected, mid.exposed_hours).reshape(-1),
        energy_low_kwh=facility_kwh(factor.low, np.minimum(low.exposed_hours, mid.exposed_hours)).reshape(-1),
        energy_high_kwh=np.where(high_finishes, facility_kwh(factor.high, high.exposed_hours), np.nan).reshape(-1),
        spot_risky=np.asarray(risky).reshape(-1),
        modelled=~np.isnan(hours).reshape(-1),
        finishes=finishes.reshape(-1),
    )
