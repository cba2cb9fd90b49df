"""The headline: an option a buyer can act on, said with what stops it, its price's age, and the year rule."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from factories import make_offer

from cost.fakes import FakeEstimator, small_catalog
from planner.api import rank
from planner.cost.explain import YEAR_HOURS
from planner.cost.result import SPOT_FLOOR_NOTE, UNCALIBRATED_NOTE


def _at_floor(catalog: pd.DataFrame, zone: str = "use1-az6") -> pd.DataFrame:
    catalog.loc[catalog["zone"] == zone, "flags"] = "spot_at_floor"
    return catalog


def test_a_spot_price_at_the_floor_is_passed_over_for_the_best_option_without_one() -> None:
    # p5.48xlarge in us-east-1 is cheapest on spot in use1-az6, at the floor: the headline skips it and says why.
    catalog = _at_floor(small_catalog())
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9)
    first = result.table.iloc[0]
    assert first["pricing"] == "spot" and SPOT_FLOOR_NOTE in first["notes"]
    best = result.best()
    assert best is not None and int(best["rank"]) > 1 and SPOT_FLOOR_NOTE not in best["notes"]
    assert not (best["pricing"] == "spot" and best["spot_risky"])
    lines = result.headline_lines()
    assert lines[0].startswith(f"best {best['pricing']}: ") and f"${best['cost_usd']:,.0f}" in lines[0]
    assert SPOT_FLOOR_NOTE not in lines[0]
    # One line names what was passed over and why.
    assert lines[1].startswith(f"passed over #1 aws p5.48xlarge spot (us-east-1) ${first['cost_usd']:,.0f}: ")
    assert lines[1].endswith("at the spot floor")


def test_a_headline_with_nothing_better_says_floor_and_risk_in_its_first_words() -> None:
    # Spot only, every spot price at the floor: the headline is still a floor price, and leads with it.
    catalog = small_catalog()
    catalog["flags"] = "spot_at_floor"
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, pricing="spot")
    line = result.headline_lines()[0]
    assert line.startswith("best spot, AT THE SPOT FLOOR: ") and line.count(SPOT_FLOOR_NOTE) == 1
    # A RISKY run (a GPU so often reclaimed that the high scenario more than doubles it) leads with RISKY.
    risky = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e10, pricing="spot",
                 gpu="A100-40GB", interruption_rate_per_node_hour=2.0)  # fmt: skip
    row = risky.best()
    assert row is not None and row["spot_risky"]
    assert risky.headline_lines()[0].startswith("best spot, RISKY: ")


def test_an_uncalibrated_gpu_in_the_headline_says_so() -> None:
    fake = FakeEstimator()

    def estimator(*args: Any, **kwargs: Any) -> Any:
        return dataclasses.replace(fake(*args, **kwargs), gpu_calibrated=args[1] != "H100-SXM")

    result = rank("llama-3-8b", catalog=small_catalog(), estimator=estimator, tokens=2e9)
    best = result.best()
    assert best is not None and best["gpu"] == "H100-SXM"
    assert f"H100-SXM: {UNCALIBRATED_NOTE}" in result.headline_lines()[0]


def test_the_headline_gives_its_price_date_when_older_than_two_weeks() -> None:
    now = datetime.now(UTC)
    for days, said in ((10, False), (20, True)):
        catalog = small_catalog()
        stamp = (now - timedelta(days=days)).isoformat(timespec="seconds")
        catalog["as_of"] = stamp
        result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9)
        assert result.table["price_age_days"].to_numpy() == pytest.approx(days, abs=0.01)
        line = result.headline_lines()[0]
        assert line.endswith(f"; price from {stamp[:10]}, {days} days old") == said, line


def test_an_answer_past_a_year_says_no_option_finishes_within_one_and_what_would() -> None:
    # 5e12 tokens on 8 x H100 at 10,000 tokens/s each: 17,361 h on one node; the fake model's fourth node gets it
    # under a year.
    result = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=5e12, max_nodes=2)
    assert result.year_note is not None
    assert result.headline_lines()[0] == result.year_note
    assert result.year_note.startswith("no option finishes within a year: the fastest on up to 2 nodes takes 10,851 h")
    assert "on up to 4 nodes one would (a deadline of 8,766 h keeps only those)" in result.year_note
    wider = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=5e12, max_nodes=4)
    assert wider.table["time_to_solution_hours"].min() <= YEAR_HOURS
    # Beyond what any node count reaches: how much less work would finish within a year.
    far = rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=5e13, max_nodes=1)
    assert far.year_note is not None and "and on up to 64 nodes" in far.year_note
    assert "less work would: about 10% of the work" in far.year_note
    # Within a year: nothing said.
    assert rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9).year_note is None


def test_a_spot_price_far_below_its_other_regions_is_marked_and_passed_over() -> None:
    """Issue 38: Google europe-north1 A3 spot at 0.27x its type's median across regions ranked first, unflagged."""
    from planner.cost.result import SPOT_FAR_BELOW_NOTE, caveat_marks

    regions = {"us-central1": 6.3, "us-east4": 4.5, "europe-west4": 5.5, "europe-north1": 1.28}
    catalog = pd.DataFrame(
        [
            make_offer(provider="gcp", instance_type="a3-highgpu-8g", region=region, zone=f"{region}-a",
                       network_gbps=200.0, price_usd_per_hour=88.49, spot_price_usd_per_hour=8 * spot,
                       spot_interruption=None)
            for region, spot in regions.items()
        ]
    )  # fmt: skip
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, pricing="spot")
    table = result.table
    low = table[table["notes"].str.contains(SPOT_FAR_BELOW_NOTE, regex=False)]
    assert list(low["region"]) == ["europe-north1"]  # 0.27x the median; the others are within 0.8-1.2x
    assert int(low["rank"].iloc[0]) == 1 and caveat_marks(low).iloc[0] == " LOW"
    best = result.best()
    assert best is not None and best["region"] == "us-east4"
    assert "far below its other regions" in result.headline_lines()[1]  # the passed-over line says why
    # With two regions there is no median to trust: nothing is marked.
    two = rank("llama-3-8b", catalog=catalog.iloc[[0, 3]], estimator=FakeEstimator(), tokens=2e9, pricing="spot")
    assert not two.table["notes"].str.contains(SPOT_FAR_BELOW_NOTE, regex=False).any()


def test_caveat_marks_and_actionable_read_each_option_s_own_note() -> None:
    # Notes are judged once per distinct text and gathered back: each row keeps its own answer, on any index.
    from planner.cost.result import SPOT_FAR_BELOW_NOTE, actionable, caveat_marks

    options = pd.DataFrame(
        {
            "pricing": ["spot", "spot", "on-demand", "spot", "spot"],
            "spot_risky": [False, True, False, False, False],
            "notes": [f"over 72 h; {SPOT_FLOOR_NOTE}", None, SPOT_FLOOR_NOTE, SPOT_FAR_BELOW_NOTE, "over 72 h"],
        },
        index=[7, 3, 11, 0, 5],
    )
    assert list(caveat_marks(options)) == [" FLOOR", " RISKY", "", " LOW", ""]
    safe = actionable(options)
    assert list(safe.index) == [7, 3, 11, 0, 5] and list(safe) == [False, False, True, False, True]


@pytest.mark.parametrize("safe_at", [0, 255, 256, 700, None])
def test_the_headline_spot_option_is_the_first_actionable_one_however_far_down(safe_at: int | None) -> None:
    # The headline looks for it a block of options at a time: the answer must not depend on where a block ends.
    from planner.cost.result import RankResult

    n = 800
    table = pd.DataFrame(
        {
            "rank": range(1, n + 1),
            "pricing": ["on-demand" if i == 3 else "spot" for i in range(n)],
            "spot_risky": [i != safe_at for i in range(n)],
            "notes": [None if i % 2 else "" for i in range(n)],
        }
    )
    result = RankResult(table=table, excluded=pd.DataFrame(), assumptions=[], catalog_as_of=None, details=table)
    on_demand, spot = result.headline()
    assert on_demand is not None and int(on_demand["rank"]) == 4
    # With no actionable spot option, the best spot option is the first.
    assert spot is not None and int(spot["rank"]) == (safe_at if safe_at is not None else 0) + 1


def test_price_sources_are_each_provider_s_distinct_sources_in_catalog_order() -> None:
    # Read from the provider and source codes: each pair once, in the order the catalog first lists it.
    catalog = pd.DataFrame(
        [
            make_offer(provider="gcp", region="us-central1", zone="us-central1-a", price_source="sheet"),
            make_offer(price_source="bulk"),
            make_offer(zone="use1-az6", price_source="api"),
            make_offer(provider="gcp", region="us-east4", zone="us-east4-a", price_source="sheet"),
            make_offer(region="eu-west-1", zone="euw1-az1", price_source="bulk"),
        ]
    )
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9)
    assert result.price_sources == {"gcp": ["sheet"], "aws": ["bulk", "api"]}
