"""The user's negotiated prices (prices.toml): applied once to list prices, every price saying its basis."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import CliRun
from cost.fakes import FakeEstimator
from factories import make_offer, write_catalog

import planner
from planner.catalog.negotiated import parse_terms
from planner.errors import InputError

DISCOUNT_P5 = '[[discount]]\nprovider = "aws"\nfamily = "p5"\npercent = 20\n'


def _prices(isolated_store: Path, text: str) -> Path:
    # conftest points GPUPLAN_PRICES_FILE here.
    path = isolated_store / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _catalog() -> pd.DataFrame:
    return pd.DataFrame(
        [
            make_offer(price_usd_per_hour=55.04, spot_price_usd_per_hour=30.0),
            make_offer(instance_type="p4d.24xlarge", gpu="A100-40GB", price_usd_per_hour=21.96),
        ]
    )


def test_golden_a_p5_discount_prices_the_run_by_hand(isolated_store: Path) -> None:
    _prices(isolated_store, DISCOUNT_P5)
    result = planner.rank(
        "llama-3-8b", tokens=2.88e9, gpu="H100", pricing="on-demand", catalog=_catalog(), estimator=FakeEstimator()
    )
    best = result.table.iloc[0]
    # 2.88e9 tokens at 8 x 10,000 tokens/s: 10 h, plus 0.25 h start-up, billed by the second on AWS;
    # $55.04 less 20% is $44.032 an hour: 10.25 h x $44.032 = $451.328.
    assert best["price_usd_per_hour"] == pytest.approx(44.032)
    assert best["cost_usd"] == pytest.approx(451.328)
    assert best["price_basis"] == "negotiated"
    assert any(note.startswith("negotiated prices for 1 offerings (prices.toml): aws p5") for note in result.notes)
    # Without the file the same run is priced at list.
    (isolated_store / "prices.toml").unlink()
    listed = planner.rank(
        "llama-3-8b", tokens=2.88e9, gpu="H100", pricing="on-demand", catalog=_catalog(), estimator=FakeEstimator()
    ).table.iloc[0]
    assert listed["cost_usd"] == pytest.approx(10.25 * 55.04) and listed["price_basis"] == "list"


def test_the_most_specific_entry_wins_and_spot_only_when_asked(isolated_store: Path) -> None:
    _prices(
        isolated_store,
        DISCOUNT_P5
        + '[[discount]]\nprovider = "aws"\npercent = 10\npricing = "both"\n'
        + '[[rate]]\nprovider = "aws"\ninstance_type = "P5.48XLARGE"\nusd_per_hour = 40.0\n',
    )
    frame = planner.offers(catalog=_catalog()).set_index("instance_type")
    # The rate (instance type) beats the family's 20% and the provider's 10%, for on-demand; spot only takes the
    # provider-wide entry, whose pricing is "both".
    assert frame.loc["p5.48xlarge", "price_usd_per_hour"] == 40.0
    assert frame.loc["p5.48xlarge", "spot_price_usd_per_hour"] == pytest.approx(27.0)
    assert frame.loc["p4d.24xlarge", "price_usd_per_hour"] == pytest.approx(19.764)
    assert set(frame["price_basis"]) == {"negotiated"}
    assert frame.loc["p5.48xlarge", "spot_price_basis"] == "negotiated"


def test_price_basis_is_a_column_of_rank_and_offers(
    isolated_store: Path, no_bundled_catalog: Path, cli: CliRun
) -> None:
    write_catalog({"aws": [make_offer(), make_offer(instance_type="p4de.24xlarge", gpu="A100-80GB")]})
    _prices(isolated_store, '[[discount]]\nprovider = "aws"\ninstance_type = "p4de.24xlarge"\npercent = 50\n')
    code, out, err = cli("rank", "-w", "llama-3-8b", "--tokens", "2e9", "--pricing", "on-demand", "-f", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {(r["instance_type"], r["price_basis"]) for r in rows} == {
        ("p5.48xlarge", "list"),
        ("p4de.24xlarge", "negotiated"),
    }
    assert "negotiated prices for 1 offerings" in err
    code, out, _ = cli("offers", "-f", "json")
    offers = {o["instance_type"]: o for o in json.loads(out)["offers"]}
    assert offers["p4de.24xlarge"]["price_basis"] == "negotiated" and offers["p5.48xlarge"]["price_basis"] == "list"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DISCOUNT_P5 + '[[discount]]\nprovider = "aws"\npercent = 120\n',
         "prices.toml: discount[2].percent must be between 0 and 100, got 120"),
        ('[[discount]]\nprovider = "aws"\nfamly = "p5"\npercent = 5\n', "prices.toml: discount[1].famly is not a key"),
        ('[[discount]]\nprovider = "oracle"\npercent = 5\n', "prices.toml: discount[1].provider must be one of aws"),
        ('[[rate]]\nprovider = "lambda"\nusd_per_hour = 2\n', "prices.toml: rate[1].instance_type is missing"),
        ('[[rate]]\nprovider = "lambda"\ninstance_type = "x"\nusd_per_hour = -2\n',
         "prices.toml: rate[1].usd_per_hour must be a positive number, got -2"),
        ('[[discount]]\nprovider = "aws"\npercent = "ten"\n', "prices.toml: discount[1].percent must be a number"),
        ('[[discount]]\nprovider = "aws"\npercent = 5\npricing = "reserved"\n',
         "prices.toml: discount[1].pricing must be one of on-demand, spot, both"),
        ('[[discount]\n', "prices.toml: is not valid TOML"),
        ('[[commitment]]\nprovider = "aws"\n', "prices.toml: [[commitment]] is not a kind of entry"),
    ],
)  # fmt: skip
def test_a_bad_prices_file_is_one_line_naming_the_key(
    isolated_store: Path, no_bundled_catalog: Path, cli: CliRun, text: str, message: str
) -> None:
    write_catalog({"aws": [make_offer()]})
    _prices(isolated_store, text)
    code, out, err = cli("offers")
    assert (code, out) == (2, "") and err.startswith(f"error: {message}"), err
    assert len(err.strip().splitlines()) == 1


def test_terms_parse_without_a_file() -> None:
    terms = parse_terms({"rate": [{"provider": "Lambda", "instance_type": "gpu_8x_h100_sxm5", "usd_per_hour": 20}]})
    assert terms[0].provider == "lambda" and terms[0].usd_per_hour == 20.0 and terms[0].pricing == "on-demand"
    with pytest.raises(InputError, match=r"discount\[1\]\.family and"):
        parse_terms({"discount": [{"provider": "aws", "family": "p5", "instance_type": "p5.48xlarge", "percent": 1}]})
