"""The exceptions gpu-planner raises. Each carries one line meant for the user."""

from __future__ import annotations


class PlannerError(Exception):
    """Base class: every error the library raises on purpose. ``exit_code`` is the CLI's."""

    exit_code = 1


class InputError(PlannerError, ValueError):
    """Bad input from the user: an unknown name, a value out of range, conflicting options."""

    exit_code = 2


class UnknownGpuError(InputError):
    """A GPU name the resolver does not know."""


class CatalogError(PlannerError):
    """The catalog store cannot be read or written, or holds no usable data."""


class StaleCatalogError(CatalogError):
    """The catalog is older than the user allows (``--max-age``)."""

    exit_code = 3


class ProviderError(PlannerError):
    """A cloud provider's API failed in a way that retrying did not fix."""


class MissingCredentials(ProviderError):
    """No usable credentials for one provider; the message says how to set them up."""


class MissingExtra(PlannerError):
    """An optional dependency (a cloud SDK, Streamlit) is not installed."""
