"""Rendering results as a table, CSV or JSON: the only place that rounds or formats numbers."""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "csv", "json")
# A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection").
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def check_format(fmt: str) -> str:
    """The format, or one clear line naming the allowed ones."""
    if fmt not in FORMATS:
        raise InputError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


def safe_cell(value: Any) -> Any:
    """Neutralise a text cell a spreadsheet would execute; numbers stay numbers."""
    if isinstance(value, str) and value.startswith(_FORMULA_PREFIXES):
        return "'" + value
    return value


def to_csv(frame: pd.DataFrame) -> str:
    """CSV safe against formula injection: text columns are escaped, numeric columns untouched."""
    import pandas as pd

    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]) and not pd.api.types.is_bool_dtype(safe[column]):
            safe[column] = safe[column].map(safe_cell)
    return str(safe.to_csv(index=False, lineterminator="\n"))


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalar
        return _json_value(value.item())
    if value is None:
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas is a core dependency
        pass
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain Python values (float, int, str, bool, None), never numpy scalars or NaN."""
    columns = list(frame.columns)
    return [
        {column: _json_value(value) for column, value in zip(columns, row, strict=True)}
        for row in frame.itertuples(index=False, name=None)
    ]


def to_json(payload: pd.DataFrame | Mapping[str, Any] | Sequence[Any]) -> str:
    """JSON with NaN as null; a DataFrame becomes a list of records."""
    if hasattr(payload, "itertuples"):
        payload = records(payload)  # type: ignore[arg-type]
    return json.dumps(payload, indent=2, default=_json_value, allow_nan=False) + "\n"


def _cell(value: Any, column: str) -> str:
    value = _json_value(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if column.endswith("_usd_per_hour"):
            return f"{value:,.4f}" if value < 1 else f"{value:,.2f}"
        if column.endswith("_usd"):
            return f"{value:,.2f}"
        if value.is_integer() and abs(value) < 1e6:
            return f"{int(value)}"
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if column == "as_of" and isinstance(value, str):
        return value[:10]
    return str(value)


def render_table(frame: pd.DataFrame, *, title: str | None = None, columns: Sequence[str] | None = None) -> str:
    """A rich table as text (right-aligned numbers, '-' for missing)."""
    import pandas as pd
    from rich.console import Console
    from rich.table import Table

    shown = list(columns) if columns is not None else list(frame.columns)
    table = Table(title=title, show_lines=False, header_style="bold")
    for column in shown:
        numeric = column in frame.columns and pd.api.types.is_numeric_dtype(frame[column])
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    widths = [len(column) for column in shown]
    for row in frame[shown].itertuples(index=False, name=None):
        cells = [_cell(value, column) for value, column in zip(row, shown, strict=True)]
        widths = [max(width, len(cell)) for width, cell in zip(widths, cells, strict=True)]
        table.add_row(*cells)
    buffer = io.StringIO()
    # Wide enough that no cell wraps (the user's terminal or pager scrolls); rich folds only past 400 columns.
    width = min(400, sum(widths) + 3 * len(shown) + 1)
    Console(file=buffer, width=max(80, width), force_terminal=False).print(table)
    return buffer.getvalue()


def emit(text: str, output: Path | None) -> None:
    """Write data to ``output`` or stdout (messages go to stderr elsewhere)."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
