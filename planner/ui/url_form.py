"""A page's form as a frozen dataclass that round-trips through the page URL (``st.query_params``).

Pure functions (no Streamlit), shared by the plan and estimate pages: ``read_query`` turns URL parameters into a
form and one line per value it ignored; ``write_query`` gives the parameters of a form, only where it differs from
the default, so a page at its defaults is a bare URL. A field's type is its default's: bool, tuple (a
comma-separated list of allowed names), str (one allowed name), int or float (finite, at least 0).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

Form = TypeVar("Form")


def _number(text: str, kind: type) -> float | int:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("not a finite number >= 0")
    if kind is int:
        if not value.is_integer():
            raise ValueError("not a whole number")
        return int(value)
    return value


def read_query(
    params: Mapping[str, str | Sequence[str]],
    allowed: Mapping[str, Sequence[str]],
    default: Form,
    keys: Mapping[str, str],
    bounds: Mapping[str, tuple[int, int]] | None = None,
) -> tuple[Form, list[str]]:
    """The form the URL describes (``default`` where it says nothing), and one line per value that was ignored.

    ``bounds`` gives a number field its allowed range (both ends included), as its widget has.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for field in dataclasses.fields(default):  # type: ignore[arg-type]
        key = keys[field.name]
        raw = params.get(key)
        if raw is None:
            continue
        text = raw if isinstance(raw, str) else ",".join(raw)
        current = getattr(default, field.name)
        try:
            if isinstance(current, bool):
                if text not in ("1", "0", "true", "false"):
                    raise ValueError("1 or 0")
                values[field.name] = text in ("1", "true")
            elif isinstance(current, tuple):
                items = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
                unknown = [item for item in items if item not in allowed[field.name]]
                if unknown:
                    raise ValueError(f"unknown {', '.join(unknown)}")
                values[field.name] = items
            elif isinstance(current, str):
                names = allowed[field.name]
                if text not in names:
                    raise ValueError(
                        f"one of {', '.join(names)}" if len(names) <= 12 else f"not one of its {len(names)}"
                    )
                values[field.name] = text
            else:
                values[field.name] = _number(text, type(current))
                low, high = (bounds or {}).get(field.name, (0, math.inf))
                if not low <= values[field.name] <= high:
                    del values[field.name]
                    raise ValueError(f"{low:g} to {high:g}")
        except ValueError as exc:
            problems.append(f"ignored {key}={text[:40]!r} from the link ({exc})")
    return dataclasses.replace(default, **values), problems  # type: ignore[type-var]


def write_query(form: Any, default: Any, keys: Mapping[str, str]) -> dict[str, str]:
    """The URL parameters of ``form``: only what differs from ``default``."""
    out: dict[str, str] = {}
    for field in dataclasses.fields(form):
        value = getattr(form, field.name)
        if value == getattr(default, field.name):
            continue
        if isinstance(value, bool):
            out[keys[field.name]] = "1" if value else "0"
        elif isinstance(value, tuple):
            out[keys[field.name]] = ",".join(value)
        elif isinstance(value, float):
            out[keys[field.name]] = f"{value:g}"
        else:
            out[keys[field.name]] = str(value)
    return out
