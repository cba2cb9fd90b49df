"""Opt-in smoke test against the real clouds with your credentials: `pytest --live` or GPUPLAN_LIVE=1.

One region per provider; a provider without credentials is skipped with its setup hint.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import MissingCredentials, MissingExtra
from planner.providers import provider_class, provider_names
from planner.refresh import refresh

pytestmark = pytest.mark.live

REGION = {"aws": "us-east-1", "gcp": "us-central1", "azure": "eastus", "lambda": "us-east-1", "paperspace": "nyc2"}


@pytest.mark.parametrize("name", provider_names())
def test_live_refresh_of_one_region(name: str, tmp_path: Path) -> None:
    try:
        provider = provider_class(name).from_environment()
    except (MissingCredentials, MissingExtra) as exc:
        pytest.skip(str(exc))
    report = refresh(name, regions=[REGION[name]], store=tmp_path / "live.sqlite", clients={name: provider})
    outcome = report[name]
    assert outcome.error is None, outcome.error
    assert outcome.failed_regions == ()
    assert outcome.rows_written > 0, report.summary()
