"""Filtering and sorting the catalog: pure, vectorised functions over the offerings DataFrame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from planner import checks
from planner.catalog.owned import OWNED
from planner.catalog.schema import PROVIDERS, is_local_zone
from planner.catalog.tpu import ACCELERATOR_KINDS, GENERATIONS, accelerator_mask
from planner.errors import InputError
from planner.hardware import gpu_table, lookup
from planner.report import WARNING_PREFIX

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

# --sort keys users type -> (column, ascending)
SORT_KEYS: dict[str, tuple[str, bool]] = {
    "price": ("price_usd_per_hour", True),
    "spot-price": ("spot_price_usd_per_hour", True),
    "price-per-gpu": ("price_per_gpu_usd_per_hour", True),
    "gpus": ("gpu_count", False),
    "gpu-memory": ("gpu_memory_gib", False),
    "provider": ("provider", True),
    "region": ("region", True),
    "instance": ("instance_type", True),
    "age": ("as_of", True),
}

# A provider whose prices are older than this is marked stale in every output (a warning line, a flag per row).
STALE_AFTER_DAYS = 30.0

# Columns `offers` shows, in order (the library returns these plus every stored column).
OFFER_COLUMNS: tuple[str, ...] = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "interconnect",
    "network_gbps",
    "price_usd_per_hour",
    "spot_price_usd_per_hour",
    "price_per_gpu_usd_per_hour",
    "price_basis",
    "spot_price_basis",
    "spot_interruption",
    "availability",
    "available_now",
    "as_of",
    "stale",
)


@dataclass(frozen=True)
class OfferFilter:
    """Which offerings are wanted; every field is optional. Errors name these fields."""

    gpus: Sequence[str] = ()
    min_gpus: float | None = None
    max_gpus: float | None = None
    min_gpu_memory_gib: float | None = None
    providers: Sequence[str] = ()
    regions: Sequence[str] = ()
    instance_types: Sequence[str] = ()
    max_price_usd_per_hour: float | None = None
    spot: bool = False
    sort: str = "price"
    by_zone: bool = False
    # Only offerings whose cloud reported capacity at the last refresh (available_now "true"); unknown is excluded.
    available_only: bool = False
    # GPU offerings, Cloud TPU slices, or both (planner.catalog.tpu.ACCELERATOR_KINDS).
    accelerator: str = "any"


# The library argument each OfferFilter field comes from, for error messages.
FILTER_ARGUMENTS = {
    "gpus": "gpu",
    "providers": "provider",
    "regions": "region",
    "instance_types": "instance_type",
}


@dataclass(frozen=True)
class Selection:
    """The offerings a filter keeps (catalog order, every zone), notes for the user, and the filter in words."""

    offers: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    asked: str = ""


def gpu_family(name: str, field: str = "gpu") -> tuple[list[str], str | None]:
    """Canonical ids a GPU filter matches: a bare family name (``H100``) matches every variant of it.

    ``field`` is the argument the name came from, for the unknown-GPU error (``gpus`` in compare).
    """
    tpu = {gpu.lower(): gpu for gpu in GENERATIONS}.get(str(name).strip().lower())
    if tpu is not None:
        return [tpu], None  # a TPU generation id: the slice table names it, whatever the GPU table holds
    resolved = lookup(name, field=field)
    if resolved.note is None:
        return [resolved.spec.id], None
    family = resolved.spec.id.split("-")[0]
    members = [gpu_id for gpu_id in gpu_table() if gpu_id.split("-")[0] == family]
    return members, f"'{name}' matches every {family} variant ({', '.join(members)})"


def _describe(spec: OfferFilter) -> str:
    """The filter in words, for "no offering matches ..." (field names, as the library takes them)."""
    parts = [
        f"{FILTER_ARGUMENTS[name]} {', '.join(values)}"
        for name, values in (
            ("providers", spec.providers),
            ("regions", spec.regions),
            ("gpus", spec.gpus),
            ("instance_types", spec.instance_types),
        )
        if values
    ]
    for name, value, sign in (
        ("min_gpus", spec.min_gpus, ">="),
        ("max_gpus", spec.max_gpus, "<="),
        ("min_gpu_memory_gib", spec.min_gpu_memory_gib, ">="),
        ("max_price_usd_per_hour", spec.max_price_usd_per_hour, "<="),
    ):
        if value is not None:
            parts.append(f"{name} {sign} {value:g}")
    if spec.accelerator != "any":
        parts.append(f"accelerator {spec.accelerator}")
    if spec.available_only:
        parts.append("available_only (a capacity reading of true: only Lambda reports one, on a live refresh)")
    return "; ".join(parts)


def _catalog_names(field: str, kind: str, values: list[str], known: list[str]) -> list[str]:
    """Each of ``values`` as the catalog spells it, matched in any case ("US-EAST-1", "P5.48XLARGE"); an unknown
    one raises ``checks.unknown``."""
    spelled = {name.lower(): name for name in known}
    return checks.names(field, kind, [spelled.get(value.lower(), value) for value in values], known)


def select_offers(frame: pd.DataFrame, spec: OfferFilter) -> Selection:
    """The one catalog filter: the rows ``spec`` keeps, in catalog order, every zone; unknown names are errors."""
    import numpy as np
    import pandas as pd

    limits = {
        name: checks.optional_number(name, getattr(spec, name))
        for name in ("min_gpus", "max_gpus", "min_gpu_memory_gib", "max_price_usd_per_hour")
    }
    if limits["min_gpus"] is not None and limits["max_gpus"] is not None and limits["min_gpus"] > limits["max_gpus"]:
        raise InputError(
            f"({limits['min_gpus']:g}) is larger than max_gpus ({limits['max_gpus']:g})",
            field="min_gpus",
            related=("max_gpus",),
        )
    checks.choice("sort", spec.sort, tuple(SORT_KEYS))
    accelerator = checks.choice(
        "accelerator",
        spec.accelerator.strip().lower() if isinstance(spec.accelerator, str) else spec.accelerator,
        ACCELERATOR_KINDS,
    )
    providers = checks.names("provider", "provider", [str(p).lower() for p in spec.providers], (*PROVIDERS, OWNED))
    # The known names are read only when a filter names some: listing them costs a pass over the catalog.
    regions = [str(r) for r in spec.regions]
    if regions:
        regions = _catalog_names("region", "region", regions, frame["region"].unique().tolist())
    instances = [str(i) for i in spec.instance_types]
    if instances:
        instances = _catalog_names(
            "instance_type", "instance type", instances, frame["instance_type"].unique().tolist()
        )

    notes: list[str] = []
    mask = np.ones(len(frame), dtype=bool)
    if spec.gpus:
        wanted: list[str] = []
        for name in spec.gpus:
            members, note = gpu_family(str(name), FILTER_ARGUMENTS["gpus"])
            wanted.extend(members)
            if note:
                notes.append(note)
        mask &= frame["gpu"].isin(wanted).to_numpy()
    for column, values in (("provider", providers), ("region", regions), ("instance_type", instances)):
        if values:
            mask &= frame[column].isin(values).to_numpy()
    if accelerator != "any":
        # Asked once per distinct id: a handful of GPU ids over many rows.
        codes, ids = pd.factorize(frame["gpu"])
        keep = np.array([*accelerator_mask(ids, accelerator), accelerator == "gpu"], dtype=bool)
        mask &= keep[codes]
    if limits["min_gpus"] is not None:
        mask &= (frame["gpu_count"] >= limits["min_gpus"]).to_numpy()
    if limits["max_gpus"] is not None:
        mask &= (frame["gpu_count"] <= limits["max_gpus"]).to_numpy()
    if limits["min_gpu_memory_gib"] is not None:
        mask &= (frame["gpu_memory_gib"] >= limits["min_gpu_memory_gib"]).to_numpy()
    price_column = "spot_price_usd_per_hour" if spec.spot else "price_usd_per_hour"
    if spec.spot:
        mask &= frame["spot_price_usd_per_hour"].notna().to_numpy()
    if limits["max_price_usd_per_hour"] is not None:
        mask &= (frame[price_column] <= limits["max_price_usd_per_hour"]).to_numpy()
    if spec.available_only:
        considered = frame.loc[mask]
        known = set(considered.loc[considered["available_now"] != "unknown", "provider"])
        silent = sorted(set(considered["provider"]) - known)
        if silent:
            # Say so rather than let a whole cloud vanish without a reason.
            notes.append(
                f"{WARNING_PREFIX}left out {', '.join(silent)}: no capacity figure (only lambda reports capacity on "
                "refresh)"
            )
        mask &= (frame["available_now"] == "true").to_numpy()
    kept = frame if mask.all() else frame.loc[mask]
    return Selection(offers=kept, notes=notes, asked=_describe(spec))


def with_derived(frame: pd.DataFrame, now: datetime | None = None) -> pd.DataFrame:
    """Add the columns users read but the store does not keep: price per GPU, and ``stale`` (prices older than
    STALE_AFTER_DAYS)."""

    frame = frame.copy()
    frame["price_per_gpu_usd_per_hour"] = frame["price_usd_per_hour"] / frame["gpu_count"]
    frame["spot_price_per_gpu_usd_per_hour"] = frame["spot_price_usd_per_hour"] / frame["gpu_count"]
    frame["stale"] = stale_prices(frame["as_of"], now)
    frame["spot_note"] = spot_notes(frame)
    return frame


# What each spot note means, said once under a table that shows it (the CLI's `offers`, the app's Catalog page).
SPOT_NOTE_MEANINGS = {
    "FLOOR": "the price sits at the clouds' 90%-off floor, not a market price: little spot capacity may trade there",
    "no discount": "the spot price equals the on-demand one (the cloud caps spot at on-demand)",
    "Local Zone": "an AWS Local Zone, a metro extension of the region: opt the account in before launching there",
}


def local_zones(zones: pd.Series) -> npt.NDArray[np.bool_]:
    """Which rows are AWS Local Zones (``schema.is_local_zone``), asked once per distinct zone; a missing zone is not
    one."""
    import numpy as np
    import pandas as pd

    codes, values = pd.factorize(zones)
    # Over a plain list: iterating an Arrow-backed Index makes each value row by row (slower than the match).
    matched = np.array([is_local_zone(zone) for zone in np.asarray(values, dtype=object).tolist()], dtype=bool)
    # factorize gives -1 for a missing zone: the last entry, False.
    result: npt.NDArray[np.bool_] = np.append(matched, False)[codes]
    return result


# Catalog flags a spot note names, in its words.
SPOT_FLAG_LABELS = (("spot_at_floor", "FLOOR"), ("spot_at_on_demand", "no discount"))


def spot_notes(frame: pd.DataFrame) -> npt.NDArray[np.object_]:
    """What a spot price does not say by itself: ``FLOOR`` (at the clouds' 90%-off floor: little capacity may trade
    there), ``no discount`` (spot at the on-demand price), ``Local Zone`` (an opt-in metro zone); empty otherwise.
    Worded once per distinct (flags, Local Zone) pair, then gathered."""
    import numpy as np
    import pandas as pd

    local = local_zones(frame["zone"])
    flag_codes, flag_values = pd.factorize(frame["flags"].fillna(""))
    key = flag_codes * 2 + local
    unique_keys, inverse = np.unique(key, return_inverse=True)
    words = []
    for value in unique_keys.tolist():
        flags, in_local_zone = str(flag_values[value // 2]), bool(value % 2)
        parts = [label for flag, label in SPOT_FLAG_LABELS if flag in flags]
        words.append(", ".join([*parts, "Local Zone"] if in_local_zone else parts))
    result: npt.NDArray[np.object_] = np.array(words, dtype=object)[np.asarray(inverse).reshape(-1)]
    return result


def spot_note_legend(notes: pd.Series) -> list[tuple[str, str]]:
    """The (label, meaning) of each spot note that ``notes`` shows, in SPOT_NOTE_MEANINGS order: what a face says
    once under a table of offerings."""
    shown = set(", ".join(notes.astype(str)).split(", "))
    return [(label, meaning) for label, meaning in SPOT_NOTE_MEANINGS.items() if label in shown]


def stale_prices(as_of: pd.Series, now: datetime | None = None) -> npt.NDArray[np.bool_]:
    """Which ``as_of`` stamps are older than STALE_AFTER_DAYS."""
    result: npt.NDArray[np.bool_] = price_age_days(as_of, now) > STALE_AFTER_DAYS
    return result


def price_age_days(as_of: pd.Series, now: datetime | None = None) -> npt.NDArray[np.float64]:
    """Days since each ``as_of`` stamp (NaN where there is none); each distinct stamp is parsed once."""
    import numpy as np
    import pandas as pd

    moment = now or datetime.now(UTC)
    codes, stamps = pd.factorize(as_of)
    days = np.array([age_hours(str(stamp), moment) / 24 for stamp in stamps] + [np.nan], dtype=float)
    result: npt.NDArray[np.float64] = days[codes]
    return result


def age_hours(as_of: str, now: datetime) -> float:
    """Hours between an ISO 8601 ``as_of`` (UTC when it has no zone) and ``now``."""
    taken = datetime.fromisoformat(as_of)
    if taken.tzinfo is None:
        taken = taken.replace(tzinfo=UTC)
    return (now - taken).total_seconds() / 3600.0


def collapse_zones(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (provider, instance type, region): the standard zone with the cheapest spot price stands for it
    (a Local Zone only where the region has no other row: it must be opted into, so it is not the region's price)."""
    import numpy as np
    import pandas as pd

    if frame.empty:
        return frame
    # Ordered on the key arrays (lexsort is stable and puts NaN last), deduplicated in one pass, and the whole frame
    # taken once at the end: each frame-wide pandas step costs about a millisecond whatever the row count.
    order = np.lexsort(
        (
            frame["price_usd_per_hour"].to_numpy(dtype=np.float64, na_value=np.nan),
            frame["spot_price_usd_per_hour"].to_numpy(dtype=np.float64, na_value=np.nan),
            local_zones(frame["zone"]),
        )
    )
    key = np.zeros(len(frame), dtype=np.int64)
    for column in ("provider", "instance_type", "region"):
        codes, uniques = pd.factorize(frame[column])
        key = key * (len(uniques) + 1) + codes
    # The first row of each offering in that order is the one kept.
    _, first = np.unique(key[order], return_index=True)
    return frame.take(np.sort(order[first]))


def filter_offers(
    frame: pd.DataFrame, spec: OfferFilter, now: datetime | None = None
) -> tuple[pd.DataFrame, list[str]]:
    """``select_offers``, then zones collapsed (unless ``by_zone``), price per GPU added and sorted by ``sort``;
    ``now`` is the moment prices are judged stale at (default: now)."""
    selection = select_offers(frame, spec)
    result = selection.offers
    if not spec.by_zone:
        result = collapse_zones(result)
    result = with_derived(result, now)
    column, ascending = SORT_KEYS[spec.sort]
    if spec.spot and spec.sort == "price":
        column = "spot_price_usd_per_hour"
    elif spec.spot and spec.sort == "price-per-gpu":
        column = "spot_price_per_gpu_usd_per_hour"
    return result.take(_order(result, column, ascending)).reset_index(drop=True), selection.notes


def _order(frame: pd.DataFrame, column: str, ascending: bool) -> npt.NDArray[np.intp]:
    """The row order of ``frame`` by ``column`` (missing values last), then provider, region, instance type and zone:
    one lexsort over key arrays (pandas' multi-key sort over Arrow strings costs several times the query)."""
    import numpy as np
    import pandas as pd

    def ranks(name: str) -> npt.NDArray[np.float64]:
        # A number as it is; a text as its rank among the column's values; missing as NaN, which lexsort puts last.
        if pd.api.types.is_numeric_dtype(frame[name]):
            return frame[name].to_numpy(dtype=np.float64, na_value=np.nan)
        codes, _ = pd.factorize(frame[name], sort=True)
        return np.where(codes < 0, np.nan, codes.astype(np.float64))

    keys = [ranks(name) for name in ("zone", "instance_type", "region", "provider")]
    first = ranks(column)
    # np.lexsort sorts by its last key first; a descending order negates (NaN stays last).
    order: npt.NDArray[np.intp] = np.lexsort((*keys, first if ascending else -first))
    return order
