"""planner.cli.groups: an option group declared once, laid out as a command's own options."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from planner.cli.groups import with_groups

AOpt = Annotated[int, typer.Option("--a")]
BOpt = Annotated[str | None, typer.Option("--b")]


@dataclass(frozen=True)
class Inner:
    b: BOpt = None


@dataclass(frozen=True)
class Outer:
    a: AOpt = 1
    inner: Inner = Inner()


def test_a_nested_group_is_laid_out_as_options_and_handed_back_as_instances() -> None:
    got: list[tuple[str, Outer]] = []

    @with_groups
    def command(*, name: Annotated[str, typer.Option("--name")], flags: Outer) -> None:
        got.append((name, flags))

    assert list(inspect.signature(command).parameters) == ["name", "a", "b"]
    app = typer.Typer()
    app.command()(command)
    app.command("other")(lambda: None)  # a group of two commands, so that the name is given
    result = CliRunner().invoke(app, ["command", "--name", "x", "--b", "y"])
    assert result.exit_code == 0, result.output
    assert got == [("x", Outer(a=1, inner=Inner(b="y")))]


def test_an_option_declared_twice_is_refused_when_the_command_is_made() -> None:
    def command(*, b: BOpt = None, flags: Outer) -> None: ...

    with pytest.raises(TypeError, match="options declared twice: b"):
        with_groups(command)
