"""Rendering results as a table, CSV or JSON: the only place that rounds or formats numbers."""

from __future__ import annotations

import functools
import io
import json
import math
import re
import sys
import textwrap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    from rich.text import Text

    from planner.cost.result import RankResult

# The table view of `offers`: what fits a terminal, and with --wide the rest (CSV and JSON carry every column).
OFFER_TABLE_COLUMNS = (
    "provider",
    "region",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "price_usd_per_hour",
    "spot_price_usd_per_hour",
    "spot_note",
)
OFFER_WIDE_COLUMNS = (
    "provider",
    "region",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "interconnect",
    "network_gbps",
    "price_usd_per_hour",
    "spot_price_usd_per_hour",
    "price_basis",
    "spot_note",
    "spot_interruption",
    "availability",
    "as_of",
)
# What `offers --wide` leaves out first when the terminal is too narrow for all of it.
OFFER_WIDE_DROP_ORDER = (
    "as_of",
    "price_basis",
    "availability",
    "spot_interruption",
    "ram_gib",
    "vcpus",
    "network_gbps",
    "interconnect",
)

FORMATS = ("table", "csv", "json")
# A note that starts with this changes what the answer means (prices past their staleness threshold, a cloud left out
# for want of a capacity figure); --quiet keeps these and drops the informational rest.
WARNING_PREFIX = "warning: "
# A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection").
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


# rank and compare also write a one-file HTML report (planner.report_html).
RANK_FORMATS = (*FORMATS, "html")


def check_format(fmt: str, allowed: Sequence[str] = FORMATS) -> str:
    """The format, or one clear line naming the allowed ones."""
    if fmt not in allowed:
        raise InputError(f"must be one of {', '.join(allowed)}, got {fmt!r}", field="format")
    return fmt


def safe_cell(value: Any) -> Any:
    """Neutralise a text cell a spreadsheet would execute; numbers stay numbers.

    Every line of the cell counts, not only the first: a reader that splits rows at a line break (Python's csv
    on a bare carriage return, a spreadsheet's import) would otherwise start a new row with ``=cmd|...``.
    Line breaks become ``\n``, which the CSV writer always quotes (it leaves a bare ``\r`` unquoted).
    """
    if not isinstance(value, str):
        return value
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join("'" + line if line.startswith(_FORMULA_PREFIXES) else line for line in lines)


def to_csv(frame: pd.DataFrame) -> str:
    """CSV safe against formula injection: text columns are escaped, numeric columns untouched."""
    import pandas as pd

    safe = frame.copy()
    # A ranking repeats a few texts (providers, regions, notes) over thousands of rows: escape each text once.
    escape = functools.lru_cache(maxsize=None)(safe_cell)
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]) and not pd.api.types.is_bool_dtype(safe[column]):
            safe[column] = safe[column].map(escape)
    return str(safe.to_csv(index=False, lineterminator="\n"))


def notes_to_show(notes: Sequence[str], *, quiet: bool) -> list[str]:
    """``notes``, or with ``quiet`` only the warnings (notes starting with WARNING_PREFIX)."""
    return [note for note in notes if not quiet or note.startswith(WARNING_PREFIX)]


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


# The version of the JSON envelope every report carries; a change that renames or removes a key raises it.
JSON_SCHEMA_VERSION = 1
CURRENCY = "USD"


def envelope(
    payload: Mapping[str, Any],
    *,
    snapshots: Sequence[Mapping[str, Any]],
    ages_days: Mapping[str, float],
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """``payload`` under what makes a report reproducible and comparable: the output's schema version, the tool's
    version, the currency, when it was made, the catalog snapshots its prices come from and each provider's oldest
    price age in days (rounded to 0.01)."""
    from planner import __version__

    moment = generated_at or datetime.now(UTC)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "tool_version": __version__,
        "currency": CURRENCY,
        "generated_at": moment.isoformat(timespec="seconds"),
        "snapshots": [dict(item) for item in snapshots],
        "price_ages_days": {provider: round(days, 2) for provider, days in sorted(ages_days.items())},
        **payload,
    }


def oldest_price_days(table: pd.DataFrame) -> dict[str, float]:
    """The age in days of each provider's oldest price among a ranking's options (``price_age_days``)."""
    if table.empty or "price_age_days" not in table.columns:
        return {}
    oldest = table.groupby("provider")["price_age_days"].max()
    return {str(provider): float(days) for provider, days in oldest.items() if days == days}


def _cell(value: Any, column: str) -> str:
    value = _json_value(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if column.endswith("_usd_per_hour"):
            return f"{value:,.{MOST_PRICE_DECIMALS}f}" if value < 1 else f"{value:,.2f}"
        if column.endswith("_usd"):
            return f"{value:,.2f}"
        if value.is_integer() and abs(value) < 1e6:
            return f"{int(value):,}"  # thousands separated as the other numbers are (1,125 beside 1,307)
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if column == "as_of" and isinstance(value, str):
        return value[:10]
    if column in ("created_at", "available_checked_at") and isinstance(value, str):
        return value[:16].replace("T", " ")
    return str(value)


# A column of prices per hour shows every price with as many decimals as its smallest needs for two significant
# figures (0.0076 beside 11.39 reads 0.0076 and 11.3900), from 2 to this many.
MOST_PRICE_DECIMALS = 4


def column_cells(values: Sequence[Any], column: str) -> list[str]:
    """Each value of one column as table text; a column of prices per hour with one number of decimals."""
    if not column.endswith("_usd_per_hour"):
        return [_cell(value, column) for value in values]
    prices = [v for v in map(_json_value, values) if isinstance(v, float) and v > 0 and math.isfinite(v)]
    decimals = min(MOST_PRICE_DECIMALS, max(2, 1 - math.floor(math.log10(min(prices))))) if prices else 2
    return [
        f"{value:,.{decimals}f}" if isinstance(value, float) else _cell(value, column)
        for value in map(_json_value, values)
    ]


# Characters that would act on the terminal instead of being shown: C0/C1 controls (ESC starts an escape
# sequence, CR overwrites the line) and the bidirectional overrides that can make a name read as another.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(value: str) -> str:
    """``value`` with every control character written as ``\\xNN`` / ``\\uNNNN``: safe to print to a terminal."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", value
    )


def plain_text(value: str) -> Text:
    """Data as inert text for a rich table: never parsed as markup, control characters shown as ``\\xNN``."""
    from rich.text import Text

    return Text(visible(value))


# Short headers for the terminal table only; CSV and JSON keep the full column names.
TABLE_HEADERS: dict[str, str] = {
    "instance_type": "instance",
    "gpus": "GPUs",
    "gpus_per_node": "GPUs per node",
    "price_usd_per_hour": "$/h",
    "spot_price_usd_per_hour": "spot $/h",
    "spot_note": "spot note",
    "time_to_solution_hours": "hours",
    "cost_usd": "cost $",
    "cost_low_usd": "low $",
    "cost_high_usd": "high $",
    "expected_interruptions": "interruptions",
    "p_no_interruption": "P(none)",
    "spot_risky": "risky",
    "price_stale": "stale",
    "price_basis": "basis",
    "available_now": "capacity",
    "available_checked_at": "capacity checked",
    "gpu_memory_gib": "GiB/GPU",
    "gpu_count": "GPUs",
    "memory_gib": "GiB",
    "memory_bandwidth_gbps": "GB/s",
    "fp32_tflops": "fp32 TF",
    "tf32_tflops": "tf32 TF",
    "fp16_tflops": "fp16 TF",
    "fp8_tflops": "fp8 TF",
    "memory_type": "memory",
    "sustained_fp16_tflops": "sustained fp16 TF",
    "sustained_source": "sustained from",
    "sustained_fp32_tflops": "sustained fp32 TF",
    "sustained_fp32_source": "fp32 from",
    "nvlink_gbps": "NVLink GB/s",
    "tdp_w": "TDP W",
    "architecture": "arch",
    "snapshot_id": "snapshot",
    "snapshot_kind": "kind",
    "created_at": "stored",
    # gpuplan plan (planner.cost.commitment_plan)
    "committed_usd_per_hour": "commit $/h",
    "on_demand_usd_per_hour": "on-demand $/h",
    "break_even_vs_on_demand": "pays vs on-demand above",
    "break_even_vs_spot": "pays vs spot above",
    "committed_instances": "commit",
    "flex_pricing": "rest on",
    "total_usd_per_month": "$/month",
    "total_usd_per_year": "$/year",
    "all_on_demand_usd_per_month": "all on-demand $/month",
}


def gpu_label(gpu: Any, gpus_per_node: Any, nodes: Any) -> str:
    """'8 H100-SXM' on one instance, '2x8 H100-SXM' on two joined by network, '0.25 L4' for a slice."""
    if gpu is None or (isinstance(gpu, float) and math.isnan(gpu)):
        return "-"
    per_node = _json_value(gpus_per_node)
    count = "-" if per_node is None else f"{per_node:g}"
    node_count = _json_value(nodes)
    prefix = f"{int(node_count)}x" if node_count is not None and node_count > 1 else ""
    return f"{prefix}{count} {gpu}"


def with_gpu_label(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``gpus`` column for tables (``gpu_label`` of each option)."""
    labelled = frame.copy()
    if frame.empty:
        labelled["gpus"] = []
        return labelled
    labelled["gpus"] = [
        gpu_label(g, n, k) for g, n, k in zip(frame["gpu"], frame["gpus_per_node"], frame["nodes"], strict=True)
    ]
    return labelled


# Columns that may differ between offerings shown as one table row: where they are sold (and when that region's price
# was read). Every other column shown, and these, must be equal for rows to merge.
REGION_COLUMNS = ("rank", "region", "zone", "price_as_of")
SAME_OFFERING = ("provider", "instance_type", "gpu", "gpus_per_node", "nodes", "pricing", "price_usd_per_hour",
                 "time_to_solution_hours", "cost_usd")  # fmt: skip


def region_list(regions: Sequence[str]) -> str:
    """'us-east-1 +16 more': the first region (the best-ranked) and how many others."""
    return regions[0] if len(regions) == 1 else f"{regions[0]} +{len(regions) - 1} more"


def collapse_regions(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Ranked options with one row per offering sold alike in several regions, for tables only.

    Rows that agree on SAME_OFFERING (provider, instance type, GPUs, nodes, pricing, price, and so time and cost) and
    on every other of the ``columns`` the table shows (default: all) but REGION_COLUMNS become the first of them, at
    its rank: its region reads ``region_list`` of all of them, with ``regions`` (a count) and ``all_regions``
    (comma-separated) added. The numbers are cost/rank.py's, nothing is recomputed; a region-dependent figure that
    is shown (co2_kg in --wide) keeps its rows apart. CSV, JSON and the library keep every region's row.
    """
    import pandas as pd

    if frame.empty:
        return frame.assign(regions=pd.Series(dtype="int64"), all_regions=pd.Series(dtype=object))
    compared = frame.columns if columns is None else [*SAME_OFFERING, *columns]
    key_columns = [c for c in dict.fromkeys(compared) if c in frame.columns and c not in REGION_COLUMNS]
    # Hashing the rows treats NaN as equal to NaN (a missing spot figure, a missing co2 value), unlike ==.
    key = pd.util.hash_pandas_object(frame[key_columns], index=False).to_numpy()
    # Group codes in order of each group's first row; one pass over plain lists (a pandas selection per group cost
    # half a second per plan-page answer on the bundled catalog).
    codes = pd.factorize(key)[0].tolist()
    regions: list[list[str]] = [[] for _ in range(max(codes) + 1)]
    first: list[int] = [0] * len(regions)
    for position, (code, region) in enumerate(zip(codes, frame["region"].astype(str).tolist(), strict=True)):
        if not regions[code]:
            first[code] = position
        regions[code].append(region)
    collapsed = frame.iloc[first].copy()
    collapsed["region"] = [region_list(names) for names in regions]
    collapsed["regions"] = [len(names) for names in regions]
    collapsed["all_regions"] = [", ".join(names) for names in regions]
    # Groups come in order of their first row: the table keeps the ranking's order.
    return collapsed.reset_index(drop=True)


def with_view_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Ranked options plus what people read first: ``gpus`` ('2x8 H100-SXM') and ``usd_per_gpu_hour``.

    ``usd_per_gpu_hour`` is the instance price over its GPUs, the unit clouds quote and people compare.
    """
    labelled = with_gpu_label(frame)
    if "price_per_gpu_usd_per_hour" in frame.columns:
        labelled["usd_per_gpu_hour"] = frame["price_per_gpu_usd_per_hour"]
    elif "price_usd_per_hour" in frame.columns and "gpus_per_node" in frame.columns:
        labelled["usd_per_gpu_hour"] = frame["price_usd_per_hour"] / frame["gpus_per_node"]
    return labelled


def option_headline(option: Mapping[str, Any]) -> dict[str, str]:
    """One ranked option as the app's headline figures, formatted (cost, time, prices, range, GPUs)."""
    nodes = int(option["nodes"])
    return {
        "Cost per run": f"${option['cost_usd']:,.0f}",
        "Time to solution": f"{option['time_to_solution_hours']:,.1f} h",
        "Price per hour": f"${option['price_usd_per_hour'] * nodes:,.2f}",
        "Per GPU-hour": f"${option['price_usd_per_hour'] / option['gpus_per_node']:,.2f}",
        "Cost range": f"${option['cost_low_usd']:,.0f}-{option['cost_high_usd']:,.0f}",
        "gpus": gpu_label(option["gpu"], option["gpus_per_node"], nodes),
    }


def age_text(hours: float) -> str:
    """'5 h', '3 days', '14 months': how old a price is, in the unit people would say."""
    if hours < 48:
        return f"{hours:,.0f} h"
    days = hours / 24
    return f"{days:,.0f} days" if days < 90 else f"{days / 30.44:,.0f} months"


def terminal_width(default: int = 100) -> int:
    """The terminal's width (``COLUMNS`` wins), or ``default`` when output is not a terminal."""
    import shutil

    return shutil.get_terminal_size((default, 24)).columns


# Fitting the terminal, a text column folds only at spaces: it keeps at least its longest word (a name is never
# split), at least LEAST_TEXT_WIDTH, and a column of sentences (notes) at least the width that folds its longest cell
# onto FOLDED_LINES_KEPT lines; narrower, lower-priority columns are left out first.
LEAST_TEXT_WIDTH = 8
FOLDED_LINES_KEPT = 3


def render_table(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    fit: bool = False,
    drop_first: Sequence[str] = (),
    one_line: Sequence[str] = (),
) -> str:
    """A rich table as text (right-aligned numbers, '-' for missing); every cell is shown as inert text.

    ``fit``: a compact frame sized to the terminal: long text cells fold at spaces (never inside a word, so never
    inside a name), headers too; when even folded text would not fit, the ``drop_first`` columns are left out in that
    order (lowest priority first) and the caption names them.
    Otherwise the table is as wide as its widest row, so no cell wraps; rich folds only past 400 columns.
    ``one_line``: text columns that never fold: their cells are cut to the width left, with an ellipsis.
    """
    import pandas as pd
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    shown = list(columns) if columns is not None else list(frame.columns)
    numeric = {column: column in frame.columns and pd.api.types.is_numeric_dtype(frame[column]) for column in shown}
    # Fitting the terminal, text may fold onto a second line; numbers, rank and pricing never do.
    rigid = {column: numeric[column] or column in ("rank", "pricing") for column in shown}
    headers = {column: TABLE_HEADERS.get(column, column) if fit else column for column in shown}
    cells = {
        column: [visible(text) for text in column_cells(frame[column].tolist(), column)]
        if column in frame.columns
        else []
        for column in shown
    }
    natural = {column: max([len(headers[column]), *(len(text) for text in cells[column])]) for column in shown}
    width = terminal_width()
    left_out: list[str] = []
    widths: dict[str, int] = {}
    if fit:
        least = {column: _least_width(cells[column], headers[column], rigid=rigid[column]) for column in shown}
        for column in drop_first:
            if sum(least[c] for c in shown) + len(shown) - 1 <= width:
                break
            if column in shown:
                shown.remove(column)
                left_out.append(column)
        widths = _fitted_widths({c: natural[c] for c in shown}, least, width - (len(shown) - 1))
    table = Table(
        title=plain_text(title) if title else None,
        caption=plain_text(f"left out at this width: {', '.join(left_out)} (--format csv has them)")
        if left_out
        else None,
        show_lines=False,
        header_style="bold",
        box=box.SIMPLE_HEAD if fit else box.HEAVY_HEAD,
        padding=(0, 0) if fit else (0, 1),
        show_edge=not fit,
        pad_edge=not fit,
    )
    for column in shown:
        if column in one_line:
            # What the other columns leave of the terminal; the cell is cut there rather than folded.
            room = width - sum(widths.get(c, natural[c]) for c in shown if c != column) - (len(shown) - 1)
            table.add_column(
                plain_text(headers[column]), overflow="ellipsis", no_wrap=True, max_width=max(LEAST_TEXT_WIDTH, room)
            )
            continue
        header = visible(headers[column])
        if column in widths and len(header) > widths[column]:
            # Folded at its spaces here: a number column never wraps, and rich would cut its header.
            header = "\n".join(textwrap.wrap(header, widths[column], break_long_words=False))
        table.add_column(
            Text(header),
            justify="right" if numeric[column] else "left",
            overflow="fold",
            no_wrap=fit and rigid[column],
            width=widths.get(column),
        )
    for row in zip(*(cells[column] for column in shown), strict=True):
        table.add_row(*(Text(text) for text in row))
    buffer = io.StringIO()
    # Fitted: the terminal's width, rich sizes the table naturally within it and folds text only when it must.
    if not fit:
        width = max(80, min(400, sum(natural[c] for c in shown) + 3 * len(shown) + 1))
    Console(file=buffer, width=max(40, width), force_terminal=False, highlight=False).print(table)
    return buffer.getvalue()


def _least_width(cells: Sequence[str], header: str, *, rigid: bool) -> int:
    """The narrowest a column may fold to: a number or a name keeps its width, text its longest word and (for
    sentences) a width that folds the longest onto FOLDED_LINES_KEPT lines; a header folds at its spaces."""
    header_word = max((len(word) for word in header.split()), default=0)
    longest = max((len(text) for text in cells), default=0)
    if rigid:
        return max(header_word, longest)
    word = max((len(word) for text in cells for word in text.split()), default=0)
    sentences = -(-longest // FOLDED_LINES_KEPT) if any(" " in text for text in cells) else 0
    return min(max(LEAST_TEXT_WIDTH, word, sentences, header_word), max(longest, header_word, LEAST_TEXT_WIDTH))


def _fitted_widths(natural: dict[str, int], least: dict[str, int], room: int) -> dict[str, int]:
    """Each column's width: its natural one, less where the terminal is too narrow, taken from the column with the
    most to spare above its least width (headers and sentences fold first, names never)."""
    widths = dict(natural)
    excess = sum(widths.values()) - room
    while excess > 0:
        column = max(widths, key=lambda c: widths[c] - least.get(c, widths[c]))
        spare = widths[column] - least.get(column, widths[column])
        if spare <= 0:
            break  # narrower than every least width: the columns left are as narrow as they fold
        cut = min(spare, excess, max(1, spare // 2))
        widths[column] -= cut
        excess -= cut
    return widths


def emit(text: str, output: Path | None, *, raw: bool = False) -> None:
    """Write data to ``output`` or stdout (messages go to stderr elsewhere). ``raw`` data (CSV) on a terminal shows
    its control characters (a provider's text, say) as escapes, as the tables do, so they cannot drive the terminal;
    a pipe or a file gets the bytes as they are."""
    if output is None:
        if raw and sys.stdout.isatty():
            text = "\n".join(visible(line) for line in text.split("\n"))
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{output}: cannot write ({exc.strerror or exc})", field="output") from None


def html_report(result: RankResult, *, top: int = 20) -> str:
    """``result`` as one self-contained HTML page (planner.report_html)."""
    from planner.report_html import html_report as _html_report

    return _html_report(result, top=top)
