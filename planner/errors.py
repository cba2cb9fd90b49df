"""The exceptions gpu-planner raises. Each carries one line meant for the user."""

from __future__ import annotations

import re
from collections.abc import Callable

# Library calls a message may point the user to; each face names its own way to them (the CLI its command).
LIBRARY_CALLS = {
    "gpus": "planner.hardware_table()",
    "refresh": "planner.refresh()",
    "offers": "planner.offers()",
    "status": "planner.catalog_status()",
}


class PlannerError(Exception):
    """Base class: every error the library raises on purpose. ``exit_code`` is the CLI's."""

    exit_code = 1


class InputError(PlannerError, ValueError):
    """Bad input from the user: an unknown name, a value out of range, conflicting options.

    ``field`` names the library argument at fault (``deadline_hours``) and ``detail`` says what is wrong with it; the
    message is ``"<field> <detail>"``. The CLI rewords the field as its flag (``--deadline-hours``), so a library
    caller never reads a flag and a CLI user never reads an argument name.
    """

    exit_code = 2

    def __init__(self, message: str, *, field: str | None = None, related: tuple[str, ...] = ()) -> None:
        self.field = field
        self.detail = message
        # Other fields the detail names (``max_gpus`` in "min_gpus (4) is larger than max_gpus (2)").
        self.related = related
        super().__init__(f"{field} {message}" if field else message)

    def reworded(self, name_of: Callable[[str], str]) -> str:
        """The message with every field it names called ``name_of(field)`` instead (a CLI flag)."""
        if not self.field:
            return str(self)
        detail = self.detail
        for other in self.related:
            detail = re.sub(rf"\b{re.escape(other)}\b", name_of(other), detail)
        return f"{name_of(self.field)} {detail}"


class UnknownGpuError(InputError):
    """A GPU name the resolver does not know.

    Raised with ``field`` where the caller knows which argument named the GPU (``gpu``, ``gpus``); then the message
    reads "gpu names an unknown GPU 'Z100' ...". Without a field (a provider's own spelling) it is the bare detail.
    """

    def __init__(self, name: str, hint: str = "", *, field: str | None = None) -> None:
        self.name = name
        self.hint = hint
        text = f"unknown GPU {name!r}{hint}; {LIBRARY_CALLS['gpus']} lists the known ones"
        super().__init__(f"names an {text}" if field else text, field=field)


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


def install_command(extra: str) -> str:
    """The command that installs ``extra`` into the Python running gpu-planner: its own pip, and from the source
    checkout when it runs from one (a bare `pip install 'gpu-planner[...]'` may be another Python's, or PyPI's copy)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        return f"{sys.executable} -m pip install -e '{root}[{extra}]'"
    return f"{sys.executable} -m pip install 'gpu-planner[{extra}]'"
