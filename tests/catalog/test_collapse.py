"""collapse_zones, computed on key arrays, keeps exactly the rows the frame-wide pandas recipe it replaced kept."""

from __future__ import annotations

from typing import Any

import pandas as pd
from factories import make_offer
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog.query import collapse_zones, local_zones

rows = st.lists(
    st.fixed_dictionaries(
        {
            "provider": st.sampled_from(["aws", "gcp"]),
            "instance_type": st.sampled_from(["p5.48xlarge", "p4d.24xlarge"]),
            "region": st.sampled_from(["us-west-2", "eu-west-1"]),
            "zone": st.sampled_from(["", "a", "b", "usw2-lax1-az1", "usw2-den1-az1"]),
            "price_usd_per_hour": st.one_of(st.none(), st.sampled_from([10.0, 20.0, 30.0])),
            "spot_price_usd_per_hour": st.one_of(st.none(), st.sampled_from([1.0, 2.0, 3.0])),
        }
    ),
    max_size=30,
)


def _specification(frame: pd.DataFrame) -> pd.DataFrame:
    """Standard zones before Local Zones, then the cheapest spot, then on-demand price (missing last); the first row
    of each (provider, instance type, region) in that order, in catalog order."""
    keys = frame[["provider", "instance_type", "region", "spot_price_usd_per_hour", "price_usd_per_hour"]].assign(
        local=local_zones(frame["zone"])
    )
    kept = (
        keys.sort_values(["local", "spot_price_usd_per_hour", "price_usd_per_hour"], na_position="last", kind="stable")
        .drop_duplicates(["provider", "instance_type", "region"], keep="first")
        .index.sort_values()
    )
    return frame.loc[kept]


@settings(max_examples=150, deadline=None)
@given(rows)
def test_collapse_keeps_the_rows_of_its_specification(specs: list[dict[str, Any]]) -> None:
    frame = pd.DataFrame([make_offer(**spec) for spec in specs])
    if frame.empty:
        return
    frame = frame.drop_duplicates(["provider", "instance_type", "region", "zone"])  # as select_offers hands it over
    assert collapse_zones(frame).index.tolist() == _specification(frame).index.tolist()
