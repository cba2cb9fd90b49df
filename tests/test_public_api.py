"""The library's public surface: pinned names, lazy imports, plain Python values."""

from __future__ import annotations

import json
import subprocess
import sys

import planner

PINNED = {
    "CatalogError", "CatalogStore", "CostLine", "Estimate", "GpuSpec", "InputError", "MissingCredentials",
    "ModelOptions", "PlannerError", "ProviderError", "RankRequest", "RankResult", "StaleCatalogError", "UnknownGpuError", "Workload", "__version__", "buy_or_rent", "calibrate", "catalog_history",
    "catalog_status", "compare", "estimate", "export_catalog", "gpu_table", "hardware_table", "load_catalog", "offers", "pull_catalog", "rank", "refresh", "resolve_gpu",
}  # fmt: skip


def test_all_is_pinned() -> None:
    assert set(planner.__all__) == PINNED


def test_every_public_name_resolves() -> None:
    for name in planner.__all__:
        assert getattr(planner, name) is not None, name


def test_import_planner_is_light() -> None:
    code = (
        "import sys, json, planner; "
        "heavy = [m for m in ('pandas', 'numpy', 'boto3', 'botocore', 'google', 'azure', 'streamlit', 'typer', 'rich')"
        " if m in sys.modules]; print(json.dumps(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def _numbers(record: dict[str, object]) -> dict[str, type]:
    """The type of every numeric value of a record (bool excluded)."""
    return {k: type(v) for k, v in record.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def test_public_values_are_python_floats_not_numpy_scalars() -> None:
    """np.float64 passes isinstance(x, float); only type(x) is float tells a numpy scalar from a Python float."""
    spec = planner.resolve_gpu("h100")
    assert type(spec.memory_gib) is float
    offer = planner.offers(gpu="H100").to_dict("records")[0]
    assert type(offer["price_usd_per_hour"]) is float
    estimate = planner.estimate("llama-3-8b", "H100", 8)
    for name in ("throughput", "time_to_solution_hours", "mfu", "energy_kwh", "throughput_low", "memory_per_gpu_gib"):
        assert type(getattr(estimate, name)) is float, name
    result = planner.rank("llama-3-8b", tokens=2e9, top=5)
    for record in result.records():
        for name, kind in _numbers(record).items():
            assert kind is (int if name in ("rank", "nodes", "gpus_per_node") else float), (name, kind)
    for line in result.cost_lines(1):
        assert type(line.quantity) is float and type(line.unit_price_usd) is float and type(line.cost_usd) is float
