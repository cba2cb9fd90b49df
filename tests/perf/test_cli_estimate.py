"""`gpuplan estimate`: the JSON contract, the table view and bad input."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from conftest import CliRun
from typer.testing import CliRunner

from planner.cli.main import app
from planner.cli.workload_opts import UNIT_FLAGS, EvidenceFlags, WorkloadFlags
from planner.perf.options import EVIDENCE_FIELDS
from planner.perf.workloads import USER_FIELDS

CONTRACT = {
    "throughput": float,
    "throughput_unit": str,
    "step_time_s": float,
    "time_to_solution_hours": float,
    "memory_per_gpu_gib": float,
    "fits_in_memory": bool,
    "mfu": float,
    "energy_kwh": float,
    "throughput_low": float,
    "throughput_high": float,
    "assumptions": list,
}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["estimate", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "unit"),
    [
        (["--workload", "llama-2-7b", "--gpu", "H100", "--gpus", "16"], "tokens/s"),
        (["--workload", "resnet50", "--gpu", "A100-80GB", "--precision", "fp16"], "images/s"),
        (["--workload", "bert-large", "--gpu", "L4", "--seq-len", "512"], "sequences/s"),
        (
            [
                "-w",
                "transformer",
                "--params",
                "1.3e9",
                "--layers",
                "24",
                "--hidden",
                "2048",
                "--seq-len",
                "2048",
                "-g",
                "L40S",
            ],
            "tokens/s",
        ),
    ],
)
def test_json_contract(args: list[str], unit: str) -> None:
    code, output = run(*args, "--format", "json")
    assert code == 0, output
    payload = json.loads(output)
    for key, kind in CONTRACT.items():
        assert isinstance(payload[key], kind), key
    assert payload["throughput_unit"] == unit
    assert payload["throughput_low"] < payload["throughput"] < payload["throughput_high"]


def test_gpus_above_eight_are_nodes_of_eight_with_the_given_network() -> None:
    code, output = run("-w", "mpt-7b", "-g", "H100", "-n", "32", "--network-gbps", "400", "-f", "json")
    assert code == 0, output
    payload = json.loads(output)
    assert payload["nodes"] == 4
    assert payload["network_gbps"] == 400.0


def test_table_view_shows_numbers_and_assumptions() -> None:
    code, output = run("-w", "llama-2-70b", "-g", "A100-80GB", "-n", "2")
    assert code == 0, output
    assert "time to solution" in output
    assert "does not fit" in output
    assert "layout tried (does not fit):" in output


def test_measured_and_tokens_flow_through() -> None:
    code, output = run(
        "-w",
        "mpt-7b",
        "-g",
        "H100",
        "--tokens",
        "1e9",
        "--measured",
        "1000",
        "--measured-on",
        "A100-80GB:2",
        "-f",
        "json",
    )
    assert code == 0, output
    payload = json.loads(output)
    assert payload["work"] == 1e9
    assert any("measurement" in line for line in payload["assumptions"])


def test_tuned_stack_flows_through_and_is_faster() -> None:
    results = {}
    for stack in ("typical", "tuned"):
        code, output = run("-w", "llama-3-8b", "-g", "H100", "-n", "8", "--stack", stack, "-f", "json")
        assert code == 0, output
        results[stack] = json.loads(output)
    assert results["tuned"]["throughput"] > results["typical"]["throughput"]
    assert any("NVIDIA-tuned" in line for line in results["tuned"]["assumptions"])


def test_recompute_setting_flows_through_and_costs_a_forward_pass() -> None:
    results = {}
    for setting in ("auto", "on", "off"):
        code, output = run("-w", "mpt-7b", "-g", "H100", "-n", "8", "--recompute", setting, "-f", "json")
        assert code == 0, output
        results[setting] = json.loads(output)
    # 7B fits on 8 x 80 GB without recomputation: auto does not recompute, and a script that always does is slower.
    assert results["auto"]["parallelism"]["recompute"] is False
    assert results["off"]["throughput"] == results["auto"]["throughput"]
    assert results["on"]["parallelism"]["recompute"] is True
    assert results["on"]["throughput"] < 0.9 * results["auto"]["throughput"]
    assert any("recompute on, as given" in line for line in results["on"]["assumptions"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-w", "mpt-7b", "-g", "V100", "--precision", "fp8"], "fp8"),
        (["-w", "mpt-7b", "-g", "H100", "-n", "0"], "--gpus"),
        (["-w", "mpt-7b", "-g", "H100", "--seq-len", "-5"], "--seq-len"),
        (["-w", "gpt-5", "-g", "H100"], "unknown workload"),
        (
            ["-w", "mpt-7b", "-g", "H100", "--efficiency", "0.3", "--measured", "1", "--measured-on", "A100"],
            "--efficiency",
        ),
        (["-w", "mpt-7b", "-g", "H100", "--mode", "rlhf"], "--mode"),
        (["-w", "mpt-7b", "-g", "H100", "--stack", "fastest"], "--stack"),
        (["-w", "mpt-7b", "-g", "H100", "--recompute", "sometimes"], "--recompute"),
        (
            ["-w", "resnet50", "-g", "H100", "--evaluations", "30"],
            "--eval-samples must be given, above zero, with --evaluations",
        ),
        (["-w", "resnet50", "-g", "H100", "--evaluations", "-1", "--eval-samples", "5"], "--evaluations"),
    ],
)
def test_bad_input_exits_2_with_one_line(cli: CliRun, args: list[str], needle: str) -> None:
    code, _out, err = cli("estimate", *args)
    assert code == 2, err
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("error: ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-w", "mpt-7b", "-g", "V100", "--precision", "fp8"], "fp8"),
        (["-w", "mpt-7b", "-g", "H100", "--gpus", "0"], "--gpus"),
    ],
)
def test_bad_input_from_a_real_process(args: list[str], needle: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:") and needle in lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_workload_flags_give_the_workload_and_the_users_evidence() -> None:
    workload = WorkloadFlags(seq_len=2048, tokens=1e9, mode="lora").workload("llama-2-7b")
    assert workload.seq_len == 2048 and workload.work == 1e9 and workload.mode == "lora"
    assert EvidenceFlags(efficiency=0.3).options().as_kwargs() == {"efficiency": 0.3}


def test_the_workload_flags_are_the_fields_a_user_sets_and_the_evidence_is_the_models_options() -> None:
    # Each group states a set of names the library states too: a field added there must get its flag here.
    assert {f.name for f in dataclasses.fields(WorkloadFlags)} == {*USER_FIELDS, "tokens", *UNIT_FLAGS}
    assert tuple(f.name for f in dataclasses.fields(EvidenceFlags)) == EVIDENCE_FIELDS


def test_a_configuration_that_does_not_fit_has_no_numbers_in_json() -> None:
    code, output = run("-w", "llama-2-70b", "-g", "L4", "-n", "1", "-f", "json")
    assert code == 0, output
    payload = json.loads(output)
    assert payload["fits_in_memory"] is False
    for key in ("throughput", "throughput_per_gpu", "throughput_low", "throughput_high", "step_time_s"):
        assert payload[key] is None, key
    assert payload["time_to_solution_hours"] is None and payload["mfu"] is None and payload["energy_kwh"] is None
    assert payload["min_gpus_to_fit"] > 1
    assert "would fit" in payload["why_not_fits"]


def test_table_says_when_the_gpu_has_no_calibration_data() -> None:
    code, output = run("-w", "bert-large", "-g", "L4")
    assert code == 0, output
    assert "not calibrated" in output
    # Said once, above the assumptions, not again inside them.
    assert output.count("no published measurements on L4") == 1, output


def test_an_evaluation_schedule_lengthens_the_time_to_solution(cli: CliRun) -> None:
    base = ["-w", "resnet50", "-g", "H100-SXM", "--gpus", "8", "--format", "json"]
    _code, plain, _err = cli("estimate", *base)
    code, evaluated, err = cli("estimate", *base, "--evaluations", "30", "--eval-samples", "50000")
    assert code == 0, err
    before, after = json.loads(plain), json.loads(evaluated)
    assert after["throughput"] == before["throughput"]
    assert after["time_to_solution_hours"] > before["time_to_solution_hours"]
    assert any(line.startswith("evaluation: 30 passes") for line in after["assumptions"])
