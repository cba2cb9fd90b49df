"""The façade that the library, the CLI and the web app all call: one place computes each number."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.catalog.query import OFFER_COLUMNS, OfferFilter, filter_offers, with_derived
from planner.catalog.store import CatalogStore, SnapshotInfo
from planner.errors import StaleCatalogError

if TYPE_CHECKING:
    import pandas as pd

    from planner.cost.rank import RankResult
    from planner.perf.model import Estimate
    from planner.perf.workloads import Workload
    from planner.providers.refresh import RefreshReport


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def open_store(store: CatalogStore | Path | str | None = None) -> CatalogStore:
    """The given store, or the per-user one (seeded from the bundled snapshot on first use)."""
    if isinstance(store, CatalogStore):
        return store
    return CatalogStore(store)


def check_age(snapshots: Sequence[SnapshotInfo], max_age_hours: float | None) -> None:
    """Refuse a catalog whose prices are older than ``max_age_hours`` (exit code 3 in the CLI)."""
    if max_age_hours is None:
        return
    now = datetime.now(UTC)
    stale = [s for s in snapshots if s.age_hours(now) > max_age_hours]
    if stale:
        worst = max(stale, key=lambda s: s.age_hours(now))
        raise StaleCatalogError(
            f"the {worst.provider} catalog is {worst.age_hours(now) / 24:.1f} days old (as of {worst.as_of}), "
            f"older than the allowed {max_age_hours:g} h; run `gpuplan catalog refresh` or raise --max-age"
        )


def load_catalog(store: CatalogStore | Path | str | None = None, *, max_age_hours: float | None = None) -> pd.DataFrame:
    """Every current offering of every provider, one row per offering and zone, with derived columns."""
    opened = open_store(store)
    try:
        check_age(opened.current_snapshots(), max_age_hours)
        return with_derived(opened.read_current())
    finally:
        if opened is not store:
            opened.close()


def offers(
    gpu: str | Sequence[str] | None = None,
    *,
    min_gpus: float | None = None,
    max_gpus: float | None = None,
    min_gpu_memory_gib: float | None = None,
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    max_price_usd_per_hour: float | None = None,
    spot: bool = False,
    sort: str = "price",
    by_zone: bool = False,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
) -> pd.DataFrame:
    """Offerings matching the filters, cheapest first; ``gpu`` takes any spelling (a family name matches all variants).

    Without ``by_zone``, the zones of one region collapse into one row (the zone with the cheapest spot price).
    """
    frame, _notes = offers_with_notes(
        OfferFilter(
            gpus=_as_list(gpu),
            min_gpus=min_gpus,
            max_gpus=max_gpus,
            min_gpu_memory_gib=min_gpu_memory_gib,
            providers=_as_list(provider),
            regions=_as_list(region),
            max_price_usd_per_hour=max_price_usd_per_hour,
            spot=spot,
            sort=sort,
            by_zone=by_zone,
        ),
        catalog=catalog,
        store=store,
    )
    return frame


def offers_with_notes(
    spec: OfferFilter, *, catalog: pd.DataFrame | None = None, store: CatalogStore | Path | str | None = None
) -> tuple[pd.DataFrame, list[str]]:
    """`offers`, plus the notes the CLI shows (how an ambiguous GPU name was read)."""
    frame = catalog if catalog is not None else load_catalog(store)
    result, notes = filter_offers(frame, spec)
    ordered = [c for c in OFFER_COLUMNS if c in result.columns]
    rest = [c for c in result.columns if c not in ordered]
    return result[ordered + rest], notes


def catalog_status(store: CatalogStore | Path | str | None = None) -> pd.DataFrame:
    """Per provider: rows, source kind (bundled or live), source, as_of and age in hours."""
    import pandas as pd

    opened = open_store(store)
    try:
        now = datetime.now(UTC)
        records: list[dict[str, Any]] = [
            {
                "provider": s.provider,
                "rows": s.row_count,
                "kind": s.kind,
                "source": s.source,
                "as_of": s.as_of,
                "age_hours": round(s.age_hours(now), 1),
                "age_days": round(s.age_hours(now) / 24, 1),
                "refreshed_at": s.created_at,
                "rejected_rows": s.rejected_count,
            }
            for s in opened.current_snapshots()
        ]
        return pd.DataFrame.from_records(
            records,
            columns=[
                "provider",
                "rows",
                "kind",
                "source",
                "as_of",
                "age_hours",
                "age_days",
                "refreshed_at",
                "rejected_rows",
            ],
        )
    finally:
        if opened is not store:
            opened.close()


def catalog_history(
    instance_type: str,
    region: str,
    *,
    provider: str | None = None,
    store: CatalogStore | Path | str | None = None,
) -> pd.DataFrame:
    """The on-demand and spot price of one offering across every snapshot, oldest first."""
    opened = open_store(store)
    try:
        return opened.history(instance_type, region, provider)
    finally:
        if opened is not store:
            opened.close()


def estimate(workload: str | Workload, gpu: str, gpus: int = 1, precision: str = "bf16", **options: Any) -> Estimate:
    """Throughput, time to solution, memory fit, MFU and energy of ``workload`` on ``gpus`` x ``gpu``."""
    from planner.perf.model import estimate as _estimate

    return _estimate(workload, gpu, gpus, precision, **options)


def rank(workload: str | Workload, **constraints: Any) -> RankResult:
    """Every feasible offering for ``workload``, priced per training run and ranked (see planner.cost.rank)."""
    from planner.cost.rank import rank as _rank

    return _rank(workload, **constraints)


def compare(
    workload: str | Workload,
    *,
    gpus: Sequence[str] = (),
    instance_types: Sequence[str] = (),
    **constraints: Any,
) -> RankResult:
    """The best option of each of a few GPUs or instance types for the same job, side by side."""
    from planner.cost.compare import compare as _compare

    return _compare(workload, gpus=gpus, instance_types=instance_types, **constraints)


def refresh(
    providers: str | Sequence[str] = "all",
    *,
    regions: Sequence[str] | None = None,
    store: CatalogStore | Path | str | None = None,
    **options: Any,
) -> RefreshReport:
    """Pull live catalogs from the cloud APIs into the store (needs the provider extras and credentials)."""
    from planner.providers.refresh import refresh as _refresh

    return _refresh(providers, regions=regions, store=store, **options)
