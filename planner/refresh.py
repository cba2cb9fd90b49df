"""Refresh the catalog from the clouds: fetch each provider, correct, validate once and store it as one snapshot.

The orchestration belongs to the catalog (it decides what the store keeps); the providers only fetch, and the CLI
draws progress through the ``ProgressHook`` it hands in.

A provider that fails (no credentials, no SDK, every region down) keeps its previous snapshot and does not stop
the others. Regions that failed, or were not asked for, keep their previous rows, so a partial refresh never
loses offerings.
"""

from __future__ import annotations

import csv
import re
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, cast

from planner import checks
from planner._data import data_dir
from planner.catalog.price_gates import HeldPrice, hold_back_prices, reference_prices
from planner.catalog.schema import REGION_UNKNOWN, Offer, RawOffer
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
# Clouds with a short list of regions, unlike the patterns above: their regions are the ones of their current
# catalog (bundled or refreshed), so `-p lambda --region eu-west-3` is refused instead of inventing Paris offerings.
LISTED_REGIONS = ("lambda", "paperspace")
SUMMARY_REJECTED_LINES = 20
# The longest refresh time limit taken: a day, far above a whole refresh (1-3 minutes); larger values overflow the
# thread timeouts and are a unit mistake anyway.
MAX_TIME_LIMIT_S = 86_400.0
# A whole refresh that reads fewer offerings than this share of what the provider held before read an answer that lost
# them (an empty price list, a changed API), not a cloud that retired nine in ten of its GPUs overnight; a
# catalog this small (fewer rows than the minimum) is too small to judge by.
MIN_SHARE_OF_PREVIOUS_ROWS = 0.1
MIN_PREVIOUS_ROWS_TO_JUDGE = 20
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
    held: tuple[HeldPrice, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None
    snapshot_id: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Refreshed completely: no error, no failed region and no price held back."""
        return self.error is None and not self.failed_regions and not self.held

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
            lines.extend(f"  held back {h}" for h in p.held[:SUMMARY_REJECTED_LINES])
            if len(p.held) > SUMMARY_REJECTED_LINES:
                lines.append(f"  ... and {len(p.held) - SUMMARY_REJECTED_LINES} more prices held back")
            lines.extend(f"  rejected {r}" for r in p.rejected[:SUMMARY_REJECTED_LINES])
            if len(p.rejected) > SUMMARY_REJECTED_LINES:
                lines.append(f"  ... and {len(p.rejected) - SUMMARY_REJECTED_LINES} more rejected rows")
        from planner.report import visible

        # Provider text (type names, notes, error messages) is shown, never sent to the terminal as control bytes.
        return "\n".join(visible(line) for line in lines)

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
                    "held_back": [
                        {
                            "instance_type": h.instance_type,
                            "region": h.region,
                            "zone": h.zone,
                            "field": h.field,
                            "value": h.value,
                            "reason": h.reason,
                            "kept_value": h.kept_value,
                            "kept_as_of": h.kept_as_of,
                        }
                        for h in p.held
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


def regions_for(provider: str, regions: Sequence[str] | None, known: Collection[str] | None = None) -> list[str] | None:
    """The requested regions that are this provider's codes, and among ``known`` when given (None: all of them)."""
    if not regions:
        return None
    pattern = REGION_PATTERNS[provider]
    return [r for r in regions if pattern.match(r) and (known is None or r in known)]


@cache
def listed_regions() -> dict[str, frozenset[str]]:
    """Each listed-region cloud's region names, as data/provider_regions.csv records them with their source."""
    with (data_dir() / "provider_regions.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {name: frozenset(r["region"] for r in rows if r["provider"] == name) for name in LISTED_REGIONS}


def _known_regions(store: CatalogStore, names: Sequence[str]) -> dict[str, set[str]]:
    """The regions of each listed-region cloud among ``names``: its recorded list and its current catalog's."""
    frame = store.read_current()
    known = {
        name: ({str(r) for r in frame.loc[frame["provider"] == name, "region"]} | listed_regions()[name])
        - {REGION_UNKNOWN}
        for name in LISTED_REGIONS
    }
    return {name: regions for name, regions in known.items() if name in names and regions}


def _check_own_regions(regions: Sequence[str], names: Sequence[str], known: Mapping[str, set[str]]) -> None:
    """InputError for a region that none of ``names`` has: one line naming the providers' regions."""
    for region in regions:
        if any(regions_for(name, [region], known.get(name)) for name in names):
            continue
        listed = [f"{name}: {', '.join(sorted(known[name]))}" for name in names if name in known]
        patterns = [name for name in names if name not in known]
        where = "; ".join([*listed, *(["region codes of " + ", ".join(patterns)] if patterns else [])])
        raise InputError(f"{region!r} is not a region of {', '.join(names)} ({where})", field="region")


def _outside_regions(
    rows: list[RawOffer], provider: str, regions: Sequence[str] | None
) -> tuple[list[RawOffer], list[Rejected]]:
    """Rows in the provider's own (and asked-for) regions, and the others named: no offering where it sells none."""
    pattern = REGION_PATTERNS[provider]
    kept: list[RawOffer] = []
    dropped: list[Rejected] = []
    for row in rows:
        region = str(row.get("region") or "")
        # "unknown": the source sells the type but does not say where (Lambda with no capacity anywhere now).
        if (pattern.match(region) or (region == REGION_UNKNOWN and not regions)) and (not regions or region in regions):
            kept.append(row)
            continue
        why = f"region {region!r} is not " + ("among the regions asked for" if regions else f"a {provider} region")
        dropped.append(Rejected(provider, str(row.get("instance_type") or ""), region, str(row.get("zone") or ""), why))
    return kept, dropped


def _correct(rows: list[RawOffer], provider: str) -> tuple[list[RawOffer], list[Rejected]]:
    """Per-SKU quirks from data/corrections.csv (never if-chains in the adapters)."""
    from planner.catalog.corrections import apply_corrections

    return apply_corrections(rows, provider)


def _current_rows(store: CatalogStore) -> list[Offer]:
    """Every provider's current rows: validated when they were stored, so they are Offers."""
    from planner.report import records

    return cast(list[Offer], records(store.read_current()))


class _Fetch:
    """One provider's ``fetch`` running on a daemon thread, started at once so every provider has the whole time
    limit: a hung socket in one cannot use up the time of the others, nor keep the process alive."""

    def __init__(
        self,
        provider: Provider,
        regions: Sequence[str] | None,
        progress: ProgressHook | None,
        previous: Sequence[Offer],
    ) -> None:
        self.provider = provider
        self.started = time.monotonic()
        self._answer: dict[str, Any] = {}
        self._worker = threading.Thread(
            target=self._run, args=(regions, progress, previous), name=f"refresh-{provider.name}", daemon=True
        )
        self._worker.start()

    def _run(self, regions: Sequence[str] | None, progress: ProgressHook | None, previous: Sequence[Offer]) -> None:
        try:
            self._answer["result"] = self.provider.fetch(regions, progress=progress, previous=previous)
        except BaseException as exc:  # handed to the caller's thread by result()
            self._answer["error"] = exc

    def result(self, ends_at: float | None) -> FetchResult:
        """The fetch's result, or its error; ProviderError when it is still running at ``ends_at`` (whatever it
        produces after that is dropped)."""
        self._worker.join(None if ends_at is None else max(0.0, ends_at - time.monotonic()))
        if self._worker.is_alive():
            raise ProviderError(
                f"{self.provider.name}: did not finish within the refresh time limit; kept the previous catalog"
            )
        if "error" in self._answer:
            raise self._answer["error"]
        result: FetchResult = self._answer["result"]
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
    current = _current_rows(store)
    fetching = _Fetch(provider, regions, progress, [row for row in current if row["provider"] == provider.name])
    return _store_fetched(fetching, store, current, regions=regions, ends_at=ends_at)


def _store_fetched(
    fetching: _Fetch,
    store: CatalogStore,
    current: Sequence[Offer],
    *,
    regions: Sequence[str] | None,
    ends_at: float | None,
) -> ProviderReport:
    """Wait for one provider's fetch (until ``ends_at``), then correct, gate, validate and store what it read."""
    provider = fetching.provider
    name = provider.name
    started = fetching.started
    previous = [row for row in current if row["provider"] == name]
    try:
        result = fetching.result(ends_at)
    except PlannerError as exc:  # MissingCredentials, MissingExtra, ProviderError: one line for the user
        return ProviderReport(name, error=str(exc), seconds=time.monotonic() - started)
    except Exception as exc:
        return ProviderReport(name, error=f"{name}: {describe_error(exc)}", seconds=time.monotonic() - started)
    rows, outside = _outside_regions(result.rows, name, regions)
    rows, excluded = _correct(rows, name)
    excluded = [*outside, *excluded]
    lost = _regions_without_prices(rows, previous)
    if lost:  # the region's prices were lost, not its offerings: it fails and keeps its previous rows
        result.failures = sorted([*result.failures, *lost], key=lambda f: f.region)
        rows = [row for row in rows if row["region"] not in {f.region for f in lost}]
    # A fresh price far from its own history or from the other clouds' is held back before validation, so the
    # fields beside it stay fresh and an implausible price never rejects its whole row.
    rows, held, dropped = hold_back_prices(rows, previous, reference_prices(current, name))
    excluded = [*excluded, *dropped]
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
        held=tuple(held),
        seconds=time.monotonic() - started,
    )
    rejected = [*result.rejected, *excluded, *checked.rejected]
    if not checked.accepted:
        why = f"{name}: refresh produced no valid offering"
        if result.failures:
            why += f" ({len(result.failures)} of {len(result.regions)} regions failed)"
        return _replace(base, error=why + "; kept the previous catalog", rejected=tuple(rejected))
    failed = {f.region for f in result.failures}
    # Judged on a whole refresh only: a region asked for alone is guarded by _regions_without_prices.
    before = sum(1 for row in previous if row["region"] not in failed) if regions is None else 0
    if before >= MIN_PREVIOUS_ROWS_TO_JUDGE and len(checked.accepted) < MIN_SHARE_OF_PREVIOUS_ROWS * before:
        why = (
            f"{name}: read only {len(checked.accepted)} valid offerings where its catalog held {before} "
            f"(under {MIN_SHARE_OF_PREVIOUS_ROWS:.0%}); kept the previous catalog"
        )
        return _replace(base, error=why, rejected=tuple(rejected))
    notes = [*result.notes, *(f"price outlier, flagged: {o}" for o in outliers[:SUMMARY_REJECTED_LINES])]
    base = _replace(base, notes=tuple(notes))
    refreshed = set(result.regions) - {f.region for f in result.failures}
    fresh = {(r["instance_type"], r["region"], r["zone"]) for r in checked.accepted}
    unreadable = {(r.instance_type, r.region) for r in [*result.rejected, *dropped, *checked.rejected]}
    carried = []
    # A price held back and kept from before is as old as it was.
    stale = [datetime.now(UTC), *(_parse_time(h.kept_as_of) for h in held if h.kept_as_of)]
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
        # The commitment prices go in the same transaction: they follow the snapshot, and a failed write keeps both.
        written = store.write_snapshot(
            name,
            snapshot,
            source=provider.source,
            as_of=as_of,
            kind="live",
            merge_regions=refreshed,
            commitments=result.commitments,
        )
    except CatalogError as exc:
        return _replace(base, error=str(exc), rejected=tuple(rejected))
    if written is None:  # only with only_if_stale, which a live refresh does not use
        return _replace(base, error=f"{name}: the store did not take the snapshot")
    if written.commitments:
        base = _replace(base, notes=(*base.notes, f"{name}: {written.commitments} commitment prices stored"))
    return _replace(
        base,
        rows_written=len(checked.accepted),
        carried_over=written.snapshot.row_count - len(checked.accepted),
        rejected=tuple(rejected + written.rejected),
        snapshot_id=written.snapshot.id,
        seconds=time.monotonic() - started,
    )


def _regions_without_prices(rows: Sequence[RawOffer], previous: Sequence[Offer]) -> list[RegionFailure]:
    """Regions whose fresh rows carry no on-demand price at all where the previous ones had them: the price answer
    came back empty for the whole region (AWS Pricing answering [] for every type), not a region gone spot-only."""
    priced_before = {row["region"] for row in previous if row["price_usd_per_hour"] is not None}
    fresh: dict[str, bool] = {}
    for row in rows:
        region = str(row["region"])
        fresh[region] = fresh.get(region, False) or row.get("price_usd_per_hour") is not None
    return [
        RegionFailure(region, "the price answer had no on-demand price for any offering; kept the previous prices")
        for region, priced in sorted(fresh.items())
        if not priced and region in priced_before
    ]


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
    bounds the whole refresh (above 0, up to a day): every provider fetches at once, and one still fetching then keeps
    its previous catalog. ``public`` takes AWS's public Price List files and Google Cloud's API-key path even where
    credentials are set (without credentials they are taken anyway).
    """
    names = _provider_list(providers)
    unknown = [r for r in regions or () if not any(REGION_PATTERNS[name].match(r) for name in names)]
    if unknown:
        raise InputError(
            f"{unknown[0]!r} is not a region code of {', '.join(names)} "
            "(e.g. us-east-1 for aws, us-central1 for gcp, eastus for azure)",
            field="region",
        )
    limit = None
    if time_limit_s is not None:
        what = f"a number of seconds above 0 and up to {MAX_TIME_LIMIT_S:g}"
        limit = checks.number("time_limit_s", time_limit_s, what=what)
        if limit > MAX_TIME_LIMIT_S:
            raise InputError(f"must be {what}, got {limit:g}", field="time_limit_s")
    ends_at = None if limit is None else time.monotonic() + limit
    quiet_sdk_loggers()
    opened = store if isinstance(store, CatalogStore) else CatalogStore(store)
    reports: dict[str, ProviderReport] = {}
    fetches: dict[str, tuple[_Fetch, list[str] | None]] = {}
    hook = progress or ProgressHook()
    try:
        known = _known_regions(opened, names) if regions else {}
        _check_own_regions(regions or (), names, known)
        current = _current_rows(opened)
        for name in names:
            wanted = regions_for(name, regions, known.get(name))
            if wanted is not None and not wanted:
                reports[name] = ProviderReport(name, notes=(f"no {name} region among {', '.join(regions or [])}",))
                continue
            options = dict((provider_options or {}).get(name, {}))
            if public and name in PUBLIC_PATHS:
                options["public"] = True
            try:
                instance = (clients or {}).get(name) or provider_class(name).from_environment(**options)
            except PlannerError as exc:
                reports[name] = ProviderReport(name, error=str(exc))
                continue
            except Exception as exc:  # a broken credential file, an SDK bug: this provider only
                reports[name] = ProviderReport(name, error=f"{name}: {describe_error(exc)}")
                continue
            # Every provider fetches at once and has the whole time limit; only the store writes take turns.
            previous = [row for row in current if row["provider"] == name]
            fetches[name] = (_Fetch(instance, wanted, hook, previous), wanted)
        for name, (fetching, wanted) in fetches.items():
            reports[name] = _store_fetched(fetching, opened, current, regions=wanted, ends_at=ends_at)
    finally:
        if opened is not store:
            opened.close()
    return RefreshReport(tuple(reports[name] for name in names))
