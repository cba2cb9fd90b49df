"""Live provider adapters: one class per cloud behind one contract (``planner.providers.base.Provider``).

The registry names each provider's module and class as text, so importing this package imports no cloud SDK
and no provider module; ``provider_class`` loads one on demand.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.providers.base import Provider

# provider name -> "module:Class"
REGISTRY: dict[str, str] = {
    "aws": "planner.providers.aws:AwsProvider",
    "gcp": "planner.providers.gcp:GcpProvider",
    "azure": "planner.providers.azure:AzureProvider",
    "lambda": "planner.providers.lambda_cloud:LambdaProvider",
    "paperspace": "planner.providers.paperspace:PaperspaceProvider",
}

__all__ = ["REGISTRY", "provider_class", "provider_names"]


def provider_names() -> tuple[str, ...]:
    """Every registered provider, in catalog order."""
    return tuple(REGISTRY)


def provider_class(name: str) -> type[Provider]:
    """The adapter class of ``name``; InputError naming the known providers otherwise."""
    target = REGISTRY.get(name)
    if target is None:
        raise InputError(f"must be one of {', '.join(REGISTRY)} or all, got {name!r}", field="provider")
    module_name, class_name = target.split(":")
    cls: type[Provider] = getattr(importlib.import_module(module_name), class_name)
    return cls
