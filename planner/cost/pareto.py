"""The Pareto front of (cost, time) options: those no other option beats on both."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def pareto_mask(
    cost: npt.NDArray[np.float64], time: npt.NDArray[np.float64], *, by_cost: bool = False
) -> npt.NDArray[np.bool_]:
    """True where no other option is at most as expensive and as slow and strictly better on one of them.

    Sort by (cost, time) and keep each point faster than every point before it; identical points share a flag.
    ``by_cost``: the options are already in that order (a ranking by cost), which saves the sort.
    """
    import numpy as np

    n = len(cost)
    if n == 0:
        return np.zeros(0, dtype=bool)
    order = np.arange(n) if by_cost else np.lexsort((time, cost))
    c, t = cost[order], time[order]
    new_point = np.ones(n, dtype=bool)
    new_point[1:] = (c[1:] != c[:-1]) | (t[1:] != t[:-1])
    point_id = np.cumsum(new_point) - 1
    pt = t[new_point]
    best_before = np.empty(len(pt))
    best_before[0] = np.inf
    best_before[1:] = np.minimum.accumulate(pt)[:-1]
    # Among distinct points sorted by cost, a point is dominated exactly when an earlier (no more expensive)
    # point is at least as fast.
    on_front = pt < best_before
    mask = np.empty(n, dtype=bool)
    mask[order] = on_front[point_id]
    return mask
