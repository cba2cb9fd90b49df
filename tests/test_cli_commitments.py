"""The commitment faces of the CLI: rank/compare/offers --pricing committed-Ny, `gpuplan plan`, their errors."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import CliRun

PLAN = ["plan", "-w", "bert-base", "-n", "40", "-g", "A100", "-p", "gcp", "-r", "us-central1"]


def test_rank_at_committed_prices_says_the_basis_in_csv(cli: CliRun) -> None:
    code, out, err = cli("rank", "-w", "bert-base", "-p", "gcp", "-g", "A100", "--pricing", "committed-3y",
                         "--utilisation", "0.5", "--format", "csv")  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and {row["pricing"] for row in rows} == {"committed-3y"}
    assert {row["price_basis"] for row in rows} == {"committed-3y"}
    us = next(row for row in rows if row["region"] == "us-central1" and row["instance_type"] == "a2-highgpu-1g")
    # 938.56707798 / 730 a month for 3 years (bundled), per used hour at 50%.
    assert float(us["price_usd_per_hour"]) == pytest.approx(938.56707798 / 730 / 0.5, rel=1e-6)


def test_rank_json_envelope_carries_the_committed_basis(cli: CliRun) -> None:
    code, out, err = cli(
        "rank", "-w", "bert-base", "-p", "gcp", "-g", "A100", "--pricing", "committed-1y", "-f", "json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["currency"] == "USD" and payload["options"]
    assert {option["price_basis"] for option in payload["options"]} == {"committed-1y"}
    assert any("70% utilisation" in line for line in payload["assumptions"])


def test_offers_lists_commitment_prices(cli: CliRun) -> None:
    code, out, err = cli("offers", "--pricing", "committed-1y", "-g", "A100", "-r", "us-central1", "-f", "json")
    assert code == 0, err
    rows = json.loads(out)["commitments"]
    assert {row["instance_type"] for row in rows} == {"a2-highgpu-1g", "a2-highgpu-2g"}
    one = next(row for row in rows if row["instance_type"] == "a2-highgpu-1g")
    assert one["price_basis"] == "committed-1y" and one["price_source"].startswith("Cyclenerd")
    assert one["break_even_vs_on_demand"] == pytest.approx(0.63, abs=1e-4)


def test_plan_table_and_its_totals(cli: CliRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli(*PLAN, "--no-spot")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80
    code, out, err = cli(*PLAN, "--no-spot", "-f", "json")
    plans = json.loads(out)["plans"]
    best = plans[0]
    assert best["price_basis"] == "committed-1y" and best["committed_instances"] > 0
    assert best["total_usd_per_year"] == pytest.approx(12 * best["total_usd_per_month"])
    assert best["total_usd_per_month"] < best["all_on_demand_usd_per_month"]


def test_plan_csv_has_every_column(cli: CliRun) -> None:
    from planner.cost.commitment_plan import PLAN_COLUMNS

    code, out, err = cli(*PLAN, "-f", "csv")
    assert code == 0, err
    assert tuple(next(csv.reader(io.StringIO(out)))) == PLAN_COLUMNS


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        ([*PLAN, "--utilisation", "1.5"], "--utilisation"),
        ([*PLAN, "--utilisation", "0"], "--utilisation"),
        ([*PLAN, "--term", "2y"], "--term"),
        (["rank", "-w", "bert-base", "--pricing", "committed-2y"], "--pricing"),
        (["offers", "--pricing", "reserved"], "--pricing"),
        (["rank", "-w", "bert-base", "--pricing", "committed-1y", "--utilisation", "-1"], "--utilisation"),
    ],
)
def test_bad_commitment_input_is_one_line_naming_the_flag(cli: CliRun, args: list[str], flag: str) -> None:
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag in err


def test_plan_with_no_commitment_says_so(cli: CliRun) -> None:
    code, _, err = cli("plan", "-w", "bert-base", "-n", "10", "-p", "lambda")
    assert code == 1 and "no plan" in err


def test_compare_says_a_choice_has_no_commitment(cli: CliRun) -> None:
    code, out, err = cli(
        "compare", "-w", "bert-base", "-g", "A100", "-g", "L4", "--pricing", "committed-1y", "-f", "json"
    )
    assert code == 0, err
    why = {o["choice"]: o["notes"] for o in json.loads(out)["options"]}
    assert why["L4"] == "no committed-1y offering in the catalog"
    assert "cud no-upfront" in why["A100"] and "list_price" not in why["A100"]


def test_rank_html_report_at_committed_prices(cli: CliRun) -> None:
    code, out, err = cli("rank", "-w", "bert-base", "-g", "A100", "--pricing", "committed-1y", "-f", "html")
    assert code == 0, err
    assert "committed-1y" in out


def test_rank_without_a_commitment_says_why(cli: CliRun) -> None:
    code, _, err = cli("rank", "-w", "bert-base", "-g", "L4", "--pricing", "committed-3y")
    assert code == 1 and "no offering matches gpu L4 with a committed-3y price" in err


def test_a_committed_ranking_beyond_a_year_says_what_would_finish() -> None:
    import planner.api as api

    result = api.rank("llama-2-13b", tokens=2e13, gpu="H100", provider="gcp", pricing="committed-1y")
    assert result.year_note is not None and "no option finishes within a year" in result.year_note
    assert result.question["pricing"] == "committed-1y"
