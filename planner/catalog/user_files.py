"""The user's own TOML files (``prices.toml``, ``owned.toml``): where each lives and reading one into a document."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from planner.errors import InputError


def user_file(env: str, name: str) -> Path:
    """``$env`` where set, else ``name`` in the platform's per-user config directory."""
    override = os.environ.get(env)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("gpu-planner", appauthor=False)) / name


def read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file (None when there is none); unreadable or invalid TOML is one line naming the file."""
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path.name}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path.name}: is not valid TOML ({exc})") from None
