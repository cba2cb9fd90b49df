"""The README's examples run: every ```python block, and every `gpuplan ...` line of the ```bash blocks."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from planner.cli.main import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _cli_lines() -> list[str]:
    lines = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command.startswith("gpuplan ") and "refresh" not in command:
                lines.append(command)
    return lines


@pytest.mark.parametrize("block", _blocks("python"), ids=lambda b: b.strip().splitlines()[-1][:40])
def test_python_examples_run(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize("line", _cli_lines())
def test_cli_examples_run(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", shlex.split(line))
    code: object = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code in (0, None), err
    assert "error" not in err
    assert out or list(tmp_path.iterdir())


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    assert "bash scripts/dev.sh app" in README
    assert "bash scripts/dev.sh test" in README
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/dev.sh test" in ci


def test_the_rank_columns_the_readme_lists_are_the_tables() -> None:
    from planner.cost.result import TABLE_COLUMNS

    listed = re.search(r"Columns are stable, units last: `([^`]*)`", README)
    assert listed is not None
    assert [name.strip() for name in listed.group(1).split(",")] == list(TABLE_COLUMNS)
