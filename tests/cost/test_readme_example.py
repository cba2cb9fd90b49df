"""The procurement script the README shows runs as written, on the bundled catalog, and writes its CSV report."""

from __future__ import annotations

import csv
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """\
    import planner
    result = planner.rank("llama-3-8b", tokens=2e9, deadline_hours=48, pricing="both")
    result.table.to_csv("llama3-8b-options.csv", index=False)
    print(result.table.head(5)[["provider", "instance_type", "pricing", "cost_usd", "time_to_solution_hours"]])
    """
)


def test_procurement_script_writes_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(SCRIPT, "README.md", "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out
    assert "instance_type" in printed and "cost_usd" in printed
    with (tmp_path / "llama3-8b-options.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) >= 5
    assert all(float(r["time_to_solution_hours"]) <= 48 for r in rows)
    assert {r["pricing"] for r in rows} == {"on-demand", "spot"}
    costs = [float(r["cost_usd"]) for r in rows]
    assert costs == sorted(costs)
    assert len(SCRIPT.strip().splitlines()) <= 5
