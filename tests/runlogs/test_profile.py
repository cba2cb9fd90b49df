"""Calibration profiles: one run reproduced exactly through estimate(), ratios to other GPUs, several runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.api import estimate
from planner.errors import InputError
from planner.runlogs.profile import Profile, Run, fit_profile

JOB = "llama-2-7b"


def test_a_profile_from_one_run_reproduces_it_and_moves_other_gpus_by_the_models_ratios() -> None:
    profile = fit_profile(JOB, [Run("H100", 8, 60_000.0, ("megatron.log",))])
    assert (profile.gpu, profile.gpus, profile.unit) == ("H100-SXM", 8, "tokens/s")
    again = estimate(JOB, "H100", 8, **profile.estimate_options())
    assert again.throughput == pytest.approx(60_000.0, rel=1e-12)
    model_ratio = estimate(JOB, "A100-80GB", 8).throughput / estimate(JOB, "H100", 8).throughput  # type: ignore[operator]
    moved = estimate(JOB, "A100-80GB", 8, **profile.estimate_options()).throughput
    assert moved == pytest.approx(60_000.0 * model_ratio, rel=1e-9)
    # The measurement changed the level: not the model's own figure.
    assert profile.factor != pytest.approx(1.0, abs=0.01)
    assert profile.held_out_error is None


def test_several_runs_fit_a_geometric_mean_factor_with_leave_one_run_out_errors() -> None:
    runs = [Run("H100", 8, 60_000.0), Run("A100-80GB", 8, 22_000.0), Run("A100-80GB", 16, 42_000.0)]
    profile = fit_profile(JOB, runs)
    models = [estimate(JOB, run.gpu, run.gpus).throughput for run in runs]
    factors = [run.throughput / model for run, model in zip(runs, models, strict=True)]  # type: ignore[operator]
    geo = (factors[0] * factors[1] * factors[2]) ** (1 / 3)
    assert profile.factor == pytest.approx(geo)
    # Through estimate, every run's GPUs get the fitted factor times the model.
    for run, model in zip(runs, models, strict=True):
        assert estimate(JOB, run.gpu, run.gpus, **profile.estimate_options()).throughput == pytest.approx(geo * model)
    # Leave one out: the other two runs' factor predicts the third.
    first = (factors[1] * factors[2]) ** 0.5 * models[0] / runs[0].throughput - 1  # type: ignore[operator]
    assert profile.runs[0].held_out_error == pytest.approx(first)
    assert profile.held_out_error == pytest.approx(sorted(abs(r.held_out_error) for r in profile.runs)[1])  # type: ignore[arg-type]


def test_profiles_round_trip_through_json(tmp_path: Path) -> None:
    profile = fit_profile(JOB, [Run("H100", 8, 60_000.0, ("a.log",))], workload_fields={"seq_len": 2048})
    path = profile.save(tmp_path / "p.json")
    loaded = Profile.load(path)
    assert loaded == profile
    payload = json.loads(path.read_text())
    assert payload["format"] == "gpu-planner calibration profile" and payload["runs"][0]["sources"] == ["a.log"]
    assert loaded.runs_as_input() == [Run("H100-SXM", 8, 60_000.0, ("a.log",))]


def test_a_broken_profile_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text('{"format": "gpu-planner calibration profile",\n "workload": }')
    with pytest.raises(InputError, match=r"p\.json line 2"):
        Profile.load(bad)
    bad.write_text('{"format": "gpu-planner calibration profile"}')
    with pytest.raises(InputError, match="missing"):
        Profile.load(bad)
    bad.write_text("[]")
    with pytest.raises(InputError, match="not a gpu-planner calibration profile"):
        Profile.load(bad)


def test_a_run_needs_a_positive_throughput() -> None:
    with pytest.raises(InputError, match="throughput"):
        Run("H100", 8, 0.0)
    with pytest.raises(InputError, match="at least one run"):
        fit_profile(JOB, [])


def test_rank_and_compare_take_a_profile_as_the_measured_pair(tmp_path: Path) -> None:
    import pandas as pd
    from factories import make_offer

    from planner.api import compare, rank
    from planner.cost.request import RankRequest

    catalog = pd.DataFrame([make_offer(), make_offer(instance_type="p4d.24xlarge", gpu="A100-40GB", gpu_memory_gib=40)])
    profile = fit_profile(JOB, [Run("H100", 8, 60_000.0)])
    path = profile.save(tmp_path / "p.json")
    measured = rank(JOB, tokens=1e10, catalog=catalog, measured=profile.throughput, measured_on=profile.measured_on)
    for given in (profile, path, str(path)):
        result = rank(JOB, tokens=1e10, catalog=catalog, profile=given)
        assert result.table["cost_usd"].tolist() == measured.table["cost_usd"].tolist()
    plain = rank(JOB, tokens=1e10, catalog=catalog)
    assert result.table["cost_usd"].tolist() != plain.table["cost_usd"].tolist()
    with_request = rank(JOB, tokens=1e10, catalog=catalog, profile=profile, request=RankRequest(top=None))
    assert with_request.table["cost_usd"].tolist() == measured.table["cost_usd"].tolist()
    side_by_side = compare(JOB, gpus=["H100", "A100-40GB"], tokens=1e10, catalog=catalog, profile=profile)
    again = compare(JOB, gpus=["H100", "A100-40GB"], tokens=1e10, catalog=catalog, **profile.estimate_options())
    assert side_by_side.table["cost_usd"].tolist() == again.table["cost_usd"].tolist()
    with pytest.raises(InputError, match="cannot be given with a profile"):
        rank(JOB, catalog=catalog, profile=profile, efficiency=0.3)
    with pytest.raises(InputError, match="measured in bf16"):
        rank(JOB, catalog=catalog, profile=profile, precision="fp8")
