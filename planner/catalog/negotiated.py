"""The user's negotiated prices: discounts and absolute rates from a TOML file, applied to the catalog's list prices.

The file is ``prices.toml`` in the platform's config directory, or ``$GPUPLAN_PRICES_FILE``::

    [[discount]]                 # percent off the list price
    provider = "aws"
    family = "p5"                # optional: an instance family (p5), or instance_type = "p5.48xlarge"
    percent = 20
    pricing = "on-demand"        # optional: on-demand (default), spot or both
    region = "us-east-1"         # optional

    [[rate]]                     # an absolute price per instance-hour
    provider = "lambda"
    instance_type = "gpu_8x_h100_sxm5"
    usd_per_hour = 20.0

Every price says its basis (``price_basis``, ``spot_price_basis``: "list" or "negotiated"). One entry sets a price,
never several: the most specific wins (a rate, then a discount of an instance type, of a family, of a provider; one
naming a region above one that does not), and among equals the later in the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.catalog.schema import PROVIDERS
from planner.catalog.user_files import read_toml, user_file
from planner.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

PRICES_ENV = "GPUPLAN_PRICES_FILE"
PRICES_FILE = "prices.toml"
LIST, NEGOTIATED = "list", "negotiated"
TERM_PRICINGS = ("on-demand", "spot", "both")
# Each kind of entry: its required keys, and every key it may have.
REQUIRED = {"discount": ("provider", "percent"), "rate": ("provider", "instance_type", "usd_per_hour")}
KEYS = {
    "discount": ("provider", "family", "instance_type", "region", "pricing", "percent"),
    "rate": ("provider", "instance_type", "region", "pricing", "usd_per_hour"),
}
# The price columns a term may set, by the pricing it names, and the basis column of each.
PRICE_COLUMNS = {"on-demand": ("price_usd_per_hour",), "spot": ("spot_price_usd_per_hour",)}
BASIS_COLUMNS = {"price_usd_per_hour": "price_basis", "spot_price_usd_per_hour": "spot_price_basis"}


@dataclass(frozen=True)
class PriceTerm:
    """One entry of the prices file: which offerings it covers and the price it gives them."""

    kind: str  # "discount" or "rate"
    number: int  # its position among the file's entries of its kind, from 1
    provider: str
    family: str | None = None
    instance_type: str | None = None
    region: str | None = None
    pricing: str = "on-demand"
    percent: float | None = None
    usd_per_hour: float | None = None

    @property
    def specificity(self) -> float:
        level = 4 if self.kind == "rate" else 3 if self.instance_type else 2 if self.family else 1
        return level + (0.5 if self.region else 0)

    def describe(self) -> str:
        what = " ".join(filter(None, [self.provider, self.family, self.instance_type, self.region]))
        price = f"{self.percent:g}% off" if self.kind == "discount" else f"${self.usd_per_hour:g}/h"
        return f"{what} {self.pricing}: {price}"


def prices_path() -> Path:
    """``$GPUPLAN_PRICES_FILE``, else ``prices.toml`` in the platform's per-user config directory."""
    return user_file(PRICES_ENV, PRICES_FILE)


def read_terms(path: Path | None = None) -> list[PriceTerm]:
    """The entries of the prices file (none when there is no file); a bad one is an InputError naming its key."""
    path = path or prices_path()
    document = read_toml(path)
    return [] if document is None else parse_terms(document, path.name)


def parse_terms(document: dict[str, Any], name: str = PRICES_FILE) -> list[PriceTerm]:
    """The entries of a parsed prices file, each checked; the first bad value is one line naming its key."""
    unknown = sorted(set(document) - set(KEYS))
    if unknown:
        raise InputError(f"{name}: [[{unknown[0]}]] is not a kind of entry; known: discount, rate")
    terms = []
    for kind in KEYS:
        entries = document.get(kind, [])
        if not isinstance(entries, list):
            raise InputError(f"{name}: {kind} must be a list of [[{kind}]] tables")
        terms += [_term(kind, number, entry, name) for number, entry in enumerate(entries, start=1)]
    return terms


def _term(kind: str, number: int, entry: Any, name: str) -> PriceTerm:
    where = f"{name}: {kind}[{number}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be a table of keys")
    for key in entry:
        if key not in KEYS[kind]:
            raise InputError(f"{where}.{key} is not a key of a {kind}; known: {', '.join(KEYS[kind])}")
    for key in REQUIRED[kind]:
        if key not in entry:
            raise InputError(f"{where}.{key} is missing")
    for key in ("provider", "family", "instance_type", "region", "pricing"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key].strip()):
            raise InputError(f"{where}.{key} must be a name, got {entry[key]!r:.40}")
    provider = entry["provider"].strip().lower()
    if provider not in PROVIDERS:
        raise InputError(f"{where}.provider must be one of {', '.join(PROVIDERS)}, got {entry['provider']!r:.40}")
    pricing = entry.get("pricing", "on-demand").strip().lower()
    if pricing not in TERM_PRICINGS:
        raise InputError(f"{where}.pricing must be one of {', '.join(TERM_PRICINGS)}, got {entry['pricing']!r:.40}")
    if kind == "discount" and "family" in entry and "instance_type" in entry:
        raise InputError(f"{where}.family and {where}.instance_type cannot both be given: name one")
    number_key = "percent" if kind == "discount" else "usd_per_hour"
    value = entry[number_key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InputError(f"{where}.{number_key} must be a number, got {value!r:.40}")
    if kind == "discount" and not 0 <= value <= 100:
        raise InputError(f"{where}.percent must be between 0 and 100, got {value:g}")
    if kind == "rate" and not 0 < value < float("inf"):
        raise InputError(f"{where}.usd_per_hour must be a positive number, got {value:g}")
    return PriceTerm(
        kind=kind,
        number=number,
        provider=provider,
        family=entry.get("family", "").strip() or None,
        instance_type=entry.get("instance_type", "").strip() or None,
        region=entry.get("region", "").strip() or None,
        pricing=pricing,
        percent=float(value) if kind == "discount" else None,
        usd_per_hour=float(value) if kind == "rate" else None,
    )


def family_of(provider: str, instance_type: str) -> str:
    """The instance family a discount names: the documented one (data/instance_families.csv), else the type's
    name before its first dot (p5.48xlarge: p5)."""
    from planner.catalog.families import family_facts

    facts = family_facts(provider, instance_type)
    return facts.family if facts is not None else instance_type.split(".")[0]


def apply_terms(frame: pd.DataFrame, terms: list[PriceTerm]) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with each price the terms cover replaced by the negotiated one and the basis columns added, and a
    note naming what changed (none without terms)."""
    import numpy as np

    priced = frame.assign(**dict.fromkeys(BASIS_COLUMNS.values(), LIST))
    if not terms or frame.empty:
        return priced, []
    provider = priced["provider"].astype(str).str.lower()
    instance = priced["instance_type"].astype(str).str.lower()
    region = priced["region"].astype(str).str.lower()
    families: pd.Series | None = None
    changed = np.zeros(len(priced), dtype=bool)
    used: list[str] = []
    # Least specific first: a more specific entry (or a later one of equal rank) overwrites.
    for term in sorted(terms, key=lambda t: t.specificity):
        mask = (provider == term.provider).to_numpy().copy()
        if term.instance_type:
            mask &= (instance == term.instance_type.lower()).to_numpy()
        if term.family:
            if families is None:
                families = priced["provider"].combine(priced["instance_type"], family_of).str.lower()
            mask &= (families == term.family.lower()).to_numpy()
        if term.region:
            mask &= (region == term.region.lower()).to_numpy()
        hit = False
        for pricing in ("on-demand", "spot") if term.pricing == "both" else (term.pricing,):
            for column in PRICE_COLUMNS[pricing]:
                listed = frame[column].to_numpy(dtype=float)
                rows = mask & ~np.isnan(listed)
                if not rows.any():
                    continue
                values = priced[column].to_numpy(dtype=float, copy=True)
                values[rows] = (
                    listed[rows] * (1 - term.percent / 100) if term.percent is not None else term.usd_per_hour
                )
                priced[column] = values
                priced.loc[rows, BASIS_COLUMNS[column]] = NEGOTIATED
                changed |= rows
                hit = True
        if hit:
            used.append(term.describe())
    if not used:
        return priced, [f"negotiated prices ({prices_path().name}): no entry matches an offering in the catalog"]
    return priced, [f"negotiated prices for {int(changed.sum())} offerings ({prices_path().name}): {'; '.join(used)}"]
