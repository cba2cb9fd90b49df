"""Option groups: a frozen dataclass whose fields are typer options, declared once and taken by several commands.

A command names a group as one keyword-only parameter (``job: WorkloadFlags``); ``with_groups`` lays the group's
fields out in its place as options of the command's own (typer reads them from the signature, so ``--help`` lists
each as before) and calls the command with one instance of the group. A group's field may be a group itself.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")


def _is_group(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _options(group: type[Any]) -> list[inspect.Parameter]:
    """The options of ``group``, in field order; a field that is itself a group gives its own options in its place."""
    hints = typing.get_type_hints(group, include_extras=True)
    laid_out: list[inspect.Parameter] = []
    for item in dataclasses.fields(group):
        if _is_group(hints[item.name]):
            laid_out.extend(_options(hints[item.name]))
            continue
        default = inspect.Parameter.empty if item.default is dataclasses.MISSING else item.default
        laid_out.append(
            inspect.Parameter(item.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[item.name])
        )
    return laid_out


def _made(group: type[Any], values: dict[str, Any]) -> Any:
    """An instance of ``group`` from the option values (each taken out of ``values``)."""
    hints = typing.get_type_hints(group, include_extras=True)
    return group(
        **{
            item.name: _made(hints[item.name], values) if _is_group(hints[item.name]) else values.pop(item.name)
            for item in dataclasses.fields(group)
        }
    )


def with_groups(command: Callable[..., R]) -> Callable[..., R]:
    """``command`` with each dataclass-typed parameter replaced by that dataclass's fields (its options)."""
    hints = typing.get_type_hints(command, include_extras=True)
    signature = inspect.signature(command)
    groups = {name: hints[name] for name in signature.parameters if _is_group(hints[name])}
    laid_out: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name in groups:
            laid_out.extend(_options(groups[parameter.name]))
        else:
            laid_out.append(parameter.replace(annotation=hints[parameter.name], kind=inspect.Parameter.KEYWORD_ONLY))
    names = [parameter.name for parameter in laid_out]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise TypeError(f"{command.__name__}: options declared twice: {', '.join(twice)}")

    @functools.wraps(command)
    def run(**values: Any) -> R:
        for name, group in groups.items():
            values[name] = _made(group, values)
        return command(**values)

    # typer reads the options from the signature and the annotations, which must name the options, not the groups.
    run.__signature__ = signature.replace(parameters=laid_out)  # type: ignore[attr-defined]
    run.__annotations__ = {parameter.name: parameter.annotation for parameter in laid_out}
    return run
