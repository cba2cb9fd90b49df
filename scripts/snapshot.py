"""Reading a fetched repository snapshot (a checkout or a bare mirror) with git, for the import scripts."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """``git -C repo args...``'s standard output; raises on failure."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout
