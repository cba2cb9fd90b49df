"""`gpuplan gpus|offers|catalog status|catalog history` on a small fixed catalog."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore

REPO = Path(__file__).resolve().parents[1]


CliRun = Callable[..., tuple[int, str, str]]


@pytest.fixture
def small_catalog(isolated_store: Path, no_bundled_catalog: Path) -> Path:
    """Three providers' live snapshots (so the bundled one is not seeded), with a formula-looking name."""
    rows = {
        "aws": [
            make_offer(),
            make_offer(zone="use1-az6", spot_price_usd_per_hour=28.0),
            make_offer(instance_type="g5.xlarge", gpu="A10G", gpu_count=1, gpu_memory_gib=22.35, vcpus=4, ram_gib=16,
                       interconnect="pcie", price_usd_per_hour=1.006, spot_price_usd_per_hour=0.4, zone="use1-az4"),
        ],
        "gcp": [
            make_offer(provider="gcp", instance_type="a3-highgpu-8g", region="us-central1", zone="",
                       host_price_usd_per_hour=10.0, gpu_price_usd_per_hour=78.0, price_usd_per_hour=88.0,
                       spot_price_usd_per_hour=None, spot_interruption=None),
        ],
        "azure": [
            make_offer(provider="azure", instance_type="=HYPERLINK(1)", region="eastus", zone="", gpu="H100-NVL",
                       gpu_memory_gib=94, gpu_count=1, price_usd_per_hour=6.98, spot_price_usd_per_hour=None,
                       spot_interruption=None, interconnect="pcie"),
        ],
    }  # fmt: skip
    with CatalogStore(seed=False) as store:
        for provider, provider_rows in rows.items():
            store.write_snapshot(
                provider, provider_rows, source=f"fixture-{provider}", as_of="2026-11-01T00:00:00+00:00"
            )
    return isolated_store


def _all_commands() -> list[list[str]]:
    """Every command path of the CLI, walked from the click tree (so new commands are covered too)."""
    import typer.main

    from planner.cli.main import app

    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        if hasattr(command, "commands"):  # a group (typer vendors its own click)
            for name, sub in command.commands.items():
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_the_issue_commands_exist() -> None:
    paths = {" ".join(p) for p in _all_commands()}
    assert {"gpus", "offers", "catalog status", "catalog history"} <= paths


@pytest.mark.parametrize("command", _all_commands(), ids=lambda c: " ".join(c) or "gpuplan")
def test_help_for_every_command(command: list[str], cli: CliRun) -> None:
    code, out, _ = cli(*[*command, "--help"])
    assert code == 0
    assert "Usage:" in out
    assert len(out.splitlines()) > 3


def test_gpus_shows_the_matmul_rate_the_model_uses_and_where_it_comes_from(cli: CliRun) -> None:
    code, out, _ = cli(*["gpus", "--format", "json"])
    assert code == 0
    rows = {r["gpu"]: r for r in json.loads(out)}
    assert rows["A100-80GB"]["sustained_source"] == "measured"
    assert rows["A100-80GB"]["sustained_fp16_tflops"] == pytest.approx(271.2)
    # No measurement of the RTX 6000 Ada: 300 W at the L4's TFLOP/s per watt, not 87% of its 364 TFLOP/s peak.
    assert rows["RTX-6000-Ada"]["sustained_source"] == "power bound (L4)"
    assert rows["RTX-6000-Ada"]["sustained_fp16_tflops"] == pytest.approx(300 * 56.9 / 72, rel=1e-3)
    assert rows["GB300"]["sustained_source"] == "assumed"
    assert rows["RTX-4090"]["memory_type"] == "GDDR6X"
    # FP32 on the CUDA cores: the 70 W T4 reaches 4.3 of its 8.1 TFLOP/s.
    assert rows["T4"]["sustained_fp32_tflops"] == pytest.approx(4.30)
    assert rows["T4"]["sustained_fp32_source"] == "measured"


def test_offers_h100_lists_every_variant(small_catalog: Path, cli: CliRun) -> None:
    code, out, err = cli(*["offers", "--gpu", "H100", "--format", "json"])
    assert code == 0
    rows = json.loads(out)["offers"]
    assert {r["provider"] for r in rows} == {"aws", "gcp", "azure"}
    assert {r["gpu"] for r in rows} == {"H100-SXM", "H100-NVL"}
    assert "matches every H100 variant" in err
    aws = [r for r in rows if r["provider"] == "aws"]
    assert len(aws) == 1 and aws[0]["spot_price_usd_per_hour"] == 28.0 and aws[0]["zone"] == "use1-az6"
    for key in ("instance_type", "region", "gpu_count", "gpu_memory_gib", "vcpus", "ram_gib", "as_of"):
        assert key in rows[0]
    assert [r["price_usd_per_hour"] for r in rows] == sorted(r["price_usd_per_hour"] for r in rows)


def test_offers_filters(small_catalog: Path, cli: CliRun) -> None:
    _, out, _ = cli(*["offers", "--max-gpus", "1", "--format", "json"])
    assert {r["instance_type"] for r in json.loads(out)["offers"]} == {"g5.xlarge", "=HYPERLINK(1)"}
    _, out, _ = cli(*["offers", "--spot", "--max-price", "1", "--format", "json"])
    assert [r["instance_type"] for r in json.loads(out)["offers"]] == ["g5.xlarge"]
    _, out, _ = cli(*["offers", "-p", "gcp", "-r", "us-central1", "--min-gpu-memory", "80", "-f", "json"])
    assert [r["instance_type"] for r in json.loads(out)["offers"]] == ["a3-highgpu-8g"]
    _, out, _ = cli(*["offers", "--by-zone", "--gpu", "h100-sxm", "-p", "aws", "-f", "json"])
    assert sorted(r["zone"] for r in json.loads(out)["offers"]) == ["use1-az4", "use1-az6"]


def test_offers_csv_is_injection_safe_and_numbers_stay_numbers(
    small_catalog: Path, cli: CliRun, tmp_path: Path
) -> None:
    target = tmp_path / "offers.csv"
    code, out, _ = cli(*["offers", "--format", "csv", "--output", str(target)])
    assert code == 0 and out == ""
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    names = {r["instance_type"] for r in rows}
    assert "'=HYPERLINK(1)" in names
    assert all(not r["price_usd_per_hour"].startswith("'") for r in rows)
    float(rows[0]["price_usd_per_hour"])


def test_table_and_status(small_catalog: Path, cli: CliRun) -> None:
    code, out, _ = cli(*["offers", "--gpu", "A10G"])
    assert code == 0 and "g5.xlarge" in out and "1.01" in out
    code, out, _ = cli(*["catalog", "status", "--format", "json"])
    status = json.loads(out)
    assert [s["provider"] for s in status] == ["aws", "gcp", "azure"]
    assert status[0]["rows"] == 3 and status[0]["kind"] == "live" and status[0]["age_hours"] > 0


def test_history(small_catalog: Path, cli: CliRun) -> None:
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws", [make_offer(price_usd_per_hour=50.0)], source="x", as_of="2026-11-10T00:00:00+00:00"
        )
    code, out, _ = cli(*["catalog", "history", "--instance", "p5.48xlarge", "--region", "us-east-1", "-f", "json"])  # fmt: skip
    assert code == 0
    prices = [r["price_usd_per_hour"] for r in json.loads(out) if r["zone"] == "use1-az4"]
    assert prices == [55.04, 50.0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["offers", "--gpu", "H1000"], "unknown GPU 'H1000' (did you mean H100"),
        (["offers", "--min-gpus", "-1"], "--min-gpus must be a positive number, got -1"),
        (["offers", "--min-gpus", "4", "--max-gpus", "2"], "--min-gpus (4) is larger than --max-gpus (2)"),
        (["offers", "--provider", "oracle"], "unknown provider 'oracle'"),
        (["offers", "--region", "us-east-7"], "unknown region 'us-east-7' (did you mean"),
        (["offers", "--format", "xml"], "--format must be one of table, csv, json"),
        (["offers", "--sort", "vibes"], "--sort must be one of"),
        (
            ["catalog", "history", "--instance", "nope", "--region", "us-east-1"],
            "--instance 'nope' has no price in --region 'us-east-1'",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(
    small_catalog: Path,
    cli: CliRun,
    args: list[str],
    message: str,
) -> None:
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_unreadable_store_in_a_real_process(tmp_path: Path) -> None:
    (tmp_path / "catalog.sqlite").write_bytes(b"garbage" * 1000)
    env = {**os.environ, "GPUPLAN_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "planner", "offers", "--gpu", "H100"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: cannot use the catalog store")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_typer_usage_errors_exit_2(cli: CliRun) -> None:
    code, _, err = cli(*["offers", "--min-gpus", "many"])
    assert code == 2
    assert "Traceback" not in err


def test_offers_by_instance_type(small_catalog: Path, cli: CliRun) -> None:
    for flag in ("--instance", "--instance-type", "-i"):
        code, out, _ = cli(*["offers", flag, "g5.xlarge", "-f", "json"])
        assert code == 0 and [r["instance_type"] for r in json.loads(out)["offers"]] == ["g5.xlarge"]
    _, out, _ = cli(*["offers", "-i", "g5.xlarge", "-i", "a3-highgpu-8g", "-f", "json"])
    assert {r["instance_type"] for r in json.loads(out)["offers"]} == {"g5.xlarge", "a3-highgpu-8g"}
    code, _, err = cli(*["offers", "-i", "g5.xlarg"])
    assert code == 2 and err.startswith("error: --instance has an unknown instance type 'g5.xlarg'"), err
