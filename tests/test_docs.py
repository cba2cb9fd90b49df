"""The reference in docs/ keeps its promises: its examples run, its links resolve, its data sources are recorded."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from doc_examples import DOCS, README, ROOT, blocks, cli_lines, heading_anchors, relative_links, run_cli, run_python

PAGES = [README, *DOCS]


def _examples(kind: str) -> list[tuple[str, str]]:
    found = []
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        for example in blocks(text, "python") if kind == "python" else cli_lines(text):
            found.append((page.name, example))
    return found


def _id(case: tuple[str, str]) -> str:
    page, example = case
    return f"{page}:{example.strip().splitlines()[-1][:50]}"


@pytest.mark.parametrize("case", _examples("python"), ids=_id)
def test_python_examples_run(case: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page, block = case
    run_python(block, f"docs/{page}", tmp_path, monkeypatch)


@pytest.mark.parametrize("case", _examples("cli"), ids=_id)
def test_cli_examples_run(
    case: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_cli(case[1], tmp_path, monkeypatch, capsys)


def test_the_reference_has_examples_to_run() -> None:
    # A page whose fences changed language would silently drop out of the two tests above.
    assert len(_examples("python")) >= 3
    assert len(_examples("cli")) >= 15


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved.read_text("utf-8")):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_every_doc_page_is_linked_from_the_readme() -> None:
    linked = {target.partition("#")[0] for target in relative_links(README.read_text(encoding="utf-8"))}
    assert {f"docs/{page.name}" for page in DOCS} <= linked


def _sourced_files() -> list[Path]:
    # Every bundled CSV whose rows name where they came from.
    sourced = []
    for path in sorted((ROOT / "data").rglob("*.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle))
        if {"source", "price_source"} & set(header):
            sourced.append(path)
    return sourced


def test_every_sourced_data_file_has_a_licence_record() -> None:
    # The CSVs carry no licence column, so docs/data-sources.md is the record: each file must appear in it.
    record = (ROOT / "docs" / "data-sources.md").read_text(encoding="utf-8")
    files = _sourced_files()
    assert len(files) > 20
    missing = [
        p.relative_to(ROOT / "data").as_posix() for p in files if p.relative_to(ROOT / "data").as_posix() not in record
    ]
    assert not missing, f"add these to docs/data-sources.md with their sources' licences: {missing}"


def test_every_source_in_the_licence_record_names_a_licence() -> None:
    record = (ROOT / "docs" / "data-sources.md").read_text(encoding="utf-8")
    rows = [line for line in record.splitlines() if line.startswith("| ") and not line.startswith("| source ")]
    assert len(rows) > 20
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 5, row
        assert cells[1], f"no licence for {cells[0]}"


def test_no_data_file_has_an_empty_licence() -> None:
    # Only files that grew a licence column are checked here; today none has one (see docs/data-sources.md).
    for path in _sourced_files():
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        if rows and "licence" in rows[0]:
            assert all(row["licence"].strip() for row in rows), path.name
