"""Commitment prices: reserved instances, savings plans, committed-use discounts and reservations, beside the catalog.

A commitment is bought per instance type and region for a term of one or three years and paid for every hour of
the term, used or not. One row is one way of buying it: a kind (``COMMITMENT_KINDS``), a term, a payment option,
the fee paid up front and the rate paid per hour of the term, with its source and date. The table is kept apart
from the offerings (``planner.catalog.schema``): an offering has one on-demand and one spot price, but a dozen
commitment prices, and most offerings have none.

Bundled rows are ``data/catalog/commitments.csv`` (recorded in ``manifest.json`` under ``commitments``); they seed
the store with each provider's bundled snapshot. The catalog store keeps them in its ``commitments`` table, by
snapshot like the offerings: a live refresh stores its provider's rows with its offerings in one transaction, so they
follow the provider's current snapshot, keep their history and can be pinned; a refresh that read none keeps the
previous ones (``planner.catalog.store``).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from planner._data import data_dir
from planner.catalog.schema import PROVIDERS
from planner.catalog.validate import Rejected

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd

    from planner.catalog.store import CatalogStore

# Every kind of commitment the catalog holds, by provider (the words a user sees in price_basis and tables).
COMMITMENT_KINDS: dict[str, tuple[str, ...]] = {
    "aws": ("reserved-standard", "savings-plan-compute", "savings-plan-ec2"),
    "azure": ("reservation", "savings-plan"),
    "gcp": ("cud",),
}
PAYMENTS = ("no-upfront", "partial-upfront", "all-upfront")
TERMS_YEARS = (1, 3)
# The clouds bill a term as 365-day years (AWS's 3-year term is 26,280 hours; Azure's and Google's likewise).
HOURS_PER_YEAR = 8760.0


class Commitment(TypedDict):
    """One stored commitment price: what is bought, how it is paid and where the figure comes from."""

    provider: str
    instance_type: str
    region: str
    commitment: str
    term_years: int
    payment: str
    upfront_usd: float
    hourly_usd_per_hour: float
    price_source: str
    as_of: str


COMMITMENT_COLUMNS: tuple[str, ...] = tuple(Commitment.__annotations__)
COMMITMENT_KEY: tuple[str, ...] = ("provider", "instance_type", "region", "commitment", "term_years", "payment")
# How the store keeps each column that is not text (planner.catalog.backends makes the table from it).
COMMITMENT_KINDS_STORED: dict[str, str] = {
    "term_years": "integer",
    "upfront_usd": "real",
    "hourly_usd_per_hour": "real",
}


@dataclass(frozen=True)
class CommitmentReport:
    """Commitment rows that passed validation, and the ones that did not with their reasons."""

    accepted: list[Commitment]
    rejected: list[Rejected]


def _number(value: Any) -> float | None:
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) and result >= 0 else None


def _check(raw: Mapping[str, Any]) -> tuple[Commitment | None, str]:
    """The row normalised, or None and the first field at fault."""
    provider = str(raw.get("provider") or "")
    if provider not in PROVIDERS:
        return None, f"provider: {provider!r} is not one of {', '.join(PROVIDERS)}"
    for name in ("instance_type", "region", "price_source", "as_of"):
        if not str(raw.get(name) or "").strip():
            return None, f"{name}: missing"
    kind = str(raw.get("commitment") or "")
    if kind not in COMMITMENT_KINDS.get(provider, ()):
        return None, f"commitment: {kind!r} is not one of {', '.join(COMMITMENT_KINDS.get(provider, ()))}"
    term = _number(raw.get("term_years"))
    if term not in TERMS_YEARS:
        return None, f"term_years: {raw.get('term_years')!r} is not 1 or 3"
    payment = str(raw.get("payment") or "")
    if payment not in PAYMENTS:
        return None, f"payment: {payment!r} is not one of {', '.join(PAYMENTS)}"
    upfront, hourly = _number(raw.get("upfront_usd")), _number(raw.get("hourly_usd_per_hour"))
    if upfront is None:
        return None, f"upfront_usd: {raw.get('upfront_usd')!r} is not a price of zero or more"
    if hourly is None:
        return None, f"hourly_usd_per_hour: {raw.get('hourly_usd_per_hour')!r} is not a price of zero or more"
    # The payment option and the two parts must agree: no upfront has no fee, all upfront no hourly rate.
    if payment == "no-upfront" and upfront > 0:
        return None, "upfront_usd: a no-upfront commitment with an upfront fee"
    if payment == "all-upfront" and hourly > 0:
        return None, "hourly_usd_per_hour: an all-upfront commitment with an hourly rate"
    if upfront == 0 and hourly == 0:
        return None, "hourly_usd_per_hour: a commitment priced at zero"
    row = Commitment(
        provider=provider,
        instance_type=str(raw["instance_type"]).strip(),
        region=str(raw["region"]).strip(),
        commitment=kind,
        term_years=int(term),
        payment=payment,
        upfront_usd=upfront,
        hourly_usd_per_hour=hourly,
        price_source=str(raw["price_source"]).strip(),
        as_of=str(raw["as_of"]).strip(),
    )
    return row, ""


def validate_commitments(rows: Iterable[Mapping[str, Any]]) -> CommitmentReport:
    """Each row checked on its own: a bad one is rejected with the field at fault, the others are kept."""
    accepted: dict[tuple[Any, ...], Commitment] = {}
    rejected = []
    for raw in rows:
        row, reason = _check(raw)
        if row is None:
            provider, instance_type, region = (
                str(raw.get(name) or "?") for name in ("provider", "instance_type", "region")
            )
            rejected.append(Rejected(provider, instance_type, region, "", f"commitment {reason}"))
            continue
        # One price per key: a repeated key keeps the later row (a feed lists a term once per rate code).
        accepted[tuple(row[name] for name in COMMITMENT_KEY)] = row  # type: ignore[literal-required]
    return CommitmentReport(sorted(accepted.values(), key=_sort_key), rejected)


def _sort_key(row: Commitment) -> tuple[Any, ...]:
    return tuple(row[name] for name in COMMITMENT_KEY)  # type: ignore[literal-required]


def bundled_path() -> Path:
    return data_dir() / "catalog" / "commitments.csv"


def manifest_entry() -> dict[str, Any]:
    """The bundled commitments' entry of ``data/catalog/manifest.json``: file, source, as_of, rows and licence."""
    manifest = json.loads((data_dir() / "catalog" / "manifest.json").read_text(encoding="utf-8"))
    entry: dict[str, Any] = manifest.get("commitments", {})
    return entry


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def bundled_rows(provider: str | None = None) -> list[Commitment]:
    """The bundled commitment prices (of ``provider`` when given), validated; none when the bundle has no table."""
    path = bundled_path()
    rows = validate_commitments(read_csv(path)).accepted if path.is_file() else []
    return [row for row in rows if provider is None or row["provider"] == provider]


def commitments_frame(rows: Iterable[tuple[Any, ...]]) -> pd.DataFrame:
    """Stored commitment rows (``COMMITMENT_COLUMNS`` order) as a DataFrame with the columns' dtypes."""
    import pandas as pd

    frame = pd.DataFrame.from_records(list(rows), columns=list(COMMITMENT_COLUMNS))
    return frame.astype({"term_years": "int64", "upfront_usd": "float64", "hourly_usd_per_hour": "float64"})


def load_commitments(
    store: CatalogStore | Path | str | None = None,
    *,
    snapshot: int | str | Sequence[int | str] | None = None,
    as_of: str | datetime | None = None,
) -> pd.DataFrame:
    """Every commitment price of the store's current snapshots (bundled, or each provider's last live refresh), or
    of the snapshots pinned by ``snapshot`` ids or current at ``as_of`` (planner.catalog.pins). ``store``: a
    CatalogStore, a SQLite file or a ``postgresql://`` URL; by default the one the offerings are read from."""
    from planner.catalog.pins import pinned_snapshots
    from planner.catalog.store import CatalogStore

    opened = store if isinstance(store, CatalogStore) else CatalogStore(store)
    try:
        pinned = pinned_snapshots(opened, snapshot, as_of)
        return opened.read_commitments(None if pinned is None else [info.id for info in pinned[0]])
    finally:
        if opened is not store:
            opened.close()
