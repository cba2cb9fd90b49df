"""`gpuplan rank` and `gpuplan compare` end to end on a small stored catalog, with the real performance model."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore

CliRun = Callable[..., tuple[int, str, str]]


@pytest.fixture
def stored(isolated_store: Path, no_bundled_catalog: Path) -> Path:
    """Live snapshots of three clouds (so the bundled one is not seeded), one with a formula-looking name."""
    rows = {
        "aws": [
            make_offer(),
            make_offer(instance_type="p4d.24xlarge", gpu="A100-40GB", gpu_memory_gib=40.0, network_gbps=400.0,
                       price_usd_per_hour=21.96, spot_price_usd_per_hour=9.0, spot_interruption=">20%"),
            make_offer(instance_type="g6.xlarge", gpu="L4", gpu_count=1, gpu_memory_gib=22.0, vcpus=4, ram_gib=16,
                       interconnect="pcie", network_gbps=10.0, price_usd_per_hour=0.805,
                       spot_price_usd_per_hour=0.3),
        ],
        "gcp": [
            make_offer(provider="gcp", instance_type="a3-highgpu-8g", region="us-central1", zone="",
                       host_price_usd_per_hour=10.0, gpu_price_usd_per_hour=78.0, price_usd_per_hour=88.0,
                       spot_price_usd_per_hour=None, spot_interruption=None),
        ],
        "azure": [
            make_offer(provider="azure", instance_type="=HYPERLINK(1)", region="eastus", zone="", gpu="H100-NVL",
                       gpu_memory_gib=94, gpu_count=2, price_usd_per_hour=13.96, spot_price_usd_per_hour=None,
                       spot_interruption=None, interconnect="nvlink", network_gbps=None),
        ],
    }  # fmt: skip
    with CatalogStore(seed=False) as store:
        for provider, provider_rows in rows.items():
            store.write_snapshot(
                provider, provider_rows, source=f"fixture-{provider}", as_of="2026-11-01T00:00:00+00:00"
            )
    return isolated_store


JOB = ["--workload", "llama-3-8b", "--tokens", "2e9"]


def test_rank_csv_keeps_numbers_and_escapes_formulas(stored: Path, cli: CliRun) -> None:
    code, out, _ = cli(*["rank", *JOB, "--format", "csv"])
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    costs = [float(r["cost_usd"]) for r in rows]
    assert costs == sorted(costs)
    assert "'=HYPERLINK(1)" in {r["instance_type"] for r in rows}
    assert not any(r["instance_type"].startswith("=") for r in rows)


def test_rank_json_has_options_exclusions_and_assumptions(stored: Path, cli: CliRun) -> None:
    code, out, _ = cli(*["rank", *JOB, "--format", "json", "--top", "2", "--by", "time"])
    assert code == 0
    payload = json.loads(out)
    assert len(payload["options"]) == 2
    times = [o["time_to_solution_hours"] for o in payload["options"]]
    assert times == sorted(times)
    # One L4 cannot hold an 8B model with Adam states.
    assert any(e["instance_type"] == "g6.xlarge" for e in payload["excluded"])
    assert payload["catalog_as_of"].startswith("2026-11-01")
    assert any("billing" in line for line in payload["assumptions"])


def test_rank_table_to_a_file(stored: Path, tmp_path: Path, cli: CliRun) -> None:
    target = tmp_path / "ranked.txt"
    code, out, err = cli(*["rank", *JOB, "--output", str(target)])
    assert code == 0 and out == ""
    assert "p5.48xlarge" in target.read_text(encoding="utf-8")
    assert "prices as of 2026-11-01" in err


def test_rank_with_no_option_says_whether_more_nodes_would_meet_the_deadline(stored: Path, cli: CliRun) -> None:
    code, _, err = cli(*["rank", *JOB, "--deadline-hours", "2"])
    assert code == 1
    lines = err.strip().splitlines()
    # The reason first, then what would give an answer.
    assert lines[-2].startswith("no option: no offering meets a 2-hour deadline")
    assert lines[-1].startswith("with --max-nodes 16, ") and "options meet it; best " in lines[-1]
    code, _, err = cli(*["rank", *JOB, "--deadline-hours", "2", "--max-nodes", "16"])
    assert code == 0 and "with --max-nodes" not in err


def test_rank_table_marks_spot_at_its_floor(isolated_store: Path, no_bundled_catalog: Path, cli: CliRun) -> None:
    # Validation on write flags the floor price; the table says so in the pricing cell and explains it once.
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws",
            [make_offer(price_usd_per_hour=55.04, spot_price_usd_per_hour=5.504)],
            source="fixture-aws",
            as_of="2026-11-01T00:00:00+00:00",
        )
    code, out, err = cli(*["rank", *JOB, "--pricing", "spot"])
    assert code == 0
    assert "spot FLOOR" in out
    assert "spot FLOOR: spot price at the 90%-off floor in its zone" in err


def test_rank_with_no_option_explains_and_exits_1(stored: Path, cli: CliRun) -> None:
    code, _, err = cli(*["rank", *JOB, "--deadline-hours", "0.5"])
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("no option: no offering meets a 0.5-hour deadline; the fastest takes ")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--pricing", "cheap"], "--pricing must be one of both, on-demand, spot"),
        (["--max-nodes", "0"], "--max-nodes"),
        (["--provider", "oracle"], "unknown provider 'oracle'"),
        (["--budget-usd", "-3"], "--budget-usd must be a positive number"),
        (["--format", "xml"], "--format must be one of table, csv, json"),
        (["--by", "carbon"], "--by must be one of cost, time, cost-time, co2"),
        (["--interruption-rate", "-0.1"], "--interruption-rate must be zero or more"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(stored: Path, args: list[str], text: str, cli: CliRun) -> None:
    code, out, err = cli(*["rank", *JOB, *args])
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: ") and text in err


def test_stale_catalog_exits_3(stored: Path, cli: CliRun) -> None:
    code, _, err = cli(*["rank", *JOB, "--max-age", "1"])
    assert code == 3
    assert "older than the allowed 1 h" in err


def test_compare_instances_side_by_side(stored: Path, cli: CliRun) -> None:
    args = ["compare", *JOB, "--instance", "p5.48xlarge", "--instance", "a3-highgpu-8g", "--format", "csv"]
    code, out, _ = cli(*args)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["choice"], r["pricing"]) for r in rows] == [
        ("p5.48xlarge", "on-demand"),
        ("p5.48xlarge", "spot"),
        ("a3-highgpu-8g", "on-demand"),
        ("a3-highgpu-8g", "spot"),
    ]
    assert rows[3]["cost_usd"] == ""
    assert rows[3]["notes"] == "no spot offering in the catalog"
    assert float(rows[0]["cost_usd"]) < float(rows[2]["cost_usd"])  # same GPUs, $55.04/h against $88/h


def test_rank_table_starts_with_the_headline_pair(stored: Path, cli: CliRun) -> None:
    code, out, _ = cli(*["rank", *JOB, "--top", "3"])
    assert code == 0
    # The headline folds to the terminal like the table: continuation lines are indented.
    lines = out.replace("\n  ", " ").splitlines()
    # The best option first (here a spot run a buyer can act on), then the best of the other pricing.
    first, second = lines[:2]
    assert first.startswith("best spot: ") and "interruptions expected, P(none)" in first
    assert second.startswith("best on-demand: ") and "$" in second


def test_rank_by_co2_with_own_interruption_rate(stored: Path, cli: CliRun) -> None:
    code, out, _ = cli(*["rank", *JOB, "--format", "json", "--by", "co2", "--interruption-rate", "0"])
    assert code == 0
    payload = json.loads(out)
    co2 = [o["co2_kg"] for o in payload["options"]]
    assert co2 == sorted(co2)
    assert all(o["expected_interruptions"] == 0 for o in payload["options"])
    assert any(line.startswith("best on-demand: ") for line in payload["headline"])
    assert any("your interruption rate 0 per node-hour" in line for line in payload["assumptions"])


@pytest.mark.parametrize("command", [["rank", *JOB], ["compare", *JOB, "--gpu", "H100", "--gpu", "L4"]])
def test_quiet_keeps_only_the_warnings_that_change_the_answer(stored: Path, cli: CliRun, command: list[str]) -> None:
    # One cloud's prices past the staleness threshold: a warning that changes what the answer is worth.
    with CatalogStore(seed=False) as store:
        store.write_snapshot("gcp", [make_offer(provider="gcp", instance_type="a3-highgpu-8g", region="us-central1",
                             zone="", host_price_usd_per_hour=10.0, gpu_price_usd_per_hour=78.0,
                             price_usd_per_hour=88.0, spot_price_usd_per_hour=None, spot_interruption=None,
                             as_of="2026-01-01T00:00:00+00:00")],
                             source="fixture-gcp", as_of="2026-01-01T00:00:00+00:00")  # fmt: skip
    code, out, err = cli(*command)
    assert code == 0
    # One line for every stale cloud with its age, naming the command that refreshes them.
    stale = "warning: prices older than 30 days: gcp "
    assert "prices as of" in err and "- billing: " in err
    assert [line for line in err.splitlines() if "older than" in line] == [
        next(line for line in err.splitlines() if line.startswith(stale))
    ]
    assert re.search(r"gcp [\d,]+ days; `gpuplan catalog refresh` updates them", err)
    code, quiet_out, quiet_err = cli(*command, "--quiet")
    assert code == 0 and quiet_out == out
    assert [line for line in quiet_err.splitlines() if line] == [
        line for line in err.splitlines() if line.startswith("warning: ")
    ]
    assert quiet_err.startswith(stale) and quiet_err.count("older than") == 1
    code, _, short_err = cli(*command, "-q")
    assert short_err == quiet_err


def test_quiet_keeps_the_reason_for_no_option(stored: Path, cli: CliRun) -> None:
    code, _, err = cli(*["rank", *JOB, "--deadline-hours", "0.5", "-q"])
    assert code == 1
    assert err.startswith("no option: no offering meets a 0.5-hour deadline") and err.count("\n") == 1, err


def test_one_price_in_many_regions_is_one_table_row_and_every_region_in_csv_and_json(
    stored: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    regions = ["us-east-1", "us-west-1", "us-south-1", "europe-central-1"]
    lam = {"provider": "lambda", "instance_type": "gpu_8x_h100_sxm5", "zone": "", "price_usd_per_hour": 23.92,
           "spot_price_usd_per_hour": None, "spot_interruption": None, "network_gbps": None}  # fmt: skip
    with CatalogStore(seed=False) as store:
        store.write_snapshot("lambda", [make_offer(**lam, region=r) for r in regions], source="fixture-lambda",
                             as_of="2026-11-01T00:00:00+00:00")  # fmt: skip
    code, out, err = cli(*["rank", *JOB, "--provider", "lambda", "--pricing", "on-demand"])
    assert code == 0
    rows = [line for line in out.splitlines() if "gpu_8x_h100_sxm5" in line and line.lstrip()[:1].isdigit()]
    assert len(rows) == 1 and " +3 more " in rows[0], out
    assert "sold alike in several regions are one row" in err
    code, out, _ = cli(*["rank", *JOB, "--provider", "lambda", "--pricing", "on-demand", "--format", "csv"])
    assert sorted(r["region"] for r in csv.DictReader(io.StringIO(out))) == sorted(regions)
    code, out, _ = cli(*["rank", *JOB, "--provider", "lambda", "--pricing", "on-demand", "--format", "json"])
    assert sorted(r["region"] for r in json.loads(out)["options"]) == sorted(regions)


def _long_flags(command: str) -> set[str]:
    from planner.cli.main import build_command

    return {opt for param in build_command().commands[command].params for opt in param.opts if opt.startswith("--")}


def test_rank_and_compare_take_every_request_field_and_evidence_as_the_flag_errors_name() -> None:
    # Both commands declare the request's option group once (planner.cli.rank_opts.RankFlags): every RankRequest
    # field a user sets, and the user's evidence, is a flag of each, spelled as planner.cli.main rewords its errors.
    import dataclasses

    from planner.cli.main import flag_for
    from planner.cost.request import RankRequest
    from planner.perf.options import EVIDENCE_FIELDS

    own = {"top", "model", "default_interruption_rate", "spot_warning_hours"}
    fields = [f.name for f in dataclasses.fields(RankRequest) if f.name not in own] + list(EVIDENCE_FIELDS)
    for command in ("rank", "compare"):
        flags = _long_flags(command)
        assert {flag_for(name, command) for name in fields} <= flags, command
    assert _long_flags("rank") - _long_flags("compare") == {"--min-gpu-memory", "--top"}
    assert _long_flags("compare") == _long_flags("rank") - {"--min-gpu-memory", "--top"}
