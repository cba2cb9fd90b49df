"""The offers table's order: one lexsort over key arrays gives pandas' multi-key sort, missing values last."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.api import load_catalog
from planner.catalog.query import SORT_KEYS, _order


@pytest.mark.parametrize("sort", sorted(SORT_KEYS))
@pytest.mark.parametrize("spot", [False, True])
def test_the_order_is_pandas_multi_key_sort(sort: str, spot: bool) -> None:
    frame = load_catalog().reset_index(drop=True)
    frame["price_per_gpu_usd_per_hour"] = frame["price_usd_per_hour"] / frame["gpu_count"]
    frame["spot_price_per_gpu_usd_per_hour"] = frame["spot_price_usd_per_hour"] / frame["gpu_count"]
    column, ascending = SORT_KEYS[sort]
    if spot and sort in ("price", "price-per-gpu"):
        column = "spot_price_usd_per_hour" if sort == "price" else "spot_price_per_gpu_usd_per_hour"
    frame.loc[frame.index[::7], "zone"] = None  # missing zones sort last, as pandas puts them
    expected = frame.sort_values(
        [column, "provider", "region", "instance_type", "zone"],
        ascending=[ascending, True, True, True, True],
        na_position="last",
        kind="stable",
    ).index.to_numpy()
    got = _order(frame, column, ascending)
    keys = [column, "provider", "region", "instance_type", "zone"]
    # Rows equal on every key may come in either order; the keys themselves must match row for row.
    pd.testing.assert_frame_equal(
        frame.loc[expected, keys].reset_index(drop=True), frame.take(got)[keys].reset_index(drop=True)
    )
    assert len(np.unique(got)) == len(frame)
