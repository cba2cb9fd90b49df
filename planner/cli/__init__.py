"""The `gpuplan` command line: thin shells over planner.api (main.py builds the command tree)."""

from __future__ import annotations

from planner.errors import LIBRARY_CALLS

# The commands that do what the library calls named in a message do.
COMMANDS_FOR_CALLS = {
    LIBRARY_CALLS["gpus"]: "`gpuplan gpus`",
    LIBRARY_CALLS["refresh"]: "`gpuplan catalog refresh`",
    LIBRARY_CALLS["offers"]: "`gpuplan offers`",
    LIBRARY_CALLS["status"]: "`gpuplan catalog status`",
}


def in_cli_words(text: str) -> str:
    """A library message for the command line: each library call it points to named as the command that does it."""
    for call, cli in COMMANDS_FOR_CALLS.items():
        text = text.replace(call, cli)
    return text
