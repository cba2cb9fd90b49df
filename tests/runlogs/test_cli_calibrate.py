"""`gpuplan calibrate` and `gpuplan estimate --profile`: the profile written, read back, and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CliRun

from planner.api import estimate

DATA = Path(__file__).resolve().parents[1] / "data" / "runlogs"


def test_calibrate_writes_a_profile_that_estimate_reproduces(cli: CliRun, tmp_path: Path) -> None:
    profile = tmp_path / "job.json"
    code, out, err = cli(
        "calibrate", str(DATA / "megatron.log"), str(DATA / "dcgm_exporter.prom"), "-w", "llama-2-7b", "-n", "16",
        "--price", "3", "-o", str(profile),
    )  # fmt: skip
    assert code == 0, err
    assert "busy 98%" in out and "SMs active 42%" in out and "profile: llama-2-7b" in out
    assert "priced at $3.00 per GPU-hour (as given)" in out
    saved = json.loads(profile.read_text())
    assert (saved["gpu"], saved["gpus"], saved["unit"]) == ("H100-SXM", 16, "tokens/s")
    code, out, err = cli(
        "estimate", "-w", "llama-2-7b", "-g", "H100", "-n", "16", "--profile", str(profile), "-f", "json"
    )
    assert code == 0, err
    assert json.loads(out)["throughput"] == pytest.approx(saved["throughput"], rel=1e-12)
    # On another GPU: the model's ratio times the measurement, not the model's own figure.
    code, out, _ = cli(
        "estimate", "-w", "llama-2-7b", "-g", "A100-80GB", "-n", "16", "--profile", str(profile), "-f", "json"
    )
    plain = estimate("llama-2-7b", "A100-80GB", 16).throughput
    assert json.loads(out)["throughput"] == pytest.approx(plain * saved["factor"], rel=1e-9)  # type: ignore[operator]


def test_a_second_run_joins_the_profile(cli: CliRun, tmp_path: Path) -> None:
    profile = tmp_path / "job.json"
    assert (
        cli("calibrate", "-w", "llama-2-7b", "-g", "H100", "-n", "8", "--throughput", "60000", "-o", str(profile))[0]
        == 0
    )
    code, out, err = cli(
        "calibrate",
        "-g",
        "A100-80GB",
        "-n",
        "8",
        "--throughput",
        "22000",
        "--profile",
        str(profile),
        "-o",
        str(profile),
    )
    assert code == 0, err
    assert "leave-one-run-out error" in out
    assert len(json.loads(profile.read_text())["runs"]) == 2


def test_calibrate_json_and_a_table_that_fits(cli: CliRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli("calibrate", str(DATA / "nvidia_smi_units.csv"), "--price", "2")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80
    code, out, err = cli("calibrate", str(DATA / "nvidia_smi_units.csv"), "-f", "json", "--price", "2")
    payload = json.loads(out)
    assert payload["report"][-1]["gpu"] == "node" and payload["report"][-1]["idle_stretches"] == 2
    assert {item["kind"] for item in payload["advice"]} >= {"idle", "underused"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["calibrate", str(DATA / "megatron.log"), "--log-format", "nvidia-smi"], "LOG megatron.log line 1:"),
        (["calibrate", "nope.csv"], "LOG nope.csv does not exist"),
        (["calibrate", str(DATA / "megatron.log"), "--log-format", "tb"], "--log-format must be one of"),
        (["calibrate", "--throughput", "5", "-o", "x.json"], "--output has no profile"),
    ],
)
def test_calibrate_errors_are_one_line(cli: CliRun, args: list[str], says: str) -> None:
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err


def test_estimate_refuses_a_profile_of_another_workload_or_with_measured(cli: CliRun, tmp_path: Path) -> None:
    profile = tmp_path / "job.json"
    cli("calibrate", "-w", "llama-2-7b", "-g", "H100", "-n", "8", "--throughput", "60000", "-o", str(profile))
    code, _, err = cli("estimate", "-w", "llama-2-13b", "-g", "H100", "--profile", str(profile))
    assert code == 2 and "--profile is of llama-2-7b, not llama-2-13b" in err
    code, _, err = cli("estimate", "-w", "llama-2-7b", "-g", "H100", "--profile", str(profile), "--precision", "fp8")
    assert code == 2 and "measured in bf16" in err
    args = ("estimate", "-w", "llama-2-7b", "-g", "H100", "--profile", str(profile), "--efficiency", "0.3")
    code, _, err = cli(*args)
    assert code == 2 and "--efficiency cannot be given with a profile" in err


@pytest.mark.parametrize("command", ["rank", "compare"])
def test_rank_and_compare_take_the_profile(cli: CliRun, tmp_path: Path, command: str) -> None:
    """A profile moves rank's and compare's times by its factor, as it moves estimate's."""
    profile = tmp_path / "job.json"
    made = cli("calibrate", "-w", "llama-2-7b", "-g", "H100", "-n", "8", "--throughput", "30000", "-o", str(profile))
    assert made[0] == 0, made[2]
    factor = json.loads(profile.read_text())["factor"]
    ask = [command, "-w", "llama-2-7b", "--tokens", "1e9", "-g", "H100", "--pricing", "on-demand", "-f", "json"]
    code, plain, err = cli(*ask)
    assert code == 0, err
    code, calibrated, err = cli(*ask, "--profile", str(profile))
    assert code == 0, err
    before, after = json.loads(plain)["options"][0], json.loads(calibrated)["options"][0]
    assert factor != pytest.approx(1.0, abs=0.05)
    # Time to solution is the work over the throughput (plus fixed start-up): it moves against the factor.
    assert after["time_to_solution_hours"] != pytest.approx(before["time_to_solution_hours"], rel=0.01)
    assert (after["time_to_solution_hours"] < before["time_to_solution_hours"]) == (factor > 1)


def test_an_impossible_measurement_is_refused_by_the_input_it_came_from(cli: CliRun, tmp_path: Path) -> None:
    """The model's check of a measurement names `--measured`, which no calibrate user typed: it names --throughput,
    the log the figure was read from, or the profile that holds it."""
    fast = ["-w", "llama-3-8b", "-g", "H100", "-n", "2"]
    code, _, err = cli("calibrate", *fast, "--throughput", "191988", "-o", str(tmp_path / "p.json"))
    assert code == 2 and err.startswith("error: --throughput 191988 tokens/s on 2x H100-SXM would be MFU"), err
    assert not (tmp_path / "p.json").exists()
    logs = [str(DATA / "dcgm_exporter.prom"), str(DATA / "trainer_state.json")]
    code, _, err = cli("calibrate", *logs, "-w", "llama-3-8b")
    assert code == 2 and err.startswith("error: LOG trainer_state.json: the throughput read, "), err
    written = tmp_path / "written.json"  # a profile made by hand, or by an older calibrate
    assert cli("calibrate", *fast, "--throughput", "9000", "-o", str(written))[0] == 0
    saved = json.loads(written.read_text())
    written.write_text(json.dumps({**saved, "throughput": 191988.0, "runs": [
        {**run, "measured": 191988.0} for run in saved["runs"]]}))  # fmt: skip
    code, _, err = cli("estimate", *fast, "--profile", str(written))
    assert code == 2 and err.startswith(f"error: --profile {written}: its measurement, 191988 tokens/s"), err
