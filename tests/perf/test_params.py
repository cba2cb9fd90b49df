"""The fitted parameters are a value: read once, read-only, passed in; a variant is a new value, never a swap."""

from __future__ import annotations

import json

import pytest

import planner
from planner._data import data_dir
from planner.hardware import resolve_gpu
from planner.perf import model
from planner.perf.params import PerfParams, default_params
from planner.perf.plan import Plan
from planner.perf.step import throughput_with_plan
from planner.perf.workloads import get_workload


def test_the_bundled_fit_is_read_once_and_matches_the_file() -> None:
    assert default_params() is default_params()
    document = json.loads((data_dir() / "perf_params.json").read_text(encoding="utf-8"))
    assert default_params().to_dict() == document
    assert default_params() == PerfParams.from_dict(document)
    assert hash(default_params()) == hash(PerfParams.from_dict(document))


def test_a_parameter_set_cannot_be_changed_in_place() -> None:
    fitted = default_params()
    with pytest.raises(TypeError):
        fitted.comm["overlap"] = 0.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        fitted.comm = {}  # type: ignore[misc]
    copy = fitted.to_dict()
    copy["comm"]["overlap"] = 0.0
    assert fitted.comm["overlap"] != 0.0 and fitted.to_dict()["comm"]["overlap"] != 0.0


def test_a_variant_is_passed_in_and_leaves_the_default_alone() -> None:
    before = planner.estimate("llama-2-7b", "H100", 16)
    variant = default_params().to_dict()
    variant["transformer"]["peak_efficiency"] /= 2
    slower = PerfParams.from_dict(variant)
    assert slower != default_params()
    asked = planner.estimate("llama-2-7b", "H100", 16, perf_params=slower)
    assert asked.throughput is not None and before.throughput is not None
    assert asked.throughput < 0.75 * before.throughput
    # Nothing was installed anywhere: the default answers as before, and so does the layout-level call.
    assert planner.estimate("llama-2-7b", "H100", 16) == before
    wl, plan = get_workload("llama-2-7b"), Plan(dp=8, micro_batch=1, global_batch=8)
    h100 = resolve_gpu("H100")
    default_rate = throughput_with_plan(wl, h100, "bf16", plan)
    variant_rate = throughput_with_plan(wl, h100, "bf16", plan, perf_params=slower)
    assert variant_rate < default_rate
    assert model.estimate("llama-2-7b", "H100", 16, perf_params=default_params()) == before


def test_the_workload_s_parameter_count_is_still_params() -> None:
    # ``params`` names the model's parameter count (a workload field); the fitted coefficients are ``perf_params``.
    custom = model.estimate("transformer", "H100", 8, params=7e9, layers=32, hidden=4096, heads=32)
    assert custom.throughput is not None
