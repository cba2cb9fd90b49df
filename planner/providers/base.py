"""The provider contract: one small interface every cloud implements, plus the helpers they share.

Nothing here imports a cloud SDK; each provider module imports its SDK lazily through ``require``.
"""

from __future__ import annotations

import importlib
import logging
import queue
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar, TypeVar, cast

from planner.catalog.families import FamilyFacts
from planner.catalog.schema import COLUMN_NAMES, Offer, RawOffer
from planner.catalog.validate import Rejected
from planner.errors import InputError, MissingExtra, ProviderError, UnknownGpuError, install_command
from planner.hardware import lookup

T = TypeVar("T")

# botocore's DEBUG log carries session tokens and the Azure/Google SDKs log request headers: never below WARNING.
SDK_LOGGERS = ("botocore", "boto3", "s3transfer", "urllib3", "google", "google.auth", "azure", "msal", "requests")
DEFAULT_WORKERS = 32  # more than the regions any cloud has enabled, so one wave fetches them all
DEFAULT_TIMEOUT_S = 30.0


def quiet_sdk_loggers() -> None:
    """Keep every SDK logger at WARNING or above, whatever the caller's logging config says."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or raise MissingExtra with the pip command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{extra}: the {module} package is not installed; run: {install_command(extra)}") from None


class HostUnresolvable(ProviderError):
    """The API's host name does not resolve: every region would fail alike, so the provider fails at once."""


@dataclass(frozen=True)
class RegionFailure:
    """A region whose data could not be fetched (after retries), and why."""

    region: str
    reason: str


@dataclass
class FetchResult:
    """What one provider's fetch produced: offering rows in the stored schema, and what went wrong."""

    rows: list[RawOffer] = field(default_factory=list)
    failures: list[RegionFailure] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    # Commitment prices read beside the offerings (planner.catalog.commitments columns), validated on storing.
    commitments: list[dict[str, Any]] = field(default_factory=list)


class ProgressHook:
    """Told how many regions a provider will fetch and when each is done (the CLI draws a bar from it)."""

    def start(self, provider: str, total: int) -> None:
        """``provider`` is about to fetch ``total`` regions."""

    def advance(self, provider: str, region: str, ok: bool) -> None:
        """One region finished."""


class Provider(ABC):
    """One cloud: builds its clients from the standard credential chain (or is handed them) and fetches offerings."""

    name: ClassVar[str]
    extra: ClassVar[str]
    # One line telling the user how to set up credentials.
    credentials_hint: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_environment(cls, **options: Any) -> Provider:
        """Build the SDK clients from the environment; MissingExtra or MissingCredentials if impossible."""

    @abstractmethod
    def fetch(
        self,
        regions: Sequence[str] | None = None,
        *,
        progress: ProgressHook | None = None,
        previous: Sequence[Offer] = (),
    ) -> FetchResult:
        """Every GPU offering in ``regions`` (all regions when None), as rows of the stored schema.

        ``previous`` is the provider's current catalog: an adapter may fall back on it where a secondary source
        (AWS Spot Advisor, Azure Resource SKUs) is unavailable, and must not otherwise depend on it.
        """

    @property
    @abstractmethod
    def source(self) -> str:
        """Where the prices came from, stored with the snapshot and on every row."""


def fetch_regions(
    provider: str,
    regions: Sequence[str],
    work: Callable[[str], T],
    *,
    workers: int = DEFAULT_WORKERS,
    progress: ProgressHook | None = None,
    describe: Callable[[BaseException], str] | None = None,
    deadline_s: float | None = None,
) -> tuple[dict[str, T], list[RegionFailure]]:
    """Run ``work(region)`` for every region on a pool of threads; a failing region is recorded, never fatal.

    With ``deadline_s``, regions not finished that many seconds after the call fail with reason "deadline"
    and the call returns at once. Their threads are daemons: a hung socket can neither hold the result back
    nor keep the process alive, and whatever they produce later is dropped.
    """
    hook = progress or ProgressHook()
    hook.start(provider, len(regions))
    done: dict[str, T] = {}
    failures: list[RegionFailure] = []
    if not regions:
        return done, failures
    if deadline_s is not None and not deadline_s > 0:  # also catches NaN
        raise InputError(f"deadline_s must be a positive number of seconds, got {deadline_s!r}")
    ends_at = None if deadline_s is None else time.monotonic() + deadline_s
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for region in regions:
        todo.put(region)
    finished: queue.SimpleQueue[tuple[str, bool, Any]] = queue.SimpleQueue()
    fatal: list[HostUnresolvable] = []

    def worker() -> None:
        while True:
            try:
                region = todo.get_nowait()
            except queue.Empty:
                return
            try:
                finished.put((region, True, work(region)))
            except HostUnresolvable as exc:  # no region can succeed: the provider fails with one line
                fatal.append(exc)
                finished.put((region, False, exc))
            except Exception as exc:  # one region's failure must not lose the others
                finished.put((region, False, exc))

    for _ in range(max(1, min(workers, len(regions)))):
        threading.Thread(target=worker, name=f"fetch-{provider}", daemon=True).start()
    pending = set(regions)
    while pending:
        timeout = None if ends_at is None else ends_at - time.monotonic()
        try:
            if timeout is not None and timeout <= 0:
                raise queue.Empty
            region, ok, value = finished.get(timeout=timeout)
        except queue.Empty:
            break
        pending.discard(region)
        if fatal:
            while not todo.empty():  # the regions still queued are not started
                todo.get_nowait()
            raise fatal[0]
        if ok:
            done[region] = value
        else:
            failures.append(RegionFailure(region, (describe or describe_error)(value)))
        hook.advance(provider, region, ok)
    while pending:  # only when the deadline passed: regions still queued are not started any more
        try:
            todo.get_nowait()
        except queue.Empty:
            break
    for region in sorted(pending):
        failures.append(RegionFailure(region, f"deadline: not finished within the refresh's {deadline_s:g} s"))
        hook.advance(provider, region, False)
    failures.sort(key=lambda f: f.region)
    return done, failures


def describe_error(exc: BaseException) -> str:
    """One short line for an exception, without request details (which may carry credentials)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    text = re.sub(r"(?i)(signature|token|key|secret|authorization)=\S+", r"\1=***", text)
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def blank_row(provider: str) -> RawOffer:
    """A row with every stored column, all missing except the provider (the adapter fills in the rest)."""
    row = cast(RawOffer, dict.fromkeys(COLUMN_NAMES))
    row.update({"provider": provider, "zone": "", "flags": ""})
    return row


def resolve_gpu_name(name: str, memory_gib: float | None) -> tuple[str, str | None]:
    """(canonical GPU id, None) or ('', reason) when the resolver does not know the name."""
    try:
        return lookup(name, memory_gib).spec.id, None
    except UnknownGpuError:
        return "", f"GPU {name!r} is not in the hardware table (data/gpus.csv)"


def add_flag(row: RawOffer | Offer, flag: str) -> None:
    """Append ``flag`` to the row's ';'-separated flags once."""
    flags = [f for f in str(row.get("flags") or "").split(";") if f]
    if flag not in flags:
        flags.append(flag)
    row["flags"] = ";".join(flags)


def rejected(provider: str, instance_type: str, region: str, reason: str, zone: str = "") -> Rejected:
    """A row the adapter could not build, in the validator's own form so the report lists both alike."""
    return Rejected(provider, instance_type, region, zone, reason)


def chunks(items: Sequence[T], size: int) -> Iterable[list[T]]:
    """``items`` in lists of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def family_facts(provider: str, instance_type: str) -> FamilyFacts | None:
    """The bundled facts about an instance family (GPU, interconnect, network, availability), or None."""
    from planner.catalog.families import family_facts as lookup_family

    return lookup_family(provider, instance_type)


def apply_family(row: RawOffer, facts: FamilyFacts | None) -> None:
    """Fill interconnect, network and availability from the family table; PCIe when the family is unknown."""
    if facts is not None:
        row["interconnect"] = row.get("interconnect") or facts.interconnect
        if row.get("network_gbps") is None:
            row["network_gbps"] = facts.network_gbps
        if facts.availability and facts.availability != "on-demand":
            row["availability"] = facts.availability
    if not row.get("interconnect"):
        # Without a sourced fact, claim no NVLink: the conservative choice for multi-GPU estimates.
        row["interconnect"] = "pcie"
        add_flag(row, "interconnect_assumed")


def settle_availability(row: RawOffer) -> None:
    """Without an on-demand price an offering is spot-only (if it has spot) or reservation-only."""
    if row.get("availability") in (None, ""):
        row["availability"] = "on-demand"
    if row["availability"] == "on-demand" and row.get("price_usd_per_hour") is None:
        row["availability"] = "spot-only" if row.get("spot_price_usd_per_hour") is not None else "reservation-only"
