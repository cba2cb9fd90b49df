"""Commitment arithmetic: golden cases from published prices, the break-even property, the plan mix, bad input."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.cost.commitment import (
    DEFAULT_UTILISATION,
    amortised_usd_per_hour,
    best_commitments,
    break_even,
    committed_catalog,
    committed_run_cost,
    per_used_hour,
    plan_mix,
    term_years,
    utilisation_value,
)
from planner.errors import InputError
from tests.factories import make_offer

# Google Cloud a2-highgpu-1g in us-central1 (Cyclenerd pricing.yml @0166a59e, the bundled rows): on demand
# $3.673385/h; committed use $1,689.3711392 a month for 1 year and $938.56707798 for 3 years, over 730 hours.
GCP_ON_DEMAND = 3.673385
GCP_1Y, GCP_3Y = 1689.3711392 / 730, 938.56707798 / 730

# AWS m5.large in eu-north-1 (Stockholm), Linux, standard reserved instances, as a year's total cost (AWS's table
# quoted in the SAP-C02 study guide at acedexam.com, "Designing for cost efficiency", Table 10.1): 1 year no upfront
# $560.64, all upfront $525; 3 years all upfront $1,008.
AWS_RI_1Y_NO_UPFRONT_YEAR, AWS_RI_1Y_ALL_UPFRONT, AWS_RI_3Y_ALL_UPFRONT = 560.64, 525.0, 1008.0


def test_gcp_cud_golden() -> None:
    # 1,689.3711392 / 730 = 2.3142070 $/h; against $3.673385 on demand that is 63.0% (Google's 37% off).
    one = amortised_usd_per_hour(0.0, GCP_1Y, 1)
    assert one == pytest.approx(2.3142070, abs=1e-7)
    assert break_even(one, GCP_ON_DEMAND) == pytest.approx(0.63, abs=5e-5)
    # 3 years: 938.56707798 / 730 = 1.2857083 $/h, 35.0% of on demand.
    assert break_even(amortised_usd_per_hour(0.0, GCP_3Y, 3), GCP_ON_DEMAND) == pytest.approx(0.35, abs=5e-5)
    # At 70% utilisation an hour used costs 2.3142070 / 0.7 = 3.3060100.
    assert per_used_hour(one, 0.7) == pytest.approx(3.3060100, abs=1e-7)


def test_aws_reserved_instance_golden() -> None:
    # No upfront: the year's $560.64 is 8,760 hourly payments of $0.064.
    assert amortised_usd_per_hour(0.0, AWS_RI_1Y_NO_UPFRONT_YEAR / 8760, 1) == pytest.approx(0.064, abs=1e-9)
    # All upfront: $525 spread over 8,760 hours is $0.0599315/h; $1,008 over 26,280 hours is $0.0383562/h.
    assert amortised_usd_per_hour(AWS_RI_1Y_ALL_UPFRONT, 0.0, 1) == pytest.approx(0.0599315, abs=1e-7)
    assert amortised_usd_per_hour(AWS_RI_3Y_ALL_UPFRONT, 0.0, 3) == pytest.approx(0.0383562, abs=1e-7)
    # Partial upfront: fee and hourly part add (a $300 fee plus $0.03/h is 300/8760 + 0.03 = $0.0642466/h).
    assert amortised_usd_per_hour(300.0, 0.03, 1) == pytest.approx(0.0642466, abs=1e-7)


def test_azure_reservation_is_the_term_total_over_its_hours() -> None:
    # An Azure reservation item's retailPrice is the whole term's price (illustrative $100,000 for 3 years):
    # stored as the upfront fee, it costs 100000 / 26280 = $3.8051750 an hour of the term.
    assert amortised_usd_per_hour(100_000.0, 0.0, 3) == pytest.approx(3.8051750, abs=1e-7)


def test_a_run_costs_its_share_at_the_utilisation() -> None:
    # A run of 10 instance-hours on demand at $3.673385/h costs $36.73385; committed at 50% utilisation each used
    # hour costs 2 x 2.3142070, so the run costs 10 x 4.628414 = $46.28414: dearer than on demand.
    assert committed_run_cost(36.73385, GCP_ON_DEMAND, GCP_1Y, 0.5) == pytest.approx(46.28414, abs=1e-4)
    assert committed_run_cost(36.73385, GCP_ON_DEMAND, GCP_1Y, 1.0) == pytest.approx(23.14207, abs=1e-4)


@given(
    hourly=st.floats(0.01, 200.0),
    upfront=st.floats(0.0, 1e6),
    term=st.sampled_from([1, 3]),
    markup=st.floats(1.01, 20.0),
    hours=st.floats(0.1, 1e4),
)
def test_at_break_even_commitment_and_on_demand_cost_the_same(
    hourly: float, upfront: float, term: int, markup: float, hours: float
) -> None:
    amortised = amortised_usd_per_hour(upfront, hourly, term)
    on_demand = amortised * markup  # the commitment is cheaper per hour, so the break-even is below 1
    point = break_even(amortised, on_demand)
    cost = hours * on_demand
    assert committed_run_cost(cost, on_demand, amortised, point) == pytest.approx(cost, rel=1e-9)
    # Above it the commitment is cheaper, below it dearer.
    assert committed_run_cost(cost, on_demand, amortised, min(1.0, point * 1.01)) < cost
    assert committed_run_cost(cost, on_demand, amortised, point * 0.99) > cost


def test_plan_mix_commits_the_base_load() -> None:
    # 100 runs of 18.6 instance-hours = 1,860 h a month. At 100% utilisation two committed instances give 1,460 h
    # at 730 x 2.3142070 = $1,689.37 each; the remaining 400 h (55% of a month, under the 63% break-even) run on
    # demand at $3.673385/h, which costs less than a third commitment.
    mix = plan_mix(100, 18.6 * GCP_ON_DEMAND, GCP_ON_DEMAND, GCP_1Y, 1.0)
    assert mix.committed_instances == 2
    assert mix.flex_pricing == "on-demand"
    assert mix.flex_instance_hours_per_month == pytest.approx(400.0)
    assert mix.total_usd_per_month == pytest.approx(2 * 1689.3711392 + 400 * GCP_ON_DEMAND, rel=1e-9)
    assert mix.total_usd_per_year == pytest.approx(12 * mix.total_usd_per_month)
    assert mix.all_on_demand_usd_per_month == pytest.approx(1860 * GCP_ON_DEMAND)
    # 2,000 h a month leaves 540 h (74% of a month, above the break-even): a third commitment is cheaper.
    assert plan_mix(100, 20 * GCP_ON_DEMAND, GCP_ON_DEMAND, GCP_1Y, 1.0).committed_instances == 3


def test_plan_mix_never_commits_below_break_even() -> None:
    # At 50% utilisation (below the 63% break-even) committing never pays; nor when spot is cheaper still.
    assert plan_mix(100, 20 * GCP_ON_DEMAND, GCP_ON_DEMAND, GCP_1Y, 0.5).committed_instances == 0
    cheap_spot = plan_mix(100, 20 * GCP_ON_DEMAND, GCP_ON_DEMAND, GCP_1Y, 1.0, spot_cost_usd=20 * 1.2)
    assert cheap_spot.committed_instances == 0 and cheap_spot.flex_pricing == "spot"


def test_break_even_above_one_means_never() -> None:
    assert break_even(5.0, 4.0) > 1
    assert math.isinf(break_even(5.0, 0.0))


@pytest.mark.parametrize("value", [0, -0.1, 1.5, float("nan"), "high"])
def test_bad_utilisation_names_the_field(value: object) -> None:
    with pytest.raises(InputError) as caught:
        utilisation_value(value)
    assert caught.value.field == "utilisation" and "\n" not in str(caught.value)


@pytest.mark.parametrize("value", ["2y", 2, "forever", True])
def test_unknown_term_names_the_field(value: object) -> None:
    with pytest.raises(InputError) as caught:
        term_years(value)
    assert caught.value.field == "term" and "1y or 3y" in str(caught.value)


def test_term_spellings() -> None:
    assert [term_years(t) for t in ("1y", "3y", 1, 3, "committed-3y")] == [1, 3, 1, 3, 3]
    assert 0 < DEFAULT_UTILISATION <= 1


def _commitments(**overrides: object) -> pd.DataFrame:
    rows = [
        {
            "provider": "aws",
            "instance_type": "p5.48xlarge",
            "region": "us-east-1",
            "commitment": "reserved-standard",
            "term_years": 1,
            "payment": "no-upfront",
            "upfront_usd": 0.0,
            "hourly_usd_per_hour": 40.0,
            "price_source": "test RI",
            "as_of": "2026-10-01T00:00:00+00:00",
        },
        {
            "provider": "aws",
            "instance_type": "p5.48xlarge",
            "region": "us-east-1",
            "commitment": "reserved-standard",
            "term_years": 1,
            "payment": "all-upfront",
            "upfront_usd": 8760 * 38.0,
            "hourly_usd_per_hour": 0.0,
            "price_source": "test RI",
            "as_of": "2026-10-01T00:00:00+00:00",
        },
        {
            "provider": "aws",
            "instance_type": "p5.48xlarge",
            "region": "us-east-1",
            "commitment": "savings-plan-compute",
            "term_years": 3,
            "payment": "no-upfront",
            "upfront_usd": 0.0,
            "hourly_usd_per_hour": 30.0,
            "price_source": "test SP",
            "as_of": "2026-10-01T00:00:00+00:00",
        },
    ]
    frame = pd.DataFrame(rows)
    for name, value in overrides.items():
        frame[name] = value
    return frame


def test_best_commitment_of_a_term_is_the_cheapest_over_the_term() -> None:
    best = best_commitments(_commitments(), 1)
    assert len(best) == 1
    row = best.iloc[0]
    assert (row["payment"], row["amortised_usd_per_hour"], row["price_basis"]) == ("all-upfront", 38.0, "committed-1y")


def test_committed_catalog_prices_per_used_hour_and_says_its_basis() -> None:
    catalog = pd.DataFrame([make_offer(), make_offer(region="us-west-2", zone="usw2-az1")])
    priced = committed_catalog(catalog, _commitments(), 1, 0.5)
    assert list(priced["region"]) == ["us-east-1"]  # us-west-2 has no commitment: left out, never copied
    row = priced.iloc[0]
    assert row["price_usd_per_hour"] == pytest.approx(76.0)  # 38 / 0.5
    assert row["list_price_usd_per_hour"] == 55.04
    assert math.isnan(row["spot_price_usd_per_hour"])
    assert (row["price_basis"], row["price_source"], row["as_of"]) == (
        "committed-1y",
        "test RI",
        "2026-10-01T00:00:00+00:00",
    )
