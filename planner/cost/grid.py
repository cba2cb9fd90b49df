"""Time and billed hours per (family, nodes, pricing, spot bucket): everything about an option but its price.

The grid is small (families x nodes x 2 x 6), so the spot and billing arithmetic runs once per cell; options
then gather their cell and multiply by their own price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.cost.families import Families, ModelGrid
from planner.cost.lines import SPOT_BUCKETS, billed_hours, billing_steps, spot_rate_table, spot_wall_hours

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

# Spot buckets of the grid: the Spot Advisor ones, then "no data" (the default rate).
N_BUCKETS = len(SPOT_BUCKETS) + 1


@dataclass(frozen=True)
class CostGrid:
    """Flat arrays over cells; ``cell()`` gives the index. NaN/inf where the model or spot gives no answer."""

    max_nodes: int
    training_hours: FloatArray  # the model's time to solution
    work_hours: FloatArray  # training + start-up
    wall_hours: FloatArray  # expected, spot rework included
    interruptions: FloatArray
    billed_hours: FloatArray  # per instance, rounded to the cloud's billing
    billed_low_hours: FloatArray
    billed_high_hours: FloatArray
    energy_kwh: FloatArray
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


def cost_grid(
    fams: Families,
    model: ModelGrid,
    *,
    startup_overhead_hours: float,
    checkpoint_interval_hours: float,
    restart_overhead_hours: float,
    default_interruption_rate: float,
) -> CostGrid:
    """Expected wall-clock and billed hours (with their low/high band) of every cell."""
    import numpy as np

    max_nodes = model.hours.shape[1]
    shape = (len(fams), max_nodes, 2, N_BUCKETS)

    def spread(per_family_node: FloatArray) -> FloatArray:
        return np.broadcast_to(per_family_node[:, :, None, None], shape)

    increment_s, minimum_s = billing_steps([str(p) for p in fams.provider])
    inc = np.broadcast_to(increment_s[:, None, None, None], shape)
    least = np.broadcast_to(minimum_s[:, None, None, None], shape)
    rates = spot_rate_table(default_interruption_rate)  # (bucket, low/expected/high)
    # On-demand cells (spot axis 0) are never interrupted.
    spot_axis = np.array([0.0, 1.0])[None, None, :, None]
    rate = [np.broadcast_to(spot_axis * rates[:, k][None, None, None, :], shape) for k in range(3)]
    nodes = np.broadcast_to(np.arange(1, max_nodes + 1, dtype=float)[None, :, None, None], shape)
    ckpt, restart = checkpoint_interval_hours, restart_overhead_hours

    hours = spread(model.hours)
    work = hours + startup_overhead_hours
    wall, interruptions = spot_wall_hours(work, rate[1], nodes, ckpt, restart)
    wall_low, _ = spot_wall_hours(spread(model.hours_low) + startup_overhead_hours, rate[0], nodes, ckpt, restart)
    wall_high, _ = spot_wall_hours(spread(model.hours_high) + startup_overhead_hours, rate[2], nodes, ckpt, restart)
    wall_high = np.where(np.isfinite(wall_high), wall_high, wall)
    finishes = np.isfinite(wall)
    billed = billed_hours(np.where(finishes, wall, 0.0), inc, least)
    billed_low = billed_hours(np.where(finishes, np.minimum(wall_low, wall), 0.0), inc, least)
    billed_high = billed_hours(np.where(finishes, wall_high, 0.0), inc, least)
    # Energy of the work actually done, rework included.
    with np.errstate(invalid="ignore", divide="ignore"):
        energy = spread(model.energy_kwh) * ((wall - startup_overhead_hours) / hours)
    return CostGrid(
        max_nodes=max_nodes,
        training_hours=hours.reshape(-1),
        work_hours=work.reshape(-1),
        wall_hours=wall.reshape(-1),
        interruptions=interruptions.reshape(-1),
        billed_hours=billed.reshape(-1),
        billed_low_hours=billed_low.reshape(-1),
        billed_high_hours=billed_high.reshape(-1),
        energy_kwh=energy.reshape(-1),
        modelled=~np.isnan(hours).reshape(-1),
        finishes=finishes.reshape(-1),
    )
