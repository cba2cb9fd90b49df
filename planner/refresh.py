"""Refresh the catalog from the clouds: fetch each provider, correct, validate once and store it as one snapshot.

The orchestration belongs to the catalog (it decides what the store keeps); the providers only fetch, and the CLI
draws progress through the ``ProgressHook`` it hands in.

A provider that fails (no credentials, no SDK, every region down) keeps its previous snapshot and does not stop
the others. Regions that failed, or were not asked for, keep their previous rows, so a partial refresh never
loses offerings.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from planner import checks
from planner.catalog.schema import Offer, RawOffer
from planner.catalog.store import CatalogStore
from planner.catalog.validate import Rejected, ValidationReport, price_outliers, validate_rows
from planner.errors import CatalogError, InputError, PlannerError, ProviderError
from planner.providers import provider_class, provider_names
from planner.providers.base import (
    FetchResult,
    ProgressHook,
    Provider,
    RegionFailure,
    add_flag,
    describe_error,
    quiet_sdk_loggers,
)

# Which region codes belong to which cloud, so `--region us-east-1 --region eastus` goes to the right one.
REGION_PATTERNS: dict[str, re.Pattern[str]] = {
    "aws": re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d+$"),
    "gcp": re.compile(r"^[a-z]+-[a-z]+\d+$"),
    "azure": re.compile(r"^[a-z][a-z0-9]*$"),
    # Lambda names regions like AWS (us-east-1, europe-central-1): such a code goes to both clouds.
    "lambda": re.compile(r"^[a-z]+(-[a-z]+)?-\d+$"),
    # DigitalOcean slugs (nyc2, tor1, atl1) also match Azure's loose pattern: such a code goes to both.
    "paperspace": re.compile(r"^[a-z]{3}\d$"),
}
SUMMARY_REJECTED_LINES = 20
# The providers with a path that needs no cloud account, taken with ``public`` (Azure's prices never need one).
PUBLIC_PATHS = ("aws", "gcp")


@dataclass(frozen=True)
class ProviderReport:
    """The outcome of refreshing one provider."""

    provider: str
    rows_written: int = 0
    carried_over: int = 0
    regions: tuple[str, ...] = ()
    failed_regions: tuple[RegionFailure, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None
    snapshot_id: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Refreshed completely: no error and no failed region."""
        return self.error is None and not self.failed_regions

    @property
    def written(self) -> bool:
        """A new snapshot became current."""
        return self.snapshot_id is not None


@dataclass(frozen=True)
class RefreshReport:
    """Per provider: rows written, rejected rows with reasons, failed regions and why, or the error."""

    providers: tuple[ProviderReport, ...] = field(default_factory=tuple)

    @property
    def exit_code(self) -> int:
        """0 when every provider refreshed fully, 3 when some did (partial), 1 when none did."""
        if all(p.ok for p in self.providers):
            return 0
        return 3 if any(p.written for p in self.providers) else 1

    def __getitem__(self, provider: str) -> ProviderReport:
        for report in self.providers:
            if report.provider == provider:
                return report
        raise KeyError(provider)

    def summary(self) -> str:
        """The closing summary for people: rows per provider, failed regions and why, rejected rows."""
        lines: list[str] = []
        for p in self.providers:
            if p.error is not None:
                error = p.error.removeprefix(f"{p.provider}: ")
                lines.append(f"{p.provider}: not refreshed, kept the previous catalog: {error}")
            elif not p.written:
                lines.append(f"{p.provider}: skipped")
            else:
                carried = f", {p.carried_over} kept from the previous snapshot" if p.carried_over else ""
                lines.append(
                    f"{p.provider}: {p.rows_written} offerings from {len(p.regions) - len(p.failed_regions)}/"
                    f"{len(p.regions)} regions{carried}; {len(p.rejected)} rows rejected ({p.seconds:.1f} s)"
                )
            lines.extend(f"  region {f.region} failed: {f.reason}" for f in p.failed_regions)
            lines.extend(f"  note: {n}" for n in p.notes)
            lines.extend(f"  rejected {r}" for r in p.rejected[:SUMMARY_REJECTED_LINES])
            if len(p.rejected) > SUMMARY_REJECTED_LINES:
                lines.append(f"  ... and {len(p.rejected) - SUMMARY_REJECTED_LINES} more rejected rows")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values, for JSON."""
        return {
            "exit_code": self.exit_code,
            "providers": [
                {
                    "provider": p.provider,
                    "ok": p.ok,
                    "rows_written": p.rows_written,
                    "carried_over": p.carried_over,
                    "snapshot_id": p.snapshot_id,
                    "regions": list(p.regions),
                    "failed_regions": [{"region": f.region, "reason": f.reason} for f in p.failed_regions],
                    "rejected": [
                        {"instance_type": r.instance_type, "region": r.region, "zone": r.zone, "reason": r.reason}
                        for r in p.rejected
                    ],
                    "notes": list(p.notes),
                    "error": p.error,
                    "seconds": round(p.seconds, 3),
                }
                for p in self.providers
            ],
        }


def _provider_list(providers: str | Sequence[str]) -> list[str]:
    names = [providers] if isinstance(providers, str) else list(providers)
    if not names or "all" in names:
        return list(provider_names())
    known = provider_names()
    for name in names:
        if name not in known:
            raise InputError(f"must be one of {', '.join(known)} or all, got {name!r}", field="provider")
    return list(dict.fromkeys(names))


def regions_for(provider: str, regions: Sequence[str] | None) -> list[str] | None:
    """The requested regions that are this provider's codes (None: all of its regions)."""
    if not regions:
        return None
    pattern = REGION_PATTERNS[provider]
    return [r for r in regions if pattern.match(r)]


def _correct(rows: list[RawOffer], provider: str) -> tuple[list[RawOffer], list[Rejected]]:
    """Per-SKU quirks from data/corrections.csv (never if-chains in the adapters)."""
    from planner.catalog.corrections import apply_corrections

    return apply_corrections(rows, provider)


def _previous_rows(store: CatalogStore, provider: str) -> list[Offer]:
    """The provider's current rows: validated when they were stored, so they are Offers."""
    from planner.report import records

    frame = store.read_current()
    return cast(list[Offer], records(frame[frame["provider"] == provider]))


def _fetch_within(
    provider: Provider,
    regions: Sequence[str] | None,
    progress: ProgressHook | None,
    previous: Sequence[Offer],
    ends_at: float | None,
) -> FetchResult:
    """``provider.fetch``, given up at ``ends_at`` (a monotonic time): a hung socket in any listing, region or
    side download cannot hold the refresh. The fetch runs on a daemon thread, so a hang cannot keep the process
    alive either; whatever it produces after the limit is dropped."""
    if ends_at is None:
        return provider.fetch(regions, progress=progress, previous=previous)
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["result"] = provider.fetch(regions, progress=progress, previous=previous)
        except BaseException as exc:  # handed to the caller's thread below
            answer["error"] = exc

    worker = threading.Thread(target=run, name=f"refresh-{provider.name}", daemon=True)
    worker.start()
    worker.join(max(0.0, ends_at - time.monotonic()))
    if worker.is_alive():
        raise ProviderError(f"{provider.name}: did not finish within the refresh time limit; kept the previous catalog")
    if "error" in answer:
        raise answer["error"]
    result: FetchResult = answer["result"]
    return result


def refresh_provider(
    provider: Provider,
    store: CatalogStore,
    *,
    regions: Sequence[str] | None = None,
    progress: ProgressHook | None = None,
    ends_at: float | None = None,
) -> ProviderReport:
    """Fetch one provider and store its snapshot in one transaction; errors become the report's ``error``.

    ``ends_at`` (a ``time.monotonic()`` value) bounds the fetch; past it the provider keeps its previous catalog.
    """
    name = provider.name
    started = time.monotonic()
    previous = _previous_rows(store, name)
    try:
        result = _fetch_within(provider, regions, progress, previous, ends_at)
    except PlannerError as exc:  # MissingCredentials, MissingExtra, ProviderError: one line for the user
        return ProviderReport(name, error=str(exc), seconds=time.monotonic() - started)
    except Exception as exc:
        return ProviderReport(name, error=f"{name}: {describe_error(exc)}", seconds=time.monotonic() - started)
    rows, excluded = _correct(result.rows, name)
    # Validated once, here; the store takes the report as it is and validates only the carried-over rows.
    checked = validate_rows(rows)
    # Prices that cannot both be list prices (spot above on-demand, on-demand far under the shape's median across
    # regions) are stored but flagged, and named in the report: the same gate the bundle build fails on.
    outliers = price_outliers(checked.accepted)
    suspects = {(o.instance_type, o.region, o.zone) for o in outliers}
    for row in checked.accepted:
        if (row["instance_type"], row["region"], row["zone"]) in suspects:
            add_flag(row, "price_outlier")
    base = ProviderReport(
        name,
        regions=tuple(result.regions),
        failed_regions=tuple(result.failures),
        notes=tuple(result.notes),
        seconds=time.monotonic() - started,
    )
    rejected = [*result.rejected, *excluded, *checked.rejected]
    if not checked.accepted:
        why = f"{name}: refresh produced no valid offering"
        if result.failures:
            why += f" ({len(result.failures)} of {len(result.regions)} regions failed)"
        return _replace(base, error=why + "; kept the previous catalog", rejected=tuple(rejected))
    notes = [*result.notes, *(f"price outlier, flagged: {o}" for o in outliers[:SUMMARY_REJECTED_LINES])]
    base = _replace(base, notes=tuple(notes))
    refreshed = set(result.regions) - {f.region for f in result.failures}
    fresh = {(r["instance_type"], r["region"], r["zone"]) for r in checked.accepted}
    unreadable = {(r.instance_type, r.region) for r in [*result.rejected, *checked.rejected]}
    failed = {f.region for f in result.failures}
    carried = []
    stale = [datetime.now(UTC)]
    for row in previous:
        # Offerings of regions not refreshed now, or whose new row was unreadable, keep their previous prices.
        key = (row["instance_type"], row["region"], row["zone"])
        if key not in fresh and (row["region"] not in refreshed or key[:2] in unreadable):
            add_flag(row, "carried_over")
            carried.append(row)
            if row["region"] in failed or key[:2] in unreadable:
                stale.append(_parse_time(row["as_of"]))
    # A snapshot is as old as the oldest price it should have renewed and could not, so `--max-age` is not
    # fooled by a partial refresh; regions outside the refresh (not asked for, not enabled) keep their own as_of.
    as_of = min(stale).isoformat(timespec="seconds")
    kept = validate_rows(carried)
    snapshot = ValidationReport(accepted=[*checked.accepted, *kept.accepted], rejected=kept.rejected)
    try:
        # merge_regions: the store re-reads the other regions inside its write lock, so a concurrent refresh of
        # other regions of this provider is not written back over.
        written = store.write_snapshot(
            name, snapshot, source=provider.source, as_of=as_of, kind="live", merge_regions=refreshed
        )
    except CatalogError as exc:
        return _replace(base, error=str(exc), rejected=tuple(rejected))
    if written is None:  # only with only_if_stale, which a live refresh does not use
        return _replace(base, error=f"{name}: the store did not take the snapshot")
    return _replace(
        base,
        rows_written=len(checked.accepted),
        carried_over=written.snapshot.row_count - len(checked.accepted),
        rejected=tuple(rejected + written.rejected),
        snapshot_id=written.snapshot.id,
        seconds=time.monotonic() - started,
    )


def _parse_time(text: str) -> datetime:
    stamp = datetime.fromisoformat(text)
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _replace(report: ProviderReport, **changes: Any) -> ProviderReport:
    return replace(report, **changes)


def refresh(
    providers: str | Sequence[str] = "all",
    *,
    regions: Sequence[str] | None = None,
    store: CatalogStore | Path | str | None = None,
    clients: Mapping[str, Provider] | None = None,
    progress: ProgressHook | None = None,
    provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    time_limit_s: float | None = None,
    public: bool = False,
) -> RefreshReport:
    """Refresh ``providers`` ("all", one name or several) into the store; returns what happened per provider.

    ``clients`` hands in ready providers (tests, proxies); the others are built from the environment's
    credentials, with ``provider_options[name]`` passed to their ``from_environment``. ``progress`` is told how
    many regions each provider fetches and when each finishes (the CLI draws a bar from it). ``time_limit_s``
    bounds the whole refresh: a provider still fetching then, or not started by then, keeps its previous catalog.
    ``public`` takes AWS's public Price List files and Google Cloud's API-key path even where credentials are set
    (without credentials they are taken anyway).
    """
    names = _provider_list(providers)
    unknown = [r for r in regions or () if not any(REGION_PATTERNS[name].match(r) for name in names)]
    if unknown:
        raise InputError(
            f"{unknown[0]!r} is not a region code of {', '.join(names)} "
            "(e.g. us-east-1 for aws, us-central1 for gcp, eastus for azure)",
            field="region",
        )
    limit = checks.optional_number("time_limit_s", time_limit_s)
    ends_at = None if limit is None else time.monotonic() + limit
    quiet_sdk_loggers()
    opened = store if isinstance(store, CatalogStore) else CatalogStore(store)
    reports: list[ProviderReport] = []
    hook = progress or ProgressHook()
    try:
        for name in names:
            wanted = regions_for(name, regions)
            if wanted is not None and not wanted:
                reports.append(ProviderReport(name, notes=(f"no {name} region among {', '.join(regions or [])}",)))
                continue
            options = dict((provider_options or {}).get(name, {}))
            if public and name in PUBLIC_PATHS:
                options["public"] = True
            try:
                instance = (clients or {}).get(name) or provider_class(name).from_environment(**options)
            except PlannerError as exc:
                reports.append(ProviderReport(name, error=str(exc)))
                continue
            except Exception as exc:  # a broken credential file, an SDK bug: this provider only
                reports.append(ProviderReport(name, error=f"{name}: {describe_error(exc)}"))
                continue
            if ends_at is not None and time.monotonic() >= ends_at:
                reports.append(ProviderReport(name, error=f"{name}: not started within the refresh time limit"))
                continue
            reports.append(refresh_provider(instance, opened, regions=wanted, progress=hook, ends_at=ends_at))
    finally:
        if opened is not store:
            opened.close()
    return RefreshReport(tuple(reports))
