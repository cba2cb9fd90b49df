"""Reading the examples and links out of the README and docs/, and running the examples as a user would."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))

# [text](target) with a target that is not a web address; images and reference links are not used in these pages.
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of one language, without their fences."""
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def cli_lines(text: str) -> list[str]:
    """Every `gpuplan ...` line of the ```bash blocks; `refresh` needs the network, so it is not run."""
    lines = []
    for block in blocks(text, "bash"):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command.startswith("gpuplan ") and "refresh" not in command:
                lines.append(command)
    return lines


def run_python(block: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run one ```python block in a fresh namespace, in an empty working folder (examples may write files)."""
    monkeypatch.chdir(tmp_path)
    exec(compile(block, name, "exec"), {"__name__": "__docs__"})


def run_cli(line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Run one `gpuplan ...` line in-process; it must exit 0, print no error and write something."""
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


def relative_links(text: str) -> list[str]:
    """Link targets that point into the repository (no scheme, no mailto)."""
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors
