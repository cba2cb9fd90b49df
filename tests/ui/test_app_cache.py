"""The app's ranking cache is keyed by the catalog it ranked, not by the form alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import make_offer

from planner import api
from planner.catalog.store import CatalogStore
from planner.ui.cache import cached_rank, catalog_key
from planner.ui.plan_state import PlanForm


def _write(price: float, as_of: str) -> None:
    with CatalogStore(seed=False) as store:
        store.write_snapshot("aws", [make_offer(price_usd_per_hour=price, as_of=as_of)], source="fixture", as_of=as_of)


def test_a_refreshed_catalog_is_ranked_again_for_the_same_form(
    isolated_store: Path, no_bundled_catalog: Path, clear_app_caches: None
) -> None:
    form = PlanForm(workload="llama-2-7b", work=1e9, pricing="on-demand")
    _write(55.04, "2026-11-01T00:00:00+00:00")
    before = api.load_catalog()
    first = cached_rank(form, catalog_key(before), before)
    _write(110.08, "2026-11-02T00:00:00+00:00")
    after = api.load_catalog()

    assert catalog_key(after) != catalog_key(before)
    assert catalog_key(before.copy()) == catalog_key(before)
    second = cached_rank(form, catalog_key(after), after)
    # Same form, new snapshot: ranked on the new price, twice the cost; the old catalog's answer is still served
    # for the old key.
    assert second.table["cost_usd"].iloc[0] == pytest.approx(2 * first.table["cost_usd"].iloc[0], rel=1e-6)
    assert cached_rank(form, catalog_key(before), before) is first
