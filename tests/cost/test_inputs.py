"""Bad input gives one clear line (exit code 2); an empty result explains itself; a stale catalog is refused."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from factories import make_offer

from cost.fakes import FakeEstimator, small_catalog
from planner.api import compare, rank
from planner.cost.result import UNCALIBRATED_NOTE
from planner.errors import InputError, StaleCatalogError


def _rank(**options: Any) -> Any:
    options.setdefault("tokens", 2e9)
    return rank("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator(), **options)


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"pricing": "cheap"}, "pricing"),
        ({"by": "price"}, "by"),
        ({"max_nodes": 0}, "max_nodes"),
        ({"max_nodes": 65}, "max_nodes must be at most 64"),
        ({"max_nodes": 1.5}, "max_nodes"),
        ({"top": 0}, "top"),
        ({"deadline_hours": -1.0}, "deadline_hours"),
        ({"budget_usd": 0.0}, "budget_usd"),
        ({"checkpoint_interval_hours": 0.0}, "checkpoint_interval_hours"),
        ({"precision": "int4"}, "precision"),
        ({"provider": "oracle"}, "provider"),
        ({"region": "us-east-9"}, "region"),
        ({"gpu": "H1000"}, "H1000"),
        ({"instance_type": "p9.huge"}, "instance_type"),
        ({"tokens": -5.0}, "tokens"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(options: dict[str, Any], names: str) -> None:
    with pytest.raises(InputError) as caught:
        _rank(**options)
    message = str(caught.value)
    assert names in message
    assert "\n" not in message
    assert caught.value.exit_code == 2


def test_numpy_integers_are_whole_numbers() -> None:
    import numpy as np

    result = _rank(max_nodes=np.int64(2), top=np.int64(3))
    assert len(result.table) == 3
    assert set(result.table["nodes"]) <= {1, 2}


def test_unknown_region_suggests_a_close_one() -> None:
    with pytest.raises(InputError, match="did you mean us-east-1"):
        _rank(region="us-east-2")


def test_missed_deadline_names_the_fastest_option() -> None:
    result = _rank(deadline_hours=2.0, max_nodes=2)
    assert result.empty and result.table.empty
    # Fastest: 16 x H100 at 10,000 tokens/s each, 80% for the second node: 2e9 / 128,000 / 3600 + 0.25 h = 4.59 h.
    assert result.message == (
        "no offering meets a 2-hour deadline; the fastest takes 4.6 h on aws 2 x p5.48xlarge "
        "(16 x H100-SXM, on-demand, us-east-1)"
    )
    assert "misses the 2 h deadline" in " ".join(result.excluded["reason"])


def test_budget_too_small_names_the_cheapest_option() -> None:
    result = _rank(budget_usd=50.0)
    assert result.message is not None
    assert result.message.startswith("no offering fits a $50.00 budget; the cheapest costs $208.34 on aws p5.48xlarge")


def test_deadline_and_budget_each_possible_but_not_together() -> None:
    # H100 spot costs $208 in 7.6 h (waits for capacity included); H100 on demand $396 in 7.2 h.
    result = _rank(deadline_hours=7.5, budget_usd=250.0)
    assert result.message is not None
    assert result.message.startswith("no offering meets both a 7.5-hour deadline and a $250.00 budget")


def test_filters_that_match_nothing_say_so() -> None:
    result = _rank(gpu="T4")
    assert result.message == "no offering matches gpu T4"


def test_nothing_fits_says_why() -> None:
    result = _rank(gpu="L4")
    # The offering that needs the fewest instances to hold the job is named, with the model's reason.
    assert result.message == (
        "no offering can run this job on up to 1 instance; the closest, aws g6.xlarge (1 x L4 each), would hold it "
        "on 5 instances. On 1 instance: needs 120 GiB per GPU"
    )


def test_fp8_on_a_gpu_without_it_is_an_exclusion_with_the_reason() -> None:
    result = _rank(precision="fp8")
    reasons = result.excluded.set_index("instance_type")["reason"]
    assert "fp8 is not supported on A100-40GB" in reasons["p4d.24xlarge"]
    assert set(result.table["gpu"]) == {"H100-SXM"}


def test_an_input_error_from_every_configuration_is_raised() -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise InputError("must be a fraction in (0, 1]", field="efficiency")

    with pytest.raises(InputError, match="efficiency"):
        rank("llama-3-8b", catalog=small_catalog(), estimator=broken, tokens=1e9)


def test_stale_given_catalog_is_refused() -> None:
    catalog = pd.DataFrame([make_offer(as_of="2020-01-01T00:00:00+00:00")])
    with pytest.raises(StaleCatalogError) as caught:
        rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), max_age_hours=24)
    assert caught.value.exit_code == 3
    assert "older than the allowed 24 h" in str(caught.value)


def test_compare_needs_gpus_or_instances() -> None:
    with pytest.raises(InputError, match="gpus") as caught:
        compare("llama-3-8b", catalog=small_catalog(), estimator=FakeEstimator())
    assert caught.value.field == "gpus"


def test_compare_gives_the_best_of_each_choice_and_says_why_one_has_none() -> None:
    result = compare(
        "llama-3-8b", gpus=["H100", "A100-40GB", "L4"], catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9
    )
    table = result.table
    assert list(table["choice"]) == ["H100", "H100", "A100-40GB", "A100-40GB", "L4", "L4"]
    h100_spot = table[(table["choice"] == "H100") & (table["pricing"] == "spot")].iloc[0]
    assert h100_spot["instance_type"] == "p5.48xlarge" and h100_spot["price_usd_per_hour"] == 28.0
    l4 = table[table["choice"] == "L4"]
    assert l4["cost_usd"].isna().all()
    assert (l4["notes"] == "no option: needs 120 GiB per GPU").all()
    h100_on_demand = table[(table["choice"] == "H100") & (table["pricing"] == "on-demand")].iloc[0]
    assert h100_spot["rank"] < h100_on_demand["rank"]
    lines = result.cost_lines(int(h100_spot["rank"]))
    assert sum(line.cost_usd for line in lines) == pytest.approx(h100_spot["cost_usd"])


def test_compare_blames_the_deadline_with_the_choices_own_fastest_option() -> None:
    """One L4 does not fit the fake job (120 GiB), five do but take 272 h with start-up: the deadline is the cause, not memory."""
    result = compare(
        "llama-3-8b",
        gpus=["L4"],
        catalog=small_catalog(),
        estimator=FakeEstimator(),
        tokens=2e9,
        max_nodes=5,
        deadline_hours=100.0,
        pricing="on-demand",
    )
    note = str(result.table.iloc[0]["notes"])
    assert note.startswith("no option: misses the 100 h deadline; the fastest takes 272 h on aws 5 x g6.xlarge"), note


def test_compare_blames_the_budget_with_the_cheapest_option_within_the_deadline() -> None:
    result = compare(
        "llama-3-8b", gpus=["H100"], catalog=small_catalog(), estimator=FakeEstimator(), tokens=2e9, budget_usd=1.0
    )
    notes = list(result.table["notes"])
    assert all(n.startswith("no option: over the $1.00 budget; the cheapest costs $") for n in notes), notes


def test_capacity_readings_filter_the_ranking_and_warn_in_the_headline() -> None:
    """Lambda reports capacity; the best option without capacity is flagged, and available_only drops it."""
    checked = "2026-11-20T06:00:00+00:00"
    lam = [
        make_offer(provider="lambda", instance_type="gpu_8x_h100_sxm5", region=region, zone="", network_gbps=None,
                   price_usd_per_hour=price, spot_price_usd_per_hour=None, spot_interruption=None,
                   available_now=now, available_checked_at=checked)
        for region, price, now in (("us-east-1", 20.0, "false"), ("us-west-1", 22.0, "true"))
    ]  # fmt: skip
    catalog = pd.concat([small_catalog(), pd.DataFrame(lam)], ignore_index=True)
    result = rank("llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, pricing="on-demand")
    best = result.table.iloc[0]
    assert (best["provider"], best["available_now"]) == ("lambda", "false")
    headline = result.headline_lines()[0]
    assert "NO CAPACITY NOW in us-east-1" in headline and "the best that may have capacity is #2" in headline
    only = rank(
        "llama-3-8b", catalog=catalog, estimator=FakeEstimator(), tokens=2e9, pricing="on-demand", available_only=True
    )
    assert set(only.table["available_now"]) == {"true"}
    assert any("no capacity figure" in note for note in only.notes)


def test_options_on_an_uncalibrated_gpu_say_so_in_their_notes() -> None:
    import dataclasses

    fake = FakeEstimator()

    def estimator(*args: Any, **kwargs: Any) -> Any:
        answer = fake(*args, **kwargs)
        return dataclasses.replace(answer, gpu_calibrated=args[1] != "A100-40GB")

    result = rank("llama-3-8b", catalog=small_catalog(), estimator=estimator, tokens=2e9)
    marked = result.table["notes"].str.contains(UNCALIBRATED_NOTE, regex=False)
    assert (marked == (result.table["gpu"] == "A100-40GB")).all()
    assert marked.any()
    assert not result.table["notes"].str.contains("held-out").any()

    # Where runs kept out of the fit measured that GPU, its options say what they found beside the number.
    def checked(*args: Any, **kwargs: Any) -> Any:
        answer = estimator(*args, **kwargs)
        return dataclasses.replace(answer, held_out_error_pct=None if answer.gpu_calibrated else 29.0)

    result = rank("llama-3-8b", catalog=small_catalog(), estimator=checked, tokens=2e9)
    found = result.table["notes"].str.contains("held-out runs on this GPU: 29% slower than this model gives")
    assert (found == (result.table["gpu"] == "A100-40GB")).all() and found.any()
