"""Committed prices in rank, plan and commitment_prices come from the store the offerings come from, on SQLite and
PostgreSQL, pinned with them by snapshot= and as_of=."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import make_commitment, make_offer

import planner.api as api
from planner.catalog.store import CatalogStore

AS_OF = "2026-11-01T00:00:00+00:00"


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "c.sqlite")
    import postgres_server

    return postgres_server.new_schema(request.getfixturevalue("postgres_url"))


def _committed_price(**pins: object) -> float:
    result = api.rank("bert-base", provider="aws", pricing="committed-1y", utilisation=1.0, **pins)  # type: ignore[arg-type]
    row = result.table[result.table["instance_type"] == "p5.48xlarge"].iloc[0]
    return float(row["price_usd_per_hour"])


def test_a_committed_ranking_reads_the_stores_prices_and_its_pins(location: str) -> None:
    with CatalogStore(location) as store:
        first = store.write_snapshot(
            "aws", [make_offer()], source="t1", as_of=AS_OF, commitments=[make_commitment(hourly_usd_per_hour=20.0)]
        )
        second = store.write_snapshot(
            "aws", [make_offer()], source="t2", as_of=AS_OF, commitments=[make_commitment(hourly_usd_per_hour=10.0)]
        )
        assert first is not None and second is not None
    upfront_per_hour = 150000.0 / 8760  # make_commitment's partial-upfront fee spread over a year
    assert _committed_price(store=location) == pytest.approx(10.0 + upfront_per_hour)
    # Pinned to the first snapshot, the ranking reads that snapshot's commitment prices, not the current ones.
    assert _committed_price(store=location, snapshot=first.snapshot.id) == pytest.approx(20.0 + upfront_per_hour)
    plan = api.plan("bert-base", runs_per_month=4, provider="aws", store=location, snapshot=first.snapshot.id)
    assert plan["committed_usd_per_hour"].tolist() == [pytest.approx(20.0 + upfront_per_hour)]
    current = api.plan("bert-base", runs_per_month=4, provider="aws", store=location)
    assert current["committed_usd_per_hour"].tolist() == [pytest.approx(10.0 + upfront_per_hour)]
    prices = api.commitment_prices("1y", provider="aws", store=location)
    assert prices["hourly_usd_per_hour"].tolist() == [10.0]


def test_the_default_store_is_the_database_url(location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if location.startswith("postgresql"):
        monkeypatch.setenv("GPUPLAN_DATABASE_URL", location)
    with CatalogStore() as store:
        store.write_snapshot("aws", [make_offer()], source="t1", as_of=AS_OF, commitments=[make_commitment()])
    assert _committed_price() == pytest.approx(20.0 + 150000.0 / 8760)
