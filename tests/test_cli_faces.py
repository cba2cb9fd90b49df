"""The CLI's faces: tables that fit the terminal, --wide, --version, one meaning of -p, clean errors."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import CliRun

from planner import __version__

RANK = ["rank", "-w", "llama-2-7b", "--tokens", "1e10"]


def test_version(cli: CliRun) -> None:
    assert cli("--version") == (0, f"gpuplan {__version__}\n", "")


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize(
    "args",
    [RANK, ["compare", "-w", "llama-2-7b", "-g", "h100", "-g", "l4"], ["offers"], ["gpus"], ["catalog", "status"]],
    ids=["rank", "compare", "offers", "gpus", "status"],
)
def test_tables_fit_the_terminal(cli: CliRun, monkeypatch: pytest.MonkeyPatch, args: list[str], columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = cli(*args)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= columns


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize(
    "args",
    [RANK, ["compare", "-w", "llama-2-7b", "-g", "h100", "-g", "l4"], ["offers"]],
    ids=["rank", "compare", "offers"],
)
def test_wide_tables_fit_the_terminal_too(
    cli: CliRun, monkeypatch: pytest.MonkeyPatch, args: list[str], columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = cli(*args, "--wide")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= columns
    if columns == 80:
        # What did not fit is named, lowest priority first, rather than pushed off the screen.
        assert "left out at this width: " in " ".join(out.split())


def test_compare_why_is_one_line_per_row_and_whole_in_json(cli: CliRun, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["compare", "-w", "llama-2-7b", "--tokens", "1e10", "-g", "h100", "-g", "l4", "-g", "t4"]
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = cli(*args, "--deadline-hours", "20")
    # No choice has an option: the comparison is empty, as an empty ranking is (exit code 1), and still says why.
    assert code == 1, err
    assert "no option: no offering meets a 20-hour deadline" in err
    lines = out.splitlines()
    rows = lines[next(i for i, line in enumerate(lines) if line.startswith("──")) + 1 :]
    # Every line under the header is a row of its own: no reason folds onto a second line.
    assert [row.split()[0] for row in rows] == ["h100", "h100", "l4", "l4", "t4", "t4"], out
    assert all(len(row) <= 100 and row.endswith("…") for row in rows), out
    code, out, _ = cli(*args, "--deadline-hours", "20", "-f", "json")
    notes = [option["notes"] for option in json.loads(out)["options"]]
    assert all(note.startswith("no option: ") and len(note) > 60 for note in notes)


def test_rank_compact_columns_and_wide(cli: CliRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    _, compact, err = cli(*RANK)
    header = next(line for line in compact.splitlines() if line.strip().startswith("rank"))
    assert header.split() == ["rank", "provider", "region", "instance", "GPUs", "pricing", "$/h", "hours", "cost", "$"]
    assert "--wide adds" in err
    _, wide, _ = cli(*RANK, "--wide")
    header = next(line for line in wide.splitlines() if line.strip().startswith("rank"))
    for column in ("GPUs per node", "low $", "interruptions", "notes"):
        assert column in header


def test_csv_keeps_every_column_whatever_the_view(cli: CliRun) -> None:
    from planner.cost.result import TABLE_COLUMNS

    _, out, _ = cli(*RANK, "-f", "csv")
    assert next(csv.reader(io.StringIO(out))) == list(TABLE_COLUMNS)


def test_p_means_provider_in_every_command(cli: CliRun) -> None:
    for args in (["offers", "-p", "gcp", "-f", "json"], [*RANK, "-p", "gcp", "-f", "json"]):
        code, out, err = cli(*args)
        assert code == 0, err
        assert '"provider": "gcp"' in out and '"provider": "aws"' not in out
    code, _, err = cli("estimate", "-w", "llama-2-7b", "-g", "h100", "-p", "bf16")
    assert code == 2 and "No such option: -p" in err


def test_history_with_bytes_that_are_not_utf8_is_one_line_exit_2(cli: CliRun) -> None:
    code, out, err = cli("catalog", "history", "-i", b"p5\xff".decode("utf-8", "surrogateescape"), "-r", "us-east-1")
    assert (code, out) == (2, "")
    assert err == "error: --instance must be UTF-8 text, got 'p5\\xff'\n"


def test_the_lora_share_s_default_is_the_model_s_wherever_a_face_states_it() -> None:
    # The default lives in data/perf_params.json; the CLI's help and the app's label repeat it for the user.
    from planner.cli.workload_opts import TrainableShareOpt
    from planner.perf.params import default_params
    from planner.ui.workload_inputs import TRAINABLE_SHARE_HELP, TRAINABLE_SHARE_LABEL

    default = default_params().memory["lora_trainable_fraction"]
    option = TrainableShareOpt.__metadata__[0]
    assert f"default {default:g}." in option.help
    assert f"(0 = {default:g})" in TRAINABLE_SHARE_LABEL and f"the model's default, {default:g}" in TRAINABLE_SHARE_HELP


def _rows(out: str) -> list[str]:
    """The table's rows: the lines under its header rule, above its caption."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("──")) + 1
    end = next((i for i, line in enumerate(lines) if "left out at this width" in line), len(lines))
    return [line for line in lines[start:end] if line.strip()]


def test_gpus_at_120_columns_never_splits_a_name(cli: CliRun, monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.api import hardware_table

    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli("gpus")
    assert code == 0
    names = list(hardware_table()["gpu"])
    # Each GPU's row starts with its whole name, and no folded line starts a fragment of one.
    firsts = [row.split()[0] for row in _rows(out) if not row.startswith(" ")]
    assert firsts == names
    assert max(len(line) for line in out.splitlines()) <= 120
    # Numbers are never cut: the B200's fp16 peak reads in full.
    b200 = next(row for row in _rows(out) if row.startswith("B200 "))
    assert "2,250" in b200.split()


def test_rank_wide_at_120_columns_keeps_node_counts_and_leaves_out_the_notes(
    cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli(*RANK, "--max-nodes", "4", "--wide", "--top", "12")
    assert code == 0
    # The header folds at its spaces ("GPUs per node" over three lines) above the rule.
    header = out.split("──")[0].split("by cost")[1].split()
    assert {"nodes", "GPUs", "per", "node"} <= set(header) and "notes" not in header
    caption = " ".join(out.split()).split("left out at this width: ")[1]
    assert "notes" in caption and "nodes" not in caption.replace("notes", "")
    rows = _rows(out)
    # One line per option (no note folds under it), and no two alike: the node count tells them apart.
    assert len(rows) == 12 and all(row.lstrip()[0].isdigit() for row in rows)
    assert len({" ".join(row.split()[1:]) for row in rows}) == 12


def test_a_price_column_has_one_number_of_decimals() -> None:
    from planner.report import column_cells

    assert column_cells([0.0076, 11.39, None], "price_usd_per_hour") == ["0.0076", "11.3900", "-"]
    assert column_cells([0.35, 11.39], "price_usd_per_hour") == ["0.35", "11.39"]
    assert column_cells([1.5, 98.32], "spot_price_usd_per_hour") == ["1.50", "98.32"]
