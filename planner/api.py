"""The façade that the library, the CLI and the web app all call: one place computes each number."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner import checks
from planner.catalog.owned import OWNED
from planner.catalog.pins import PinnedCatalog, pinned_snapshots, sources
from planner.catalog.query import (
    OFFER_COLUMNS,
    STALE_AFTER_DAYS,
    OfferFilter,
    age_hours,
    filter_offers,
    gpu_family,
    select_offers,
    with_derived,
)
from planner.catalog.schema import PROVIDERS
from planner.catalog.store import CatalogStore, SnapshotInfo
from planner.cost.commitment import COMMITTED_PRICINGS
from planner.cost.request import Estimator, RankRequest
from planner.errors import LIBRARY_CALLS, InputError, StaleCatalogError
from planner.perf.options import EVIDENCE_FIELDS
from planner.perf.workloads import USER_FIELDS, WORK_ALIASES
from planner.report import WARNING_PREFIX

if TYPE_CHECKING:
    import pandas as pd

    from planner.cost.result import RankResult
    from planner.perf.model import Estimate
    from planner.perf.params import PerfParams
    from planner.perf.workloads import Workload
    from planner.refresh import RefreshReport
    from planner.runlogs.calibrate import Calibration


# What ``estimate`` and ``rank`` take about the workload itself, named in their "not an argument here" line.
WORKLOAD_OPTIONS = (*WORK_ALIASES, *USER_FIELDS)


def _as_list(value: str | Sequence[str] | None, field: str) -> list[str]:
    """One name or a list of names as a list; anything else is an InputError naming ``field``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence | set | frozenset) and all(isinstance(item, str) for item in value):
        return list(value)
    raise InputError(f"must be a name or a list of names, got {value!r:.40}", field=field)


def _providers(provider: str | Sequence[str] | None) -> list[str]:
    """The providers asked for, in lower case and checked against PROVIDERS (an unknown one is an InputError)."""
    # Owned servers (planner.catalog.owned) are asked for as the provider "owned".
    asked = [name.lower() for name in _as_list(provider, "provider")]
    return checks.names("provider", "provider", asked, (*PROVIDERS, OWNED))


def open_store(store: CatalogStore | Path | str | None = None) -> CatalogStore:
    """The given store, or the per-user one (seeded from the bundled snapshot on first use)."""
    if isinstance(store, CatalogStore):
        return store
    return CatalogStore(store)


def oldest_prices(frame: pd.DataFrame) -> dict[str, str]:
    """The oldest ``as_of`` of each provider present in ``frame``.

    By codes rather than a string group-by: a catalog has a handful of (provider, as_of) pairs over many rows.
    """
    import numpy as np
    import pandas as pd

    if frame.empty:
        return {}
    providers, provider_names = pd.factorize(frame["provider"])
    stamps, stamp_names = pd.factorize(frame["as_of"])
    # Which pairs occur, by direct indexing (a sort of every row's pair cost more than the rest of this).
    seen = np.zeros(len(provider_names) * (len(stamp_names) + 1), dtype=bool)
    seen[providers.astype(np.int64) * (len(stamp_names) + 1) + stamps] = True
    oldest: dict[str, str] = {}
    for pair in seen.nonzero()[0].tolist():
        provider, stamp = (
            str(provider_names[pair // (len(stamp_names) + 1)]),
            str(stamp_names[pair % (len(stamp_names) + 1)]),
        )
        if provider not in oldest or stamp < oldest[provider]:
            oldest[provider] = stamp
    return oldest


def provider_ages(frame: pd.DataFrame, now: datetime | None = None) -> dict[str, float]:
    """Hours since the oldest price of each provider present in ``frame``."""
    moment = now or datetime.now(UTC)
    return {provider: age_hours(stamp, moment) for provider, stamp in sorted(oldest_prices(frame).items())}


def check_age(ages: dict[str, float], max_age_hours: float | None) -> None:
    """Refuse prices older than ``max_age_hours`` (exit code 3 in the CLI); ``ages`` holds only the providers asked."""
    if max_age_hours is None or not ages:
        return
    limit = checks.number("max_age_hours", max_age_hours, allow_zero=True)
    stale = {provider: age for provider, age in ages.items() if age > limit}
    if stale:
        worst = max(stale, key=lambda provider: stale[provider])
        raise StaleCatalogError(
            f"the {worst} prices are {stale[worst] / 24:.1f} days old, older than the allowed {limit:g} h; "
            f"refresh them ({LIBRARY_CALLS['refresh']}) or allow older prices"
        )


def stale_warnings(ages: dict[str, float]) -> list[str]:
    """One line naming every provider whose prices are older than STALE_AFTER_DAYS, with their ages and the call
    that refreshes them (none when every price is fresh)."""
    stale = [
        f"{provider} {age / 24:,.0f} days" for provider, age in sorted(ages.items()) if age > STALE_AFTER_DAYS * 24
    ]
    if not stale:
        return []
    return [
        f"{WARNING_PREFIX}prices older than {STALE_AFTER_DAYS:g} days: {', '.join(stale)}; {LIBRARY_CALLS['refresh']} "
        "updates them"
    ]


def tuned_stack_notes(stack: str, gpus: Sequence[str]) -> list[str]:
    """A note when the tuned stack is asked of GPUs among ``gpus`` (canonical ids) whose vendor has no measured tuned
    recipe (data/software_stacks.csv): the model estimates them as the typical stack (``planner.perf.model.run_on``),
    and the user should know their figures are not the tuned ones asked for.
    """
    from planner.hardware import gpu_table, software_stack

    if stack != "tuned":
        return []
    table = gpu_table()
    others = sorted({gpu for gpu in gpus if gpu in table and software_stack(table[gpu]).tuned_recipe is None})
    if not others:
        return []
    return [
        f"{WARNING_PREFIX}tuned stack figures are NVIDIA's recipes (Megatron-Core/NeMo); on {', '.join(others)} no "
        "tuned recipe is measured, so they are estimated as the typical stack (no NVIDIA speed-up)"
    ]


# A stored snapshot's id, a comma-separated text of ids, or a list of either (planner.catalog.pins).
SnapshotIds = int | str | Sequence[int | str]


def _load(
    catalog: pd.DataFrame | None,
    store: CatalogStore | Path | str | None,
    *,
    derived: bool = True,
    snapshot: SnapshotIds | None = None,
    as_of: str | datetime | None = None,
) -> PinnedCatalog:
    """The given catalog, the stored snapshots named by ``snapshot`` (ids) or current at ``as_of``, or the store's
    current catalog; with the derived columns unless ``derived`` is False, and the snapshots it comes from."""
    if catalog is not None:
        import pandas as pd

        if not isinstance(catalog, pd.DataFrame):
            raise InputError(f"must be a pandas DataFrame of offerings, got {type(catalog).__name__}", field="catalog")
        if snapshot is not None or as_of is not None:
            raise InputError("cannot be given with a snapshot or as_of, which read the store", field="catalog")
        frame, notes = _negotiated(catalog)
        frame, notes = _owned(frame, None, notes)
        frame = with_derived(frame) if derived and "stale" not in frame.columns else frame
        return PinnedCatalog(frame, [], None, notes)
    opened = open_store(store)
    try:
        pinned = pinned_snapshots(opened, snapshot, as_of)
        if pinned is None:
            infos, judged_at, frame = opened.current_snapshots(), None, opened.read_current()
        else:
            (infos, judged_at), frame = pinned, opened.read_snapshots([info.id for info in pinned[0]])
    finally:
        if opened is not store:
            opened.close()
    frame, notes = _negotiated(frame)
    frame, notes = _owned(frame, judged_at, notes)
    return PinnedCatalog(with_derived(frame, judged_at) if derived else frame, infos, judged_at, notes)


def _negotiated(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The one place the user's negotiated prices (planner.catalog.negotiated) replace list prices; a catalog that
    already says its prices' basis is left as it is (they are applied once)."""
    from planner.catalog.negotiated import apply_terms, read_terms

    if "price_basis" in frame.columns:
        return frame, []
    return apply_terms(frame, read_terms())


def _owned(frame: pd.DataFrame, judged_at: datetime | None, notes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The one place the user's owned servers (planner.catalog.owned) join the catalog, priced as of the moment the
    prices are judged at (their costs are the user's own, as fresh as the question), and a note naming them."""
    from planner.catalog.owned import owned_path, read_servers
    from planner.cost.owned import with_owned

    servers = read_servers()
    moment = (judged_at or datetime.now(UTC)).isoformat(timespec="seconds")
    joined = with_owned(frame, servers, moment)
    if joined is frame:
        return frame, notes
    names = ", ".join(server.name for server in servers)
    return joined, [*notes, f"owned servers ({owned_path().name}) ranked beside the clouds: {names}"]


def load_catalog(
    store: CatalogStore | Path | str | None = None,
    *,
    max_age_hours: float | None = None,
    provider: str | Sequence[str] | None = None,
    snapshot: SnapshotIds | None = None,
    as_of: str | datetime | None = None,
) -> pd.DataFrame:
    """Every current offering (of ``provider`` when given), one row per offering and zone, with derived columns.

    ``max_age_hours`` refuses prices older than that, judged only on the providers asked for. ``snapshot`` (stored
    snapshot ids, one per provider) or ``as_of`` (a time: each provider's snapshot current then) reads those instead.
    """
    pinned = _load(None, store, snapshot=snapshot, as_of=as_of)
    frame = pinned.frame
    providers = _providers(provider)
    if providers:
        frame = frame[frame["provider"].isin(providers)].reset_index(drop=True)
    check_age(provider_ages(frame, pinned.judged_at), max_age_hours)
    return frame


def offers(
    gpu: str | Sequence[str] | None = None,
    *,
    min_gpus: float | None = None,
    max_gpus: float | None = None,
    min_gpu_memory_gib: float | None = None,
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    max_price_usd_per_hour: float | None = None,
    instance_type: str | Sequence[str] | None = None,
    spot: bool = False,
    sort: str = "price",
    by_zone: bool = False,
    available_only: bool = False,
    accelerator: str = "any",
    max_age_hours: float | None = None,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
    snapshot: SnapshotIds | None = None,
    as_of: str | datetime | None = None,
) -> pd.DataFrame:
    """Offerings matching the filters, cheapest first; ``gpu`` takes any spelling (a family name matches all variants).

    Without ``by_zone``, the zones of one region collapse into one row (the zone with the cheapest spot price).
    ``accelerator``: ``gpu``, ``tpu`` (Cloud TPU slices, one row per slice size) or ``any``. ``snapshot`` (stored
    snapshot ids, one per provider) or ``as_of`` (a time) reads those snapshots, not the current catalog.
    """
    found = offers_with_notes(
        OfferFilter(
            gpus=_as_list(gpu, "gpu"),
            min_gpus=min_gpus,
            max_gpus=max_gpus,
            min_gpu_memory_gib=min_gpu_memory_gib,
            providers=_as_list(provider, "provider"),
            regions=_as_list(region, "region"),
            instance_types=_as_list(instance_type, "instance_type"),
            max_price_usd_per_hour=max_price_usd_per_hour,
            spot=spot,
            sort=sort,
            by_zone=by_zone,
            available_only=available_only,
            accelerator=accelerator,
        ),
        max_age_hours=max_age_hours,
        catalog=catalog,
        store=store,
        snapshot=snapshot,
        as_of=as_of,
    )
    return found.offers


@dataclass(frozen=True)
class FoundOffers:
    """`offers`' answer with what the CLI shows beside it: the notes (how an ambiguous GPU name was read, stale
    prices), the snapshots read and the age in hours of each provider's oldest price shown."""

    offers: pd.DataFrame
    notes: list[str]
    snapshots: list[SnapshotInfo]
    ages_hours: dict[str, float]


def offers_with_notes(
    spec: OfferFilter,
    *,
    max_age_hours: float | None = None,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
    snapshot: SnapshotIds | None = None,
    as_of: str | datetime | None = None,
) -> FoundOffers:
    """`offers`, plus the notes the CLI shows, the snapshots read and the prices' ages."""
    # filter_offers derives the columns of the rows it keeps
    pinned = _load(catalog, store, derived=False, snapshot=snapshot, as_of=as_of)
    result, notes = filter_offers(pinned.frame, spec, now=pinned.judged_at)
    ages = provider_ages(result, pinned.judged_at)
    check_age(ages, max_age_hours)
    ordered = [c for c in OFFER_COLUMNS if c in result.columns]
    rest = [c for c in result.columns if c not in ordered]
    asked = _providers(spec.providers)
    read = [info for info in pinned.snapshots if not asked or info.provider in asked]
    return FoundOffers(result[ordered + rest], [*pinned.notes, *notes, *stale_warnings(ages)], read, ages)


def catalog_status(
    store: CatalogStore | Path | str | None = None, *, provider: str | Sequence[str] | None = None
) -> pd.DataFrame:
    """Per provider (those asked, else all): its current snapshot's id (what ``snapshot=`` pins), rows, source kind
    (bundled or live), source, as_of, age, stale."""
    import pandas as pd

    providers = _providers(provider)
    opened = open_store(store)
    try:
        now = datetime.now(UTC)
        records: list[dict[str, Any]] = [
            {
                "provider": s.provider,
                "snapshot_id": s.id,
                "rows": s.row_count,
                "kind": s.kind,
                "source": s.source,
                "as_of": s.as_of,
                "age_hours": round(s.age_hours(now), 1),
                "age_days": round(s.age_hours(now) / 24, 1),
                "refreshed_at": s.created_at,
                "rejected_rows": s.rejected_count,
                "stale": s.age_hours(now) > STALE_AFTER_DAYS * 24,
            }
            for s in opened.current_snapshots()
            if not providers or s.provider in providers
        ]
        return pd.DataFrame.from_records(
            records,
            columns=[
                "provider",
                "snapshot_id",
                "rows",
                "kind",
                "source",
                "as_of",
                "age_hours",
                "age_days",
                "refreshed_at",
                "rejected_rows",
                "stale",
            ],
        )
    finally:
        if opened is not store:
            opened.close()


def export_catalog(folder: Path | str, *, store: CatalogStore | Path | str | None = None) -> dict[str, Any]:
    """Write the current catalog into ``folder``: one CSV per provider and a manifest.json with each file's as_of,
    source, row count and SHA-256; returns the manifest."""
    from planner.catalog.snapshot_io import export_snapshot

    opened = open_store(store)
    try:
        return export_snapshot(opened, Path(folder).expanduser())
    finally:
        if opened is not store:
            opened.close()


def pull_catalog(source: Path | str, *, store: CatalogStore | Path | str | None = None) -> pd.DataFrame:
    """Make the catalog exported at ``source`` (a folder or an https:// URL) current, after checking every file's
    SHA-256 and validating every row as a refresh does; all providers in one transaction, history kept. Per provider:
    rows stored, rows rejected (with up to three reasons), as_of and source."""
    import pandas as pd

    from planner.catalog.snapshot_io import pull_snapshot

    opened = open_store(store)
    try:
        results = pull_snapshot(opened, str(source))
    finally:
        if opened is not store:
            opened.close()
    return pd.DataFrame.from_records(
        [
            {
                "provider": r.snapshot.provider,
                "rows": r.snapshot.row_count,
                "rejected_rows": r.snapshot.rejected_count,
                "rejected_examples": "; ".join(str(reason) for reason in r.rejected[:3]),
                "as_of": r.snapshot.as_of,
                "source": r.snapshot.source,
            }
            for r in results
        ],
        columns=["provider", "rows", "rejected_rows", "rejected_examples", "as_of", "source"],
    )


def catalog_history(
    instance_type: str,
    region: str,
    *,
    provider: str | None = None,
    store: CatalogStore | Path | str | None = None,
) -> pd.DataFrame:
    """The on-demand and spot price of one offering across every snapshot, oldest first. An offering no snapshot
    holds is an InputError naming the field that does not match."""
    for name, value in (("instance_type", instance_type), ("region", region)):
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"must be a name, got {value!r:.40}", field=name)
    if provider is not None:
        provider = _providers(provider)[0]
    opened = open_store(store)
    try:
        frame = opened.history(instance_type, region, provider)
    finally:
        if opened is not store:
            opened.close()
    if frame.empty:
        raise InputError(
            f"{instance_type!r} has no price in region {region!r}"
            + (f" of {provider}" if provider else "")
            + f" in any catalog snapshot; {LIBRARY_CALLS['offers']} lists the offerings",
            field="instance_type",
            related=("region",),
        )
    return frame


def hardware_table() -> pd.DataFrame:
    """The GPU hardware table, one row per GPU: datasheet peaks and memory, and the FP16/BF16 and FP32 matmul rates
    the model lets each GPU sustain with where they come from (``measured``, ``power bound (<peer>)`` or
    ``assumed``)."""
    import dataclasses

    import pandas as pd

    from planner.hardware import gpu_table
    from planner.perf.model import sustained_matmul

    rows = []
    for spec in gpu_table().values():
        row: dict[str, Any] = dataclasses.asdict(spec)
        row["sustained_fp16_tflops"], row["sustained_source"] = sustained_matmul(spec, "fp16")
        row["sustained_fp32_tflops"], row["sustained_fp32_source"] = sustained_matmul(spec, "fp32")
        rows.append(row)
    return pd.DataFrame(rows).rename(columns={"id": "gpu"})


def tpu_slices(
    *,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
) -> pd.DataFrame:
    """The Cloud TPU accelerator types, one row per slice: generation, chips, topology, VMs with their vCPUs and
    memory, HBM per chip, and from the catalog the zones and regions selling it and its cheapest chip-hour prices."""
    import pandas as pd

    from planner.catalog.tpu import hbm_gib, is_tpu, slice_table

    frame = _load(catalog, store, derived=False).frame
    sold = frame[[is_tpu(gpu) for gpu in frame["gpu"]]]
    rows = []
    for shape in slice_table().values():
        offered = sold[sold["instance_type"] == shape.accelerator_type]
        rows.append(
            {
                "accelerator_type": shape.accelerator_type,
                "gpu": shape.gpu,
                "chips": shape.chips,
                "topology": shape.topology,
                "vms": shape.vms,
                "vcpus": shape.vcpus,
                "ram_gib": shape.ram_gib,
                "hbm_gib_per_chip": hbm_gib(shape.gpu),
                "zones": int(offered["zone"].nunique()),
                "regions": int(offered["region"].nunique()),
                "min_usd_per_chip_hour": float(offered["price_usd_per_hour"].min() / shape.chips),
                "min_spot_usd_per_chip_hour": float(offered["spot_price_usd_per_hour"].min() / shape.chips),
            }
        )
    return pd.DataFrame(rows)


def estimate(
    workload: str | Workload,
    gpu: str,
    gpus: int = 1,
    precision: str = "bf16",
    *,
    perf_params: PerfParams | None = None,
    **options: Any,
) -> Estimate:
    """Throughput, time to solution, memory fit, MFU and energy of ``workload`` on ``gpus`` x ``gpu``.

    ``options``: workload fields (``tokens``/``images``/``sequences`` or ``work``, ``seq_len``, ``global_batch``,
    ``mode``, ``stack`` ...), the node shape (``gpus_per_node``, ``interconnect``, ``network_gbps``) and the user's
    own evidence (``measured`` with ``measured_on``, or ``efficiency``), or ``profile`` (a calibration profile or its
    file, from ``calibrate``), which gives the measured pair. ``perf_params``: the model's fitted coefficients
    (``planner.perf.params.PerfParams``), the bundled fit unless given.
    """
    from planner.hardware import GpuSpec, lookup
    from planner.perf.model import estimate as _estimate
    from planner.perf.options import ModelOptions
    from planner.perf.workloads import resolve_workload, split_options

    if not isinstance(gpu, GpuSpec):
        # Resolved here first so that an unknown name is reported as the ``gpu`` argument's (the model's own lookup
        # does not know which argument it came from).
        lookup(gpu, field="gpu")
    fields, rest = split_options(options)
    job = resolve_workload(workload, **fields)
    shape = {name: rest.pop(name) for name in ("gpus_per_node", "interconnect", "network_gbps") if name in rest}
    profile = rest.pop("profile", None)
    evidence = _take(rest, EVIDENCE_FIELDS)
    if profile is not None:
        from planner.runlogs.profile import profile_evidence

        if evidence:
            raise InputError("cannot be given with a profile, which sets them", field=sorted(evidence)[0])
        evidence = profile_evidence(profile, job.name, precision)
    model = ModelOptions(**evidence)
    _refuse_unknown(
        rest,
        (*WORKLOAD_OPTIONS, "gpus_per_node", "interconnect", "network_gbps", "profile", *model.__dataclass_fields__),
    )
    try:
        result = _estimate(job, gpu, gpus, precision, perf_params=perf_params, **shape, **model.as_kwargs())
    except InputError as exc:
        if profile is None or exc.field not in EVIDENCE_FIELDS:
            raise
        raise InputError(f"{profile}: its measurement, {exc.detail}", field="profile") from None
    # Estimate has no notes of its own: the caveat leads its assumptions, which every face shows.
    caveats = [note.removeprefix(WARNING_PREFIX) for note in tuned_stack_notes(job.stack, [result.gpu])]
    return replace(result, assumptions=[*caveats, *result.assumptions]) if caveats else result


def _take(options: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: options.pop(name) for name in names if name in options}


def _refuse_unknown(options: dict[str, Any], known: Sequence[str]) -> None:
    """An InputError for the first keyword not among ``known``, with its close spellings first (a typo)."""
    if options:
        name = sorted(options)[0]
        hint = checks.suggestion(name, known)
        raise InputError(f"is not an argument here{hint}; known: {', '.join(known)}", field=name)


# rank's own keyword arguments, for the close spellings of a mistyped one.
RANK_ARGUMENTS = ("provider", "region", "gpu", "instance_type", "min_gpu_memory_gib", "max_age_hours",
                  "available_only", "accelerator", "request", "catalog", "store", "estimator", "snapshot",
                  "as_of")  # fmt: skip


def rank(
    workload: str | Workload,
    *,
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    gpu: str | Sequence[str] | None = None,
    instance_type: str | Sequence[str] | None = None,
    min_gpu_memory_gib: float | None = None,
    max_age_hours: float | None = None,
    available_only: bool = False,
    accelerator: str = "any",
    request: RankRequest | None = None,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
    estimator: Estimator | None = None,
    snapshot: SnapshotIds | None = None,
    as_of: str | datetime | None = None,
    **options: Any,
) -> RankResult:
    """Every feasible offering for ``workload``, priced per training run and ranked.

    The conductor: resolves the workload once, loads and age-checks the catalog (only the providers asked for),
    filters it with the catalog's one filter, then ranks with ``planner.cost.rank.rank``, which does no I/O.
    ``options`` are RankRequest fields (``deadline_hours``, ``budget_usd``, ``pricing``, ``max_nodes``, ``by``,
    ``top``, ``precision``, overheads; or pass ``request``), workload fields (``tokens=2e9``, ``seq_len``, ...) and
    the user's evidence (``measured``/``measured_on``, ``efficiency``, or ``profile``: a calibration profile or its
    file). ``available_only`` keeps offerings whose cloud reported capacity at the last refresh. ``accelerator``
    (``any``, ``gpu`` or ``tpu``) ranks Cloud TPU slices beside the GPU offerings, or either alone. ``catalog``
    replaces the stored catalog and ``estimator`` the performance model. ``snapshot`` (stored snapshot ids, one per
    provider) or ``as_of`` (a time: each provider's snapshot current then) pins the prices: the answer reproduces
    after any later refresh, its prices' ages judged when those snapshots were current.
    """
    from planner.cost.rank import rank as _rank
    from planner.perf.workloads import resolve_workload, split_options

    fields, rest = split_options(options)
    if "profile" in rest:
        rest, request = _with_profile(workload, fields, rest, request)
    request, rest = _request(request, rest)
    _refuse_unknown(rest, (*WORKLOAD_OPTIONS, *RankRequest.field_names(), *EVIDENCE_FIELDS, *RANK_ARGUMENTS))
    job = resolve_workload(workload, **fields)
    pinned = _load(catalog, store, derived=False, snapshot=snapshot, as_of=as_of)
    frame, asked_request = pinned.frame, request
    if request.pricing in COMMITTED_PRICINGS:
        # Committed prices replace list prices; the engine ranks them as it ranks on-demand ones.
        frame, request = _committed(frame, request, store, pinned.snapshots), replace(request, pricing="on-demand")
    selection = select_offers(
        frame,
        OfferFilter(
            gpus=_as_list(gpu, "gpu"),
            providers=_as_list(provider, "provider"),
            regions=_as_list(region, "region"),
            instance_types=_as_list(instance_type, "instance_type"),
            min_gpu_memory_gib=min_gpu_memory_gib,
            available_only=available_only,
            accelerator=accelerator,
        ),
    )
    # Ages of the providers the answer comes from; with no offering left, of those asked for (all by default).
    asked = _providers(provider)
    judged = frame[frame["provider"].isin(asked)] if asked else frame
    oldest = oldest_prices(selection.offers if len(selection.offers) else judged)
    now = pinned.judged_at or datetime.now(UTC)
    ages = {provider: age_hours(stamp, now) for provider, stamp in sorted(oldest.items())}
    check_age(ages, max_age_hours)
    oldest_as_of = min(oldest.values()) if len(selection.offers) and oldest else None
    if selection.offers.empty:
        what = f"matches {selection.asked}" if selection.asked else "is in the catalog"
        if asked_request is not request:
            what += f" with a {asked_request.pricing} price"
        result = _rank(selection.offers, job, request, estimator or _default_estimator(), now=now)
        result = replace(result, message=f"no offering {what}")
    else:
        result = _rank(selection.offers, job, request, estimator or _default_estimator(), now=now)
    # Committed prices were ranked as on-demand ones: the year note reruns them so; the question says what was asked.
    year_note = _year_note(result, selection.offers, job, request, estimator or _default_estimator())
    if asked_request is not request:
        result = _as_committed(result, asked_request)
    request = asked_request
    return replace(
        result,
        assumptions=[*result.assumptions, *_owned_assumptions(selection.offers)],
        catalog_as_of=oldest_as_of,
        snapshots=sources([info for info in pinned.snapshots if not asked or info.provider in asked]),
        question=_question(
            job,
            request,
            provider=asked,
            region=region,
            gpu=gpu,
            instance_type=instance_type,
            # Asked only when narrowed: the default (any) leaves the question as it was.
            **({"accelerator": accelerator} if accelerator != "any" else {}),
        ),
        price_sources=_price_sources(selection.offers),
        year_note=year_note,
        notes=[
            *pinned.notes,
            *selection.notes,
            *result.notes,
            *tuned_stack_notes(job.stack, result.table["gpu"].unique().tolist() if len(result.table) else []),
            *stale_warnings(ages),
        ],
    )


def _owned_assumptions(offers: pd.DataFrame) -> list[str]:
    """How the owned servers among ``offers`` are priced, each with its inputs (none when there are none)."""
    from planner.catalog.owned import read_servers
    from planner.cost.owned import assumption_lines

    if offers.empty or not (offers["provider"] == OWNED).any():
        return []
    names = set(offers.loc[offers["provider"] == OWNED, "instance_type"].astype(str))
    return assumption_lines([server for server in read_servers() if server.name in names])


def _committed(
    frame: pd.DataFrame, request: RankRequest, store: CatalogStore | Path | str | None, snapshots: list[SnapshotInfo]
) -> pd.DataFrame:
    """The catalog priced at each offering's cheapest commitment of the request's term (planner.cost.commitment),
    the commitment prices those of the snapshots the offerings were read from (the current ones for a given
    catalog)."""
    from planner.catalog.commitments import load_commitments
    from planner.cost.commitment import committed_catalog, term_of

    commitments = load_commitments(store, snapshot=[info.id for info in snapshots] or None)
    return committed_catalog(frame, commitments, term_of(request.pricing), request.utilisation)


def _as_committed(result: RankResult, asked: RankRequest) -> RankResult:
    """A ranking of committed prices labelled as such, with the utilisation they assume stated."""
    table = result.table.copy()
    if "pricing" in table.columns:
        table.loc[table["pricing"] == "on-demand", "pricing"] = asked.pricing
    note = (
        f"{asked.pricing} prices are per used hour at {asked.utilisation:.0%} utilisation of the committed hours "
        "(upfront fees spread over the term; utilisation= changes it); offerings without such a commitment in the "
        "catalog are left out"
    )
    return replace(result, table=table, assumptions=[*result.assumptions, note])


def _question(job: Workload, request: RankRequest, **filters: Any) -> dict[str, Any]:
    """What a ranking was asked, in the user's words: the workload and its work, the constraints, the filters."""
    return {
        "workload": job.name,
        "work": job.default_work_text(),
        "precision": request.precision,
        "deadline_hours": request.deadline_hours,
        "budget_usd": request.budget_usd,
        "pricing": request.pricing,
        "max_nodes": request.max_nodes,
        "by": request.by,
        **{name: _as_list(value, name) for name, value in filters.items()},
    }


def _price_sources(offers: pd.DataFrame) -> dict[str, list[str]]:
    """The distinct price_source of each provider's offerings, in the order they first appear."""
    if offers.empty or "price_source" not in offers.columns:
        return {}
    import pandas as pd

    # Distinct pairs from the two columns' codes: a drop_duplicates over their text cost a twentieth of a ranking.
    # A missing value is a value of its own here (use_na_sentinel=False), as it is to drop_duplicates.
    providers, provider_names = pd.factorize(offers["provider"], use_na_sentinel=False)
    sources, source_names = pd.factorize(offers["price_source"], use_na_sentinel=False)
    found: dict[str, list[str]] = {}
    for pair in pd.unique(providers.astype("int64") * len(source_names) + sources):
        provider, source = divmod(int(pair), len(source_names))
        found.setdefault(str(provider_names[provider]), []).append(str(source_names[source]))
    return found


def _year_note(
    result: RankResult, offers: pd.DataFrame, job: Workload, request: RankRequest, estimator: Estimator
) -> str | None:
    """That no option finishes within a year and what would, when the best one does not (else None).

    Only then is the job ranked again, on up to MAX_NODES instances without deadline or budget: the fewest nodes
    that would finish it within a year, or how much less work would."""
    from planner.cost.explain import YEAR_HOURS, beyond_a_year
    from planner.cost.rank import rank as _rank
    from planner.cost.request import MAX_NODES

    best = result.best()
    if best is None or float(best["time_to_solution_hours"]) <= YEAR_HOURS:
        return None
    options = result.table[result.table["rank"].notna()]
    wider = None
    if request.max_nodes < MAX_NODES and not (options["time_to_solution_hours"] <= YEAR_HOURS).any():
        relaxed = replace(request, max_nodes=MAX_NODES, deadline_hours=None, budget_usd=None, top=None, by="time")
        wider = _rank(offers, job, relaxed, estimator).table
    return beyond_a_year(best, options, request.max_nodes, wider, MAX_NODES, job.total_work(), job.work_unit)


def _request(request: RankRequest | None, options: dict[str, Any]) -> tuple[RankRequest, dict[str, Any]]:
    """The request: the one given whole, or one built from the keyword ``options`` (the library's way); and the
    options it did not take. A field given both ways is an InputError naming it."""
    if request is None:
        return RankRequest.from_options(options)
    if not isinstance(request, RankRequest):
        raise InputError(f"must be a RankRequest, got {type(request).__name__}", field="request")
    twice = sorted(set(options) & {*RankRequest.field_names(), *EVIDENCE_FIELDS})
    if twice:
        raise InputError("is given both here and in request=; set it in the request only", field=twice[0])
    return request, options


def _with_profile(
    workload: str | Workload, fields: dict[str, Any], rest: dict[str, Any], request: RankRequest | None
) -> tuple[dict[str, Any], RankRequest | None]:
    """A calibration profile (``profile=``) as the measured pair it holds: in ``rest``, or in ``request``'s model."""
    from planner.perf.options import ModelOptions
    from planner.perf.workloads import resolve_workload
    from planner.runlogs.profile import profile_evidence

    rest = dict(rest)
    profile = rest.pop("profile")
    given = sorted(set(EVIDENCE_FIELDS) & set(rest))
    if given or (isinstance(request, RankRequest) and request.model.as_kwargs()):
        raise InputError("cannot be given with a profile, which sets them", field=given[0] if given else "request")
    precision = request.precision if isinstance(request, RankRequest) else rest.get("precision", "bf16")
    evidence = profile_evidence(profile, resolve_workload(workload, **fields).name, str(precision))
    if isinstance(request, RankRequest):
        return rest, replace(request, model=ModelOptions(**evidence))
    return {**rest, **evidence}, request


def _default_estimator() -> Estimator:
    from planner.perf.model import estimate as model_estimate

    return model_estimate


def compare(
    workload: str | Workload,
    *,
    gpus: str | Sequence[str] = (),
    instance_types: str | Sequence[str] = (),
    request: RankRequest | None = None,
    **constraints: Any,
) -> RankResult:
    """The best option of each of a few GPUs (any spelling; a family covers its variants) or instance types, per
    pricing, side by side; a choice without an option says why in ``notes``. One name may be given as a string.

    ``request`` (or its fields as keyword ``constraints``) says what each choice must meet; its ``top`` is compare's
    own. The other ``constraints`` are ``rank``'s: filters, workload fields, ``catalog``, ``estimator``.
    """
    from planner.cost.compare import best_of_each, closest_miss

    # A name given twice is one choice.
    gpus = list(dict.fromkeys(_as_list(gpus, "gpus")))
    instance_types = list(dict.fromkeys(_as_list(instance_types, "instance_types")))
    if not gpus and not instance_types:
        raise InputError(
            "or instance_types must name what to compare (one or more)", field="gpus", related=("instance_types",)
        )
    if gpus and instance_types:
        raise InputError(
            "and instance_types cannot both be given: compare GPUs or instance types",
            field="gpus",
            related=("instance_types",),
        )
    for name in ("top", "gpu", "instance_type"):
        if name in constraints:
            raise InputError("is set by compare itself", field=name)
    asked, rest = _request(request, constraints)
    asked = replace(asked, top=None)
    key = "gpu" if gpus else "instance_type"
    names = [str(n) for n in (gpus or instance_types)]
    choices = [(n, gpu_family(n, "gpus")[0]) for n in names] if gpus else [(n, [n]) for n in names]
    filters: dict[str, Any] = {key: names}
    try:
        result = rank(workload, **filters, request=asked, **rest)
    except InputError as exc:
        if exc.field == "instance_type":
            # The ranking's filter names its own argument; here the names came as ``instance_types``.
            raise InputError(exc.detail, field="instance_types") from None
        raise
    relaxed = replace(asked, deadline_hours=None, budget_usd=None, by="time")

    def why(name: str, members: list[str], pricing: str) -> str | None:
        # Ask again without the deadline and budget: the choice's own fastest and cheapest options say which one
        # it misses and by how much, on any node count (not the first exclusion that happens to be listed).
        only: dict[str, Any] = {key: [name]}
        again = rank(workload, **only, request=replace(relaxed, pricing=pricing), **rest)
        return closest_miss(again, asked.deadline_hours, asked.budget_usd)

    return best_of_each(result, choices, key, asked.pricing, why)


def commitment_prices(
    term: int | str | None = None,
    *,
    utilisation: float | None = None,
    gpu: str | Sequence[str] | None = None,
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    instance_type: str | Sequence[str] | None = None,
    store: CatalogStore | Path | str | None = None,
) -> pd.DataFrame:
    """Every commitment price of the store's current catalog (bundled, or the last live refresh's), with what an hour
    of the term costs (``committed_usd_per_hour``: upfront fee spread over the term), per used hour
    (``price_usd_per_hour``) at ``utilisation`` (default planner.cost.commitment.DEFAULT_UTILISATION), the
    offering's GPU and on-demand price and the break-even utilisation above which the commitment beats it.
    ``term``: 1y or 3y (both when None). With ``gpu`` (any spelling), only offerings of the catalog with that GPU."""
    from planner.catalog.commitments import load_commitments
    from planner.cost.commitment import (
        DEFAULT_UTILISATION,
        amortised_usd_per_hour,
        basis,
        break_even,
        term_years,
        utilisation_value,
    )

    u = utilisation_value(DEFAULT_UTILISATION if utilisation is None else utilisation)
    frame = load_commitments(store)
    if term is not None:
        frame = frame[frame["term_years"] == term_years(term)]
    for column, names in (("provider", provider), ("region", region), ("instance_type", instance_type)):
        wanted = _as_list(names, column)
        if wanted:
            frame = frame[frame[column].isin(wanted)]
    key = ["provider", "instance_type", "region"]
    listed = offers(gpu, provider=provider, region=region, instance_type=instance_type, store=store)
    listed = listed[[*key, "gpu", "gpu_count", "price_usd_per_hour"]].sort_values("price_usd_per_hour")
    listed = listed.drop_duplicates(key).rename(columns={"price_usd_per_hour": "on_demand_usd_per_hour"})
    # A commitment of a region the catalog does not list is kept (no on-demand price to weigh it), unless a GPU
    # was asked for: then only offerings the catalog knows have one.
    frame = frame.merge(listed, on=key, how="inner" if _as_list(gpu, "gpu") else "left")
    frame["price_basis"] = [basis(int(years)) for years in frame["term_years"]]
    frame["committed_usd_per_hour"] = [
        amortised_usd_per_hour(float(up), float(hourly), int(years))
        for up, hourly, years in zip(
            frame["upfront_usd"], frame["hourly_usd_per_hour"], frame["term_years"], strict=True
        )
    ]
    frame["price_usd_per_hour"] = frame["committed_usd_per_hour"] / u
    frame["break_even_vs_on_demand"] = [
        None if od != od else break_even(committed, od)
        for committed, od in zip(frame["committed_usd_per_hour"], frame["on_demand_usd_per_hour"], strict=True)
    ]
    return frame.reset_index(drop=True)


def plan(
    workload: str | Workload,
    *,
    runs_per_month: float,
    term: int | str = "1y",
    utilisation: float | None = None,
    spot: bool = True,
    provider: str | Sequence[str] | None = None,
    region: str | Sequence[str] | None = None,
    gpu: str | Sequence[str] | None = None,
    instance_type: str | Sequence[str] | None = None,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
    **options: Any,
) -> pd.DataFrame:
    """``runs_per_month`` runs of ``workload`` a month: per offering with a ``term`` commitment (1y or 3y), the
    cheapest mix (instances committed for the base load, the rest on demand or spot), its monthly and yearly totals,
    a run's cost each way and the break-even utilisations against on demand and against spot (its expected
    interruptions included; ``spot=False`` leaves spot out of the mix). Cheapest month first. ``options`` are
    ``rank``'s (workload fields, max_nodes, ...)."""
    from planner.catalog.commitments import load_commitments
    from planner.cost.commitment import DEFAULT_UTILISATION, best_commitments, term_years, utilisation_value
    from planner.cost.commitment_plan import commitment_plan

    years = term_years(term)
    u = utilisation_value(DEFAULT_UTILISATION if utilisation is None else utilisation)
    runs = checks.number("runs_per_month", runs_per_month)
    if "pricing" in options:
        raise InputError("is not an argument of plan, which weighs every pricing", field="pricing")
    ranked = rank(
        workload,
        provider=provider,
        region=region,
        gpu=gpu,
        instance_type=instance_type,
        catalog=catalog,
        store=store,
        pricing="both",
        **options,
    )
    # The commitment prices of the snapshots the ranking read (pinned by snapshot= or as_of= among the options).
    pins = [int(s["snapshot_id"]) for s in ranked.snapshots] or None
    best = best_commitments(load_commitments(store, snapshot=pins), years)
    return commitment_plan(ranked.table, best, runs, u, spot=bool(spot))


def calibrate(
    logs: str | Path | Sequence[Any] = (),
    *,
    workload: str | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    throughput: float | None = None,
    precision: str = "bf16",
    profile: Any = None,
    price_usd_per_gpu_hour: float | None = None,
    log_format: str | None = None,
    interval_s: float | None = None,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
    **workload_fields: Any,
) -> Calibration:
    """A run's logs (GPU metrics and training logs; paths or ``LogSource`` objects) as a utilisation report, a
    calibration profile and right-sizing advice with its cost (``.report``, ``.profile``, ``.advice``).

    ``throughput`` (the workload's unit per second, all GPUs) replaces the training logs' figure; ``profile`` (a
    profile or its file) adds this run to its earlier runs. Without ``price_usd_per_gpu_hour`` each GPU's cheapest
    catalog offering prices the advice. ``workload_fields`` (``seq_len``, ``global_batch`` ...) shape the workload.
    """
    from planner.errors import PlannerError
    from planner.runlogs.calibrate import as_sources, earlier_runs
    from planner.runlogs.calibrate import calibrate as _calibrate

    sources = as_sources(logs)
    if not sources and throughput is None:
        raise InputError("needs at least one log, or the measured throughput", field="log")
    workload, workload_fields, earlier = earlier_runs(profile, workload, workload_fields)
    prices: dict[str, float] = {}
    notes: list[str] = []
    if price_usd_per_gpu_hour is None:
        try:
            frame = offers(catalog=catalog, store=store)
            cheapest = frame.groupby("gpu")["price_per_gpu_usd_per_hour"].min()
            prices = {str(name): float(value) for name, value in cheapest.items() if value == value and value > 0}
        except PlannerError as exc:
            notes.append(f"no catalog prices ({exc}): the advice has no dollars")
    result = _calibrate(
        sources,
        workload=workload,
        gpu=gpu,
        gpus=gpus,
        throughput=checks.optional_number("throughput", throughput),
        precision=str(precision).strip().lower(),
        workload_fields=workload_fields,
        runs=earlier,
        price_usd_per_gpu_hour=checks.optional_number("price_usd_per_gpu_hour", price_usd_per_gpu_hour),
        prices_usd_per_gpu_hour=prices,
        log_format=log_format,
        interval_s=checks.optional_number("interval_s", interval_s),
    )
    return replace(result, notes=(*result.notes, *notes)) if notes else result


def buy_or_rent(
    *,
    examples: bool = False,
    catalog: pd.DataFrame | None = None,
    store: CatalogStore | Path | str | None = None,
    snapshot: SnapshotIds | None = None,
    as_of: str | datetime | None = None,
) -> pd.DataFrame:
    """Each owned server (owned.toml; ``examples``: the bundled examples) priced per hour of use in parts, beside
    the cheapest on-demand rental of the same GPUs, with the utilisation above which owning costs less
    (``break_even_utilisation``; above 1: never). Rentals at the user's negotiated prices where the prices file
    gives them."""
    from planner.catalog.owned import example_servers, read_servers
    from planner.cost.owned import buy_or_rent_table

    servers = example_servers() if examples else read_servers()
    frame = _load(catalog, store, derived=False, snapshot=snapshot, as_of=as_of).frame
    return buy_or_rent_table(servers, frame[frame["provider"] != OWNED] if len(frame) else frame)


def refresh(
    providers: str | Sequence[str] = "all",
    *,
    regions: Sequence[str] | None = None,
    store: CatalogStore | Path | str | None = None,
    **options: Any,
) -> RefreshReport:
    """Pull live catalogs from the cloud APIs into the store (needs the provider extras and credentials)."""
    from planner.refresh import refresh as _refresh

    return _refresh(providers, regions=regions, store=store, **options)
