"""Where the bundled data files live (inside the repository checkout or the installed package)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """The bundled ``data/`` folder; ``GPUPLAN_DATA_DIR`` overrides it (tests, packaging)."""
    override = os.environ.get("GPUPLAN_DATA_DIR")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "data", here / "data"):
        if (candidate / "gpus.csv").is_file():
            return candidate
    return here.parent / "data"
