"""A ranking as one self-contained HTML file: the question, the answer, a cost-vs-time chart, the table, the sources.

Nothing is fetched when the file is opened (no script, stylesheet or image from the network): the chart is an inline
SVG built here, so the report reads the same offline and years later. Every text from the catalog or the user is
escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from planner.cost.result import RankResult

# The table's columns, and the most options the table and the chart show (the chart: the cheapest per pricing).
HTML_COLUMNS = ("rank", "provider", "region", "instance_type", "gpus", "pricing", "price_usd_per_hour", "price_basis",
                "time_to_solution_hours", "cost_usd", "cost_low_usd", "cost_high_usd", "price_as_of")  # fmt: skip
HTML_TOP = 20
CHART_POINTS = 400
# The chart's size and margins, in SVG units (pixels at 100%).
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 720, 420, 70, 20, 20, 50
COLOURS = {"on-demand": "#1f77b4", "spot": "#ff7f0e"}
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}"
    "table{border-collapse:collapse;font-size:.85rem}td,th{border-bottom:1px solid #ddd;padding:.2rem .5rem}"
    "td.n{text-align:right}h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}.small{color:#666;font-size:.8rem}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dt{color:#666}dd{margin:0}"
    ".wide{overflow-x:auto}"
)


def html_report(result: RankResult, *, top: int = HTML_TOP, generated_at: datetime | None = None) -> str:
    """``result`` as one HTML page: question, headline, chart (inline SVG), the best ``top`` options, assumptions,
    notes and the catalog snapshots and price sources behind the prices."""
    from planner import __version__
    from planner.report import TABLE_HEADERS, column_cells, with_gpu_label

    moment = (generated_at or datetime.now(UTC)).isoformat(timespec="seconds")
    options = result.table[result.table["rank"].notna()] if len(result.table) else result.table
    shown = with_gpu_label(options.head(top)) if len(options) else options
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(_title(result))}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(_title(result))}</h1>",
        _definition_list(result.question),
        "<h2>Answer</h2>",
        _list(result.headline_lines() or [result.message or "no option"]),
        "<h2>Cost and time of each option</h2>",
        _chart(options),
        f"<h2>Best {len(shown)} of {len(options)} options</h2>",
        _table(shown, column_cells, TABLE_HEADERS),
        "<h2>Assumptions</h2>",
        _list(result.assumptions),
    ]
    if result.notes:
        parts += ["<h2>Notes</h2>", _list(result.notes)]
    parts += ["<h2>Prices and sources</h2>", _sources(result)]
    parts.append(f'<p class="small">gpu-planner {escape(__version__)}, generated {escape(moment)}; prices in USD.</p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _title(result: RankResult) -> str:
    question = result.question
    return f"{question.get('workload', 'Training job')}: options by {question.get('by', 'cost')}"


def _definition_list(items: Mapping[str, Any]) -> str:
    rows = [
        f"<dt>{escape(str(key).replace('_', ' '))}</dt><dd>{escape(_text(value))}</dd>"
        for key, value in items.items()
        if value not in (None, "", [], ())
    ]
    return f"<dl>{''.join(rows)}</dl>" if rows else ""


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _list(lines: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>"


def _table(frame: pd.DataFrame, column_cells: Any, headers: Mapping[str, str]) -> str:
    columns = [c for c in HTML_COLUMNS if c in frame.columns]
    if not columns or frame.empty:
        return "<p>No option.</p>"
    cells = {column: column_cells(frame[column].tolist(), column) for column in columns}
    numeric = {column: frame[column].dtype.kind in "fiu" for column in columns}
    head = "".join(f"<th>{escape(headers.get(column, column).replace('_', ' '))}</th>" for column in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=n' if numeric[column] else ''}>{escape(cells[column][i])}</td>" for column in columns)
        + "</tr>"
        for i in range(len(frame))
    )
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _sources(result: RankResult) -> str:
    rows = [
        f"<li>{escape(str(s['provider']))}: snapshot {escape(str(s['snapshot_id']))} ({escape(str(s['kind']))}), "
        f"prices as of {escape(str(s['as_of']))}; {escape(str(s['source']))}</li>"
        for s in result.snapshots
    ]
    rows += [
        f"<li>{escape(provider)} price sources: {escape('; '.join(names))}</li>"
        for provider, names in sorted(result.price_sources.items())
    ]
    return f"<ul>{''.join(rows)}</ul>" if rows else "<p>Prices from a catalog passed in by the caller.</p>"


def _log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten (and 2, 3 and 5 times them over a narrow range) between ``low`` and ``high``."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    decades = [10.0**power for power in range(first, last + 1)]
    steps = (1, 2, 3, 5) if last - first <= 1 else (1, 2, 5) if last - first <= 2 else (1,)
    return [d * s for d in decades for s in steps if low <= d * s <= high]


def _chart(options: pd.DataFrame) -> str:
    """Cost per run against time to solution, both on log scales, a dot per option (Pareto front filled)."""
    if options.empty:
        return "<p>No option to chart.</p>"
    points = options.head(CHART_POINTS)
    time, cost = points["time_to_solution_hours"].astype(float), points["cost_usd"].astype(float)
    usable = (time > 0) & (cost > 0)
    points, time, cost = points[usable], time[usable], cost[usable]
    if points.empty:
        return "<p>No option to chart.</p>"
    # A little room either side so that the extreme points are not on the axes.
    t_low, t_high = float(time.min()) / 1.2, float(time.max()) * 1.2
    c_low, c_high = float(cost.min()) / 1.2, float(cost.max()) * 1.2

    def x(value: float) -> float:
        return LEFT + (math.log(value) - math.log(t_low)) / (math.log(t_high) - math.log(t_low)) * (
            WIDTH - LEFT - RIGHT
        )

    def y(value: float) -> float:
        return (
            HEIGHT
            - BOTTOM
            - (math.log(value) - math.log(c_low)) / (math.log(c_high) - math.log(c_low)) * (HEIGHT - TOP - BOTTOM)
        )

    parts = [
        f'<svg width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="cost per run against time to solution">',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#444"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#444"/>',
    ]
    for tick in _log_ticks(t_low, t_high):
        parts.append(
            f'<text x="{x(tick):.1f}" y="{HEIGHT - BOTTOM + 16}" font-size="11" text-anchor="middle">{tick:g}</text>'
        )
    for tick in _log_ticks(c_low, c_high):
        parts.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" font-size="11" text-anchor="end">${tick:,.0f}</text>')
    parts.append(
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" font-size="12" text-anchor="end">'
        "time to solution, hours (log)</text>"
    )
    parts.append(
        f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})">cost per run, USD (log)</text>'
    )
    pareto = points["pareto"].astype(bool).tolist() if "pareto" in points.columns else [False] * len(points)
    for (_, row), hours, usd, front in zip(points.iterrows(), time, cost, pareto, strict=True):
        colour = COLOURS.get(str(row["pricing"]), "#555")
        label = (
            f"#{int(row['rank'])} {row['provider']} {int(row['nodes'])} x {row['instance_type']} ({row['region']}), "
            f"{row['pricing']}: ${usd:,.0f} in {hours:,.1f} h"
        )
        fill = colour if front else "none"
        parts.append(
            f'<circle cx="{x(hours):.1f}" cy="{y(usd):.1f}" r="4" stroke="{colour}" fill="{fill}">'
            f"<title>{escape(label)}</title></circle>"
        )
    legend = [(name, colour) for name, colour in COLOURS.items() if (points["pricing"] == name).any()]
    for i, (name, colour) in enumerate(legend):
        parts.append(
            f'<circle cx="{LEFT + 8 + 90 * i}" cy="{HEIGHT - 12}" r="4" fill="{colour}"/>'
            f'<text x="{LEFT + 16 + 90 * i}" y="{HEIGHT - 8}" font-size="11">{escape(name)}</text>'
        )
    parts.append("</svg>")
    note = "Filled dots: the Pareto front (no other option both cheaper and faster)."
    if len(options) > len(points):
        note += f" The best {len(points)} of {len(options)} options are drawn."
    return "\n".join(parts) + f'\n<p class="small">{escape(note)}</p>'
