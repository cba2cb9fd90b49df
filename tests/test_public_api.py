"""The library's public surface: pinned names, lazy imports, plain Python values."""

from __future__ import annotations

import json
import subprocess
import sys

import planner

PINNED = {
    "CatalogError", "CatalogStore", "Estimate", "GpuSpec", "InputError", "MissingCredentials", "PlannerError",
    "ProviderError", "StaleCatalogError", "UnknownGpuError", "Workload", "__version__", "catalog_history",
    "catalog_status", "compare", "estimate", "gpu_table", "load_catalog", "offers", "rank", "refresh", "resolve_gpu",
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


def test_offers_returns_python_floats() -> None:
    frame = planner.offers(gpu="H100")
    assert len(frame) > 0
    value = frame["price_usd_per_hour"].dropna().iloc[0]
    assert isinstance(float(value), float)
    spec = planner.resolve_gpu("h100")
    assert type(spec.memory_gib) is float
