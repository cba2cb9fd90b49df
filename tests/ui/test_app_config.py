"""The app is not exposed by default: loopback only, no usage statistics, no developer toolbar."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_streamlit_config_is_private_by_default() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["toolbarMode"] in ("minimal", "viewer")
    # The grid's own CSV export would bypass the formula escaping of the download buttons.
    assert config["client"]["disableDataExport"] is True


def test_dev_sh_app_binds_loopback_unless_told_otherwise() -> None:
    script = (REPO / "scripts" / "dev.sh").read_text(encoding="utf-8")
    app = script[script.index("  app)") : script.index(";;", script.index("  app)"))]
    assert '--server.address="${GPUPLAN_APP_ADDRESS:-127.0.0.1}"' in app
    assert "--browser.gatherUsageStats=false" in app
    assert re.search(r"--client\.toolbarMode=(minimal|viewer)", app)
