"""Each face builds one RankRequest and hands it down whole: the pure ranking reads the very request the CLI or
the app made (issue 37: each arrow points down, one typed request)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CliRun
from factories import make_offer

import planner
import planner.api
import planner.cost.rank
from planner.catalog.store import CatalogStore
from planner.cost.request import RankRequest

REPO = Path(__file__).resolve().parents[1]


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, pick: Callable[..., Any]) -> list[Any]:
    """Record what ``pick`` takes from each call of ``module.name`` (the call still happens)."""
    seen: list[Any] = []
    original = getattr(module, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(pick(*args, **kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, recording)
    return seen


def _ranked(monkeypatch: pytest.MonkeyPatch) -> list[RankRequest]:
    """The requests planner.cost.rank.rank (pure, below the façade) receives."""
    return _spy(monkeypatch, planner.cost.rank, "rank", lambda offers, workload, request, estimator, **_: request)


def _handed(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """The ``request=`` each call of planner.api.<name> is handed (None: keyword options instead)."""
    return _spy(monkeypatch, planner.api, name, lambda *args, **kwargs: kwargs.get("request"))


@pytest.fixture
def small_store(isolated_store: Path, no_bundled_catalog: Path) -> Path:
    """Two AWS offerings, so that a ranking is quick."""
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws",
            [make_offer(), make_offer(instance_type="p4d.24xlarge", gpu="A100-40GB", gpu_memory_gib=40)],
            source="fixture",
            as_of="2026-11-01T00:00:00+00:00",
        )
    return isolated_store


def test_the_cli_s_rank_hands_its_one_request_down_to_the_ranking(
    small_store: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed, ranked = _handed(monkeypatch, "rank"), _ranked(monkeypatch)
    code, _, err = cli(
        "rank", "-w", "llama-3-8b", "--tokens", "2e9", "--format", "csv", "--deadline-hours", "30",
        "--max-nodes", "2", "--interruption-rate", "0.02", "--efficiency", "0.3",
    )  # fmt: skip
    assert code == 0, err
    assert ranked and ranked[0] is handed[0]
    request = ranked[0]
    assert (request.deadline_hours, request.max_nodes, request.interruption_rate_per_node_hour) == (30, 2, 0.02)
    assert request.model.efficiency == 0.3


def test_the_cli_s_compare_hands_its_request_down_with_only_top_set_by_compare(
    small_store: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed, ranked = _handed(monkeypatch, "compare"), _ranked(monkeypatch)
    code, _, err = cli(
        "compare", "-w", "llama-3-8b", "--tokens", "2e9", "--gpu", "H100", "--gpu", "A100", "--format", "json",
        "--deadline-hours", "30", "--by", "time",
    )  # fmt: skip
    assert code == 0, err
    assert ranked[0] == handed[0] and ranked[0].deadline_hours == 30 and ranked[0].by == "time"


@pytest.fixture
def fresh_app_caches() -> Iterator[None]:
    """The app caches its answers per process: this one must be ranked, not remembered, and not kept for others."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def test_the_app_hands_its_one_request_down_to_the_ranking(
    small_store: Path, monkeypatch: pytest.MonkeyPatch, fresh_app_caches: None
) -> None:
    from streamlit.testing.v1 import AppTest

    handed, ranked = _handed(monkeypatch, "rank"), _ranked(monkeypatch)
    app = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=60)
    app.query_params.update({"w": "llama-3-8b", "deadline_h": "30", "nodes": "2"})
    app = app.run()
    assert not app.exception, app.exception
    assert ranked and ranked[0] is handed[0]
    assert (ranked[0].deadline_hours, ranked[0].max_nodes) == (30, 2)


def test_the_library_s_keyword_options_become_one_request(small_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranked = _ranked(monkeypatch)
    planner.rank("llama-3-8b", tokens=2e9, deadline_hours=30, efficiency=0.3)
    assert ranked[0].deadline_hours == 30 and ranked[0].model.efficiency == 0.3


def test_a_field_given_both_in_the_request_and_as_a_keyword_is_refused(small_store: Path) -> None:
    with pytest.raises(planner.InputError) as caught:
        planner.compare("llama-3-8b", gpus="H100", request=RankRequest(deadline_hours=30), deadline_hours=20)
    assert caught.value.field == "deadline_hours"
