"""Input checks shared by every public function: one wording per kind of mistake, naming the field at fault.

Each check returns the value as a plain Python type (numpy integers and floats become int and float), or raises
InputError with ``field`` set, which the CLI rewords as its flag.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence

from planner.errors import InputError

# Python's int() of a 400-digit string works; nothing in a training plan is that large. Counts (GPUs, nodes, layers,
# batch) stay far below this, and amounts (tokens, dollars, hours) far below 1e30.
LARGEST_COUNT = 10**9
LARGEST_AMOUNT = 1e30


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def number(
    field: str,
    value: object,
    *,
    allow_zero: bool = False,
    at_most: float | None = None,
    what: str = "a positive number",
) -> float:
    """A finite number above zero (or zero, with ``allow_zero``), at most ``at_most``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"must be a number, got {_shown(value)}", field=field)
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    allowed = "zero or more" if allow_zero else what
    if math.isnan(result) or math.isinf(result) or abs(result) > LARGEST_AMOUNT:
        raise InputError(f"must be {allowed} (finite), got {_shown(value)}", field=field)
    if result < 0 or (result == 0 and not allow_zero):
        raise InputError(f"must be {allowed}, got {result:g}", field=field)
    if at_most is not None and result > at_most:
        raise InputError(f"must be at most {at_most:g}, got {result:g}", field=field)
    return result


def optional_number(
    field: str, value: object, *, allow_zero: bool = False, at_most: float | None = None
) -> float | None:
    """``number`` for an optional value: None stays None."""
    return None if value is None else number(field, value, allow_zero=allow_zero, at_most=at_most)


def _integral_float(value: float) -> bool:
    return math.isfinite(value) and value.is_integer()


def fraction(field: str, value: object, *, what: str) -> float:
    """A number in (0, 1]."""
    result = number(field, value, what=what)
    if result > 1:
        raise InputError(f"must be {what}, got {result:g}", field=field)
    return result


def whole(field: str, value: object, *, least: int = 1, most: int | None = None) -> int:
    """A whole number from any integer type (or a float with no fraction), between ``least`` and ``most``."""
    if isinstance(value, bool):
        raise InputError(f"must be a whole number of at least {least}, got {value!r}", field=field)
    if isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real) and _integral_float(float(value)):
        result = int(float(value))
    else:
        raise InputError(f"must be a whole number of at least {least}, got {_shown(value)}", field=field)
    upper = LARGEST_COUNT if most is None else most
    if result < least:
        raise InputError(f"must be a whole number of at least {least}, got {result}", field=field)
    if result > upper:
        raise InputError(f"must be at most {upper:,}, got {_shown(result)}", field=field)
    return result


def optional_whole(field: str, value: object, *, least: int = 1, most: int | None = None) -> int | None:
    """``whole`` for an optional value: None stays None."""
    return None if value is None else whole(field, value, least=least, most=most)


def choice(field: str, value: object, allowed: Sequence[str]) -> str:
    """One of ``allowed``, exactly as spelled there."""
    if not isinstance(value, str) or value not in allowed:
        raise InputError(f"must be one of {', '.join(allowed)}, got {_shown(value)}", field=field)
    return value


def suggestion(value: str, known: Iterable[str], shown: Mapping[str, str] | None = None) -> str:
    """' (did you mean a, b?)' for close spellings of ``value`` among ``known``, else ''.

    ``shown`` maps a known key to the name to show (a normalised alias to its display name).
    """
    close = difflib.get_close_matches(value, list(known), n=3, cutoff=0.6)
    names = [shown.get(c, c) if shown else c for c in close]
    return f" (did you mean {', '.join(dict.fromkeys(names))}?)" if close else ""


def unknown(field: str, kind: str, value: str, known: Sequence[str], *, shown: int = 12) -> InputError:
    """The error for a name that is not among ``known``: close spellings first, then the first ``shown`` known."""
    listed = sorted(known)
    more = " ..." if len(listed) > shown else ""
    known_text = ", ".join(listed[:shown]) or "none"
    return InputError(
        f"has an unknown {kind} {value!r}{suggestion(value, listed)}; known: {known_text}{more}", field=field
    )


def names(field: str, kind: str, values: Iterable[str], known: Sequence[str]) -> list[str]:
    """Every value checked against ``known``; the first unknown one raises ``unknown``."""
    out: list[str] = []
    for value in values:
        if value not in known:
            raise unknown(field, kind, value, known)
        out.append(value)
    return out
