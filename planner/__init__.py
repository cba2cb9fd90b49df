"""gpu-planner: which cloud GPU offering finishes this training job cheapest, or within my deadline?

The public API. Everything is imported lazily, so ``import planner`` stays fast and pulls in no cloud
SDK, no Streamlit and not even pandas until a function that needs it is called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "load_catalog": "planner.api",
    "offers": "planner.api",
    "catalog_status": "planner.api",
    "catalog_history": "planner.api",
    "export_catalog": "planner.api",
    "pull_catalog": "planner.api",
    "refresh": "planner.api",
    "estimate": "planner.api",
    "rank": "planner.api",
    "compare": "planner.api",
    "buy_or_rent": "planner.api",
    "calibrate": "planner.api",
    "hardware_table": "planner.api",
    "resolve_gpu": "planner.hardware",
    "gpu_table": "planner.hardware",
    "GpuSpec": "planner.hardware",
    "Workload": "planner.perf.workloads",
    "ModelOptions": "planner.perf.options",
    "RankRequest": "planner.cost.request",
    "RankResult": "planner.cost.result",
    "CostLine": "planner.cost.lines",
    "Estimate": "planner.perf.model",
    "CatalogStore": "planner.catalog.store",
    "PlannerError": "planner.errors",
    "InputError": "planner.errors",
    "UnknownGpuError": "planner.errors",
    "CatalogError": "planner.errors",
    "StaleCatalogError": "planner.errors",
    "ProviderError": "planner.errors",
    "MissingCredentials": "planner.errors",
}

__all__ = [
    "CatalogError",
    "CatalogStore",
    "CostLine",
    "Estimate",
    "GpuSpec",
    "InputError",
    "MissingCredentials",
    "ModelOptions",
    "PlannerError",
    "ProviderError",
    "RankRequest",
    "RankResult",
    "StaleCatalogError",
    "UnknownGpuError",
    "Workload",
    "__version__",
    "buy_or_rent",
    "calibrate",
    "catalog_history",
    "catalog_status",
    "compare",
    "estimate",
    "export_catalog",
    "gpu_table",
    "hardware_table",
    "load_catalog",
    "offers",
    "pull_catalog",
    "rank",
    "refresh",
    "resolve_gpu",
]

if TYPE_CHECKING:
    from planner.api import (
        buy_or_rent,
        calibrate,
        catalog_history,
        catalog_status,
        compare,
        estimate,
        export_catalog,
        hardware_table,
        load_catalog,
        offers,
        pull_catalog,
        rank,
        refresh,
    )
    from planner.catalog.store import CatalogStore
    from planner.cost.lines import CostLine
    from planner.cost.request import RankRequest
    from planner.cost.result import RankResult
    from planner.errors import (
        CatalogError,
        InputError,
        MissingCredentials,
        PlannerError,
        ProviderError,
        StaleCatalogError,
        UnknownGpuError,
    )
    from planner.hardware import GpuSpec, gpu_table, resolve_gpu
    from planner.perf.model import Estimate
    from planner.perf.options import ModelOptions
    from planner.perf.workloads import Workload


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
