"""`gpuplan`: a thin shell over planner.api. Data goes to stdout, messages to stderr.

Exit codes: 0 ok, 1 runtime failure, 2 bad input, 3 stale catalog or partial refresh.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
import typer.main

from planner.cli import in_cli_words
from planner.errors import InputError, PlannerError

HELP = "Which cloud GPU offering finishes this training job cheapest, or within my deadline, and what will it cost?"
# The modules that add commands (each has ``register(app, catalog_app)``), and which a top-level command needs: a run
# imports only those (`gpuplan rank` need not load the refresh machinery); --help or an unknown word loads them all.
MODULES = ("catalog", "estimate", "rank", "refresh", "calibrate", "owned", "plan")
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "rank": ("rank",),
    "compare": ("rank",),
    "estimate": ("estimate",),
    "gpus": ("catalog",),
    "offers": ("catalog",),
    "catalog": ("catalog", "refresh"),
    "calibrate": ("calibrate",),
    "owned": ("catalog", "owned"),
    "plan": ("plan",),
}


def _print_version(value: bool) -> None:
    if value:
        from planner import __version__

        print(f"gpuplan {__version__}")
        raise typer.Exit()


def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Which cloud GPU offering finishes this training job cheapest, or within my deadline, and what will it cost?"""


def make_app(modules: Sequence[str] = MODULES) -> typer.Typer:
    """The `gpuplan` app with the commands of ``modules`` (planner.cli.<module>)."""
    app = typer.Typer(
        name="gpuplan",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    catalog_app = typer.Typer(
        help="The offering catalog: status, price history, live refresh, export and pull.", no_args_is_help=True
    )
    app.add_typer(catalog_app, name="catalog")
    app.callback()(_options)
    for module in modules:
        importlib.import_module(f"planner.cli.{module}").register(app, catalog_app)
    return app


@functools.cache
def _whole_app() -> typer.Typer:
    return make_app()


def __getattr__(name: str) -> Any:
    # ``app``: every command, built on first use (a run builds only what its command needs).
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The modules whose commands ``argv`` may run: its first word's, or all of them."""
    first = argv[1] if len(argv) > 1 else "--help"
    return COMMAND_MODULES.get(first, MODULES)


def build_command(app: typer.Typer | None = None) -> Any:
    """The click command tree of ``app`` (every command by default), with plain metavars (``--gpu GPU``) where typer
    would print ``<list[str]>``."""
    command = typer.main.get_command(app or _whole_app())
    pending = [command]
    while pending:
        current = pending.pop()
        pending.extend(getattr(current, "commands", {}).values())
        for param in current.params:
            if getattr(param, "metavar", "set") is None and not getattr(param, "is_flag", False):
                kind = str(param.bare_type()) if hasattr(param, "bare_type") else ""
                name = {"FMT": "FORMAT"}.get((param.name or "value").upper(), (param.name or "value").upper())
                param.metavar = {"float": "N", "int": "N", "Path": "FILE"}.get(kind, name)
    return command


# The flag of each library field where it is not "--" + the field with dashes; per command where they differ.
FIELD_FLAGS: dict[str, str] = {
    "instance_type": "--instance",
    "instance_types": "--instance",
    "min_gpu_memory_gib": "--min-gpu-memory",
    "max_price_usd_per_hour": "--max-price",
    "max_age_hours": "--max-age",
    "work": "--tokens",
    "workload": "--workload",
    "log": "LOG",
    "price_usd_per_gpu_hour": "--price",
    "interval_s": "--interval",
    "default_interruption_rate": "--default-interruption-rate",
    "interruption_rate_per_node_hour": "--interruption-rate",
    "time_limit_s": "--time-limit",
}
COMMAND_FLAGS: dict[str, dict[str, str]] = {
    "compare": {"gpus": "--gpu", "instance_types": "--instance"},
    "offers": {"gpus": "--gpu", "providers": "--provider", "regions": "--region"},
}


def flag_for(field: str, command: str | None) -> str:
    """The CLI flag that sets the library field ``field`` in ``command``."""
    return COMMAND_FLAGS.get(command or "", {}).get(field) or FIELD_FLAGS.get(field) or "--" + field.replace("_", "-")


def _command(argv: list[str]) -> str | None:
    """The (sub)command being run: the last of the words before the first option (``catalog refresh``)."""
    words: list[str] = []
    for arg in argv[1:]:
        if arg.startswith("-"):
            break
        words.append(arg)
    return words[-1] if words else None


def message_for(exc: PlannerError, argv: list[str]) -> str:
    """The one line for the user: an InputError's field reworded as the flag that sets it, and a library call it
    points to as the command that does the same."""
    text = str(exc)
    if isinstance(exc, InputError) and exc.field:
        command = _command(argv)
        text = exc.reworded(lambda field: flag_for(field, command))
    return in_cli_words(text)


def main() -> None:
    """Entry point: PlannerError becomes one line on stderr and its exit code, never a traceback."""
    from typer.exceptions import TyperException

    try:
        # Not standalone: click's own handling would print a usage block for a value it cannot parse.
        code = build_command(make_app(modules_for(sys.argv)))(prog_name="gpuplan", standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except typer.Abort:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except TyperException as exc:
        # Click's own errors (typer's bundled click): a value it cannot read ("--gpus 1.5"), a missing option, an
        # extra argument. One line, as ours are, with where the options are listed.
        from planner.report import visible

        context = getattr(exc, "ctx", None)
        where = f"{context.command_path} --help" if context is not None else "gpuplan --help"
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        param = getattr(exc, "param", None)
        flags = [opt for opt in getattr(param, "opts", []) if opt.startswith("--")]
        if flags:
            # Named as ours are: the flag first ("--gpus '1.5' is not a valid int").
            missing = type(exc).__name__ == "MissingParameter"
            text = f"{flags[0]} is required" if missing else f"{flags[0]} {getattr(exc, 'message', text)}"
        print(f"error: {visible(text)} ({where} lists the options)", file=sys.stderr)
        sys.exit(int(getattr(exc, "exit_code", 2)))
    except PlannerError as exc:
        from planner.report import visible

        # The message may quote catalog or user text: control bytes are shown, never sent to the terminal.
        print(f"error: {visible(message_for(exc, sys.argv))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # a bug: one line unless the user asks for the traceback
        if os.environ.get("GPUPLAN_DEBUG"):
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (set GPUPLAN_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
