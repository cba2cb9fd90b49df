"""Option groups: a frozen dataclass whose fields are typer options, declared once and taken by several commands.

A command names a group as one keyword-only parameter (``job: WorkloadFlags``); ``with_groups`` lays the group's
fields out in its place as options of the command's own (typer reads them from the signature, so ``--help`` lists
each as before) and calls the command with one instance of the group.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")


def _groups(hints: dict[str, Any], names: typing.Iterable[str]) -> dict[str, type[Any]]:
    return {
        name: hints[name]
        for name in names
        if isinstance(hints.get(name), type) and dataclasses.is_dataclass(hints[name])
    }


def with_groups(command: Callable[..., R]) -> Callable[..., R]:
    """``command`` with each dataclass-typed parameter replaced by that dataclass's fields (its options)."""
    hints = typing.get_type_hints(command, include_extras=True)
    signature = inspect.signature(command)
    groups = _groups(hints, signature.parameters)
    laid_out: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name not in groups:
            laid_out.append(parameter.replace(annotation=hints[parameter.name], kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        group = groups[parameter.name]
        field_hints = typing.get_type_hints(group, include_extras=True)
        for item in dataclasses.fields(group):
            default = inspect.Parameter.empty if item.default is dataclasses.MISSING else item.default
            laid_out.append(
                inspect.Parameter(
                    item.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=field_hints[item.name]
                )
            )
    names = [parameter.name for parameter in laid_out]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise TypeError(f"{command.__name__}: options declared twice: {', '.join(twice)}")

    @functools.wraps(command)
    def run(**values: Any) -> R:
        for name, group in groups.items():
            values[name] = group(**{item.name: values.pop(item.name) for item in dataclasses.fields(group)})
        return command(**values)

    # typer reads the options from the signature and the annotations, which must name the options, not the groups.
    run.__signature__ = signature.replace(parameters=laid_out)  # type: ignore[attr-defined]
    run.__annotations__ = {parameter.name: parameter.annotation for parameter in laid_out}
    return run
