"""The README's examples run: every ```python block, and every `gpuplan ...` line of the ```bash blocks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_examples import README, ROOT, blocks, cli_lines, run_cli, run_python

TEXT = README.read_text(encoding="utf-8")


@pytest.mark.parametrize("block", blocks(TEXT, "python"), ids=lambda b: b.strip().splitlines()[-1][:40])
def test_python_examples_run(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_python(block, "README.md", tmp_path, monkeypatch)


@pytest.mark.parametrize("line", cli_lines(TEXT))
def test_cli_examples_run(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_cli(line, tmp_path, monkeypatch, capsys)


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    assert "bash scripts/dev.sh app" in TEXT
    assert "bash scripts/dev.sh test" in TEXT
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/dev.sh test" in ci


def test_the_readme_stays_a_front_door() -> None:
    # The reference lives in docs/; the README says what it answers, how to start, one example per face, links.
    assert len(TEXT.splitlines()) < 200
    assert "### " not in TEXT


def test_the_rank_columns_the_readme_lists_are_the_tables() -> None:
    # The column list moved with the CLI reference to docs/cli.md; the README links there.
    from planner.cost.result import TABLE_COLUMNS

    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "docs/cli.md" in TEXT
    listed = re.search(r"Columns are stable, units last: `([^`]*)`", cli)
    assert listed is not None
    assert [name.strip() for name in listed.group(1).split(",")] == list(TABLE_COLUMNS)
