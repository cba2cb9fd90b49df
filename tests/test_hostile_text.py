"""Catalog text is data, never code: formula cells in CSV, markup and control bytes in tables (end to end)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from conftest import CliRun
from factories import make_offer, write_catalog

from planner.report import render_table, safe_cell, to_csv

FORMULA = "=cmd|' /C calc'!A0"
HOSTILE_TYPES = (
    "p5.48xlarge\r" + FORMULA,  # a bare carriage return: Python's csv reader starts a new row there
    "p4d.24xlarge\n+SUM(A1)",
    "@p4de.24xlarge",
)
MARKUP_TYPE = "g6.[/]xlarge[link=https://evil.example]g6e[/link]\x1b[2J\x07"


@pytest.fixture
def hostile_store() -> None:
    rows: list[dict[str, Any]] = [
        make_offer(instance_type=name, region="us-east-1", zone=f"use1-az{i}", price_usd_per_hour=40.0 + i)
        for i, name in enumerate(HOSTILE_TYPES, start=1)
    ]
    rows.append(make_offer(instance_type=MARKUP_TYPE, zone="use1-az9", price_usd_per_hour=50.0, spot_interruption=None))
    write_catalog({"aws": rows})


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def _dangerous(cell: str) -> bool:
    """A cell, or any line inside it, that a spreadsheet would run as a formula."""
    return any(line.startswith(("=", "+", "-", "@")) for line in cell.replace("\r", "\n").split("\n"))


@pytest.mark.parametrize(
    "args",
    [
        ["offers", "-p", "aws", "-f", "csv"],
        ["offers", "-p", "aws", "--by-zone", "-f", "csv"],
        ["rank", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9", "-f", "csv"],
        ["compare", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9", "-i", HOSTILE_TYPES[0], "-f", "csv"],
    ],
    ids=["offers", "offers-by-zone", "rank", "compare"],
)
def test_csv_output_neutralises_every_line_of_hostile_cells(hostile_store: None, cli: CliRun, args: list[str]) -> None:
    code, out, err = cli(*args)
    assert code == 0, err
    rows = _cells(out)
    width = len(rows[0])
    assert all(len(row) == width for row in rows), "a line break in a cell started a new row"
    cells = [cell for row in rows[1:] for cell in row]
    assert not [cell for cell in cells if _dangerous(cell)]
    assert "p5.48xlarge\n'" + FORMULA in cells  # the data is still there, escaped


def test_json_output_keeps_the_text_as_it_is(hostile_store: None, cli: CliRun) -> None:
    code, out, _ = cli("offers", "-p", "aws", "--by-zone", "-f", "json")
    assert code == 0
    assert {row["instance_type"] for row in json.loads(out)["offers"]} == {*HOSTILE_TYPES, MARKUP_TYPE}


@pytest.mark.parametrize(
    "args",
    [
        ["offers", "-p", "aws"],
        ["offers", "-p", "aws", "--wide"],
        ["rank", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9"],
        ["rank", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9", "--wide"],
    ],
)
def test_tables_show_markup_and_control_bytes_as_inert_text(
    hostile_store: None, cli: CliRun, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # wide enough that no cell folds
    code, out, err = cli(*args)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    # The markup is shown as typed (link target visible), control bytes as escapes, line breaks as \x0a.
    assert "g6.[/]xlarge[link=https://evil.example]g6e[/link]\\x1b[2J\\x07" in out
    assert "p5.48xlarge\\x0d=cmd|' /C calc'!A0" in out


def test_render_table_escapes_title_and_cells() -> None:
    import pandas as pd

    frame = pd.DataFrame({"instance_type": ["a[/]b", "[bold]x[/bold]"], "price_usd_per_hour": [1.0, 2.0]})
    text = render_table(frame, title="[red]t[/red]\x1b]8;;http://x\x1b\\")
    assert "a[/]b" in text and "[bold]x[/bold]" in text and "[red]t[/red]" in text
    assert "\x1b" not in text


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ("=1+2", "'=1+2"),
        ("x\r=cmd", "x\n'=cmd"),
        ("x\r\n-2", "x\n'-2"),
        ("x\n@SUM", "x\n'@SUM"),
        ("\t=1", "'\t=1"),
        ("p5.48xlarge", "p5.48xlarge"),
        (3.5, 3.5),
    ],
)
def test_safe_cell(cell: Any, safe: Any) -> None:
    assert safe_cell(cell) == safe


def test_to_csv_quotes_cells_with_line_breaks() -> None:
    import pandas as pd

    text = to_csv(pd.DataFrame({"a": ["x\r=cmd|calc", "ok"], "b": [1.0, 2.0]}))
    assert _cells(text) == [["a", "b"], ["x\n'=cmd|calc", "1.0"], ["ok", "2.0"]]


def test_messages_on_stderr_show_control_bytes_as_escapes(hostile_store: None, cli: CliRun) -> None:
    code, _, err = cli("catalog", "history", "-i", "p5\x1b[2J", "-r", "us-east-1")
    assert code == 2
    assert "\x1b" not in err and "p5\\x1b[2J" in err


ESCAPES = "p5\x1b[31m.48xlarge\x1b]8;;https://evil.example\x1b\\"


def test_refresh_summary_shows_control_bytes_in_provider_text_as_escapes(tmp_path: Any) -> None:
    """Issue 43: a type name with ESC/CSI/OSC 8 reached the terminal through the refresh summary."""
    from planner.catalog.store import CatalogStore
    from planner.providers.base import FetchResult, Provider
    from planner.refresh import refresh

    class Hostile(Provider):
        name = "aws"
        extra = "aws"
        credentials_hint = ""

        @classmethod
        def from_environment(cls, **options: Any) -> Provider:
            return cls()

        @property
        def source(self) -> str:
            return "hostile"

        def fetch(self, regions: Any = None, *, progress: Any = None, previous: Any = ()) -> FetchResult:
            rows = [make_offer(instance_type=ESCAPES, zone="use1-az1", gpu_count=0), make_offer(zone="use1-az2")]
            return FetchResult(rows=rows, regions=["us-east-1"], notes=[f"note on {ESCAPES}"])

    with CatalogStore(tmp_path / "c.sqlite", seed=False) as store:
        summary = refresh("aws", store=store, clients={"aws": Hostile()}).summary()
    assert "\x1b" not in summary
    assert "rejected aws p5\\x1b[31m.48xlarge\\x1b]8;;https://evil.example\\x1b\\ us-east-1/use1-az1" in summary
    assert "note: note on p5\\x1b[31m" in summary


def test_rank_table_written_to_a_file_shows_control_bytes_as_escapes(cli: CliRun, tmp_path: Any) -> None:
    write_catalog({"aws": [make_offer(instance_type=ESCAPES, region="us-east-1", zone="use1-az1")]})
    target = tmp_path / "rank.txt"
    code, _, err = cli("rank", "-p", "aws", "-w", "llama-2-7b", "--tokens", "1e9", "-o", str(target))
    assert code == 0, err
    text = target.read_text(encoding="utf-8")
    assert "\x1b" not in text and "p5\\x1b[31m.48xlarge" in text


def test_csv_on_a_terminal_shows_control_bytes_as_escapes(monkeypatch: Any, capsys: Any) -> None:
    import pandas as pd

    from planner import report

    text = report.to_csv(pd.DataFrame({"region": ["us\x1b]0;owned\x07-east"], "price": [1.5]}))
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    report.emit(text, None, raw=True)
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\x07" not in shown and "us\\x1b]0;owned\\x07-east" in shown
    assert shown.endswith("\n") and shown.count("\n") == 2
    # A pipe or a file gets the bytes as they are.
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    report.emit(text, None, raw=True)
    assert "\x1b" in capsys.readouterr().out
