"""Commitment prices: reserved instances, savings plans, committed-use discounts and reservations, beside the catalog.

A commitment is bought per instance type and region for a term of one or three years and paid for every hour of
the term, used or not. One row is one way of buying it: a kind (``COMMITMENT_KINDS``), a term, a payment option,
the fee paid up front and the rate paid per hour of the term, with its source and date. The table is kept apart
from the offerings (``planner.catalog.schema``): an offering has one on-demand and one spot price, but a dozen
commitment prices, and most offerings have none.

Bundled rows are ``data/catalog/commitments.csv`` (recorded in ``manifest.json`` under ``commitments``); a live
refresh writes each provider's rows to ``commitments/<provider>.csv`` beside the catalog store, and those replace
the bundled rows of that provider. A failed or empty refresh leaves the file it would have replaced as it was.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from planner._data import data_dir
from planner.catalog.schema import PROVIDERS
from planner.catalog.validate import Rejected

if TYPE_CHECKING:
    import pandas as pd

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


def live_folder(store_path: Path | None) -> Path | None:
    """Where a live refresh keeps commitment prices for the SQLite store at ``store_path`` (None: no local store)."""
    return None if store_path is None else store_path.parent / "commitments"


def write_live(folder: Path, provider: str, rows: list[Commitment]) -> Path:
    """Replace ``provider``'s live commitment file atomically (a temporary file renamed over it); never empty."""
    if not rows:
        raise ValueError("an empty refresh never replaces commitment prices")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{provider}.csv"
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{provider}.", suffix=".csv")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=COMMITMENT_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def load_commitments(store_path: Path | None = None) -> pd.DataFrame:
    """Every commitment price: the bundled rows, with each provider's replaced by its live file where one exists."""
    import pandas as pd

    bundled = bundled_path()
    rows = validate_commitments(read_csv(bundled)).accepted if bundled.is_file() else []
    folder = live_folder(store_path)
    if folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.csv")):
            live = validate_commitments(read_csv(path)).accepted
            if live and path.stem in PROVIDERS:
                rows = [row for row in rows if row["provider"] != path.stem] + live
    frame = pd.DataFrame(rows, columns=list(COMMITMENT_COLUMNS))
    return frame.astype({"term_years": "int64", "upfront_usd": "float64", "hourly_usd_per_hour": "float64"})


def store_fetched(
    store_path: Path | None, provider: str, fetched: Iterable[Mapping[str, Any]], refreshed_regions: Iterable[str]
) -> tuple[int, list[Rejected]]:
    """Validate a refresh's commitment prices and make them ``provider``'s live ones; how many were stored and the
    rows rejected. Regions the refresh did not renew keep their previous rows; nothing is written when no fetched
    row is valid (a failed or empty read never erases the prices before it), nor without a local store."""
    report = validate_commitments(fetched)
    folder = live_folder(store_path)
    if not report.accepted or folder is None:
        return 0, report.rejected
    renewed = set(refreshed_regions)
    previous = load_commitments(store_path)
    kept = [
        Commitment(**record)  # type: ignore[typeddict-item]
        for record in previous[previous["provider"] == provider].to_dict("records")
        if record["region"] not in renewed
    ]
    write_live(folder, provider, validate_commitments([*kept, *report.accepted]).accepted)
    return len(report.accepted), report.rejected
