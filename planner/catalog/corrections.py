"""Known upstream quirks, corrected from a data table (``data/corrections.csv``), never from ``if`` chains.

Each correction names a provider, an instance type (a shell-style pattern), a region (``*`` for all), the
field to set and its value ('' means "missing"; field ``exclude`` drops the row with the reason), an optional
condition ``when`` (``field=value`` or ``field=@other_field``, tested on the row as it came in), a reason and
a source. The value ``in_gpu_price`` on a Google Cloud host-price field says that the GPU SKU prices the
whole VM (A4 bills only through its "(1 gpu slice)" SKU): the offering price is the GPU part alone. After
the table, two rules keep prices honest: a Google Cloud offering price is host + GPUs or missing, and an
offering without an on-demand price is not sold "on-demand".
"""

from __future__ import annotations

import csv
import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from planner._data import data_dir
from planner.catalog.schema import COLUMNS, RawOffer, settled_availability
from planner.catalog.validate import PRICE_PARTS, Rejected, offering_price, spot_level_flags

CORRECTIONS_FILE = "corrections.csv"
EXCLUDE = "exclude"
IN_GPU_PRICE = "in_gpu_price"
_KINDS = {column.name: column.kind for column in COLUMNS}
# (offering price, host part, GPU part): Google Cloud prices the host VM and the GPUs apart.


@dataclass(frozen=True)
class Correction:
    """One row of the corrections table."""

    provider: str
    instance_type: str  # fnmatch pattern
    region: str  # '*' for every region
    field: str
    value: str
    when: str
    reason: str
    source: str

    def matches(self, row: Mapping[str, Any], provider: str) -> bool:
        """Whether this correction applies to ``row`` (as it came in) of ``provider``."""
        if self.provider != provider or not fnmatch.fnmatchcase(str(row.get("instance_type", "")), self.instance_type):
            return False
        if self.region != "*" and self.region != row.get("region"):
            return False
        return _condition_holds(self.when, row)


def _missing(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _same(left: Any, right: Any) -> bool:
    """Equality of two cell values: both missing, equal numbers, or equal text."""
    if _missing(left) or _missing(right):
        return _missing(left) and _missing(right)
    try:
        return math.isclose(float(left), float(right), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        return str(left) == str(right)


def _condition_holds(when: str, row: Mapping[str, Any]) -> bool:
    if not when:
        return True
    name, _, expected = when.partition("=")
    if expected.startswith("@"):
        return not _missing(row.get(name)) and _same(row.get(name), row.get(expected[1:]))
    return _same(row.get(name), expected)


def _typed(field: str, value: str) -> Any:
    """The table's text value in the column's type; '' is missing."""
    if value == "":
        return None
    kind = _KINDS[field]
    if kind == "real":
        return float(value)
    if kind == "integer":
        return int(value)
    return value


@cache
def load_corrections() -> list[Correction]:
    """Every correction in ``data/corrections.csv``, in file order; a bad field name is an error."""
    corrections: list[Correction] = []
    with (data_dir() / CORRECTIONS_FILE).open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            field = row["field"]
            if field != EXCLUDE and field not in _KINDS:
                raise ValueError(f"{CORRECTIONS_FILE} line {line}: unknown field {field!r}")
            if row["value"] == IN_GPU_PRICE and field not in {host for _, host, _ in PRICE_PARTS}:
                raise ValueError(f"{CORRECTIONS_FILE} line {line}: {IN_GPU_PRICE!r} applies only to host price fields")
            condition = row["when"].partition("=")[0]
            if condition and condition not in _KINDS:
                raise ValueError(f"{CORRECTIONS_FILE} line {line}: unknown field {condition!r} in 'when'")
            corrections.append(
                Correction(
                    provider=row["provider"],
                    instance_type=row["instance_type"],
                    region=row["region"] or "*",
                    field=field,
                    value=row["value"],
                    when=row["when"],
                    reason=row["reason"],
                    source=row["source"],
                )
            )
    return corrections


def _add_flag(row: dict[str, Any], flag: str) -> None:
    flags = [f for f in str(row.get("flags") or "").split(";") if f]
    if flag not in flags:
        flags.append(flag)
    row["flags"] = ";".join(flags)


def _rejected(row: Mapping[str, Any], provider: str, reason: str) -> Rejected:
    return Rejected(
        provider,
        str(row.get("instance_type") or ""),
        str(row.get("region") or ""),
        str(row.get("zone") or ""),
        reason,
    )


def _fold_into_gpu_price(row: dict[str, Any], host_fields: list[str]) -> None:
    """Where the GPU SKU prices the whole VM, the offering price is the GPU part; the split is not kept."""
    for total, host, gpu in PRICE_PARTS:
        if host not in host_fields:
            continue
        row[total] = row.get(gpu)
        row[host] = row[gpu] = None
        _add_flag(row, f"corrected:{total}")
        _add_flag(row, "gpu_sku_prices_whole_vm")


def _derive_prices(row: dict[str, Any]) -> None:
    """Offering price = host + GPUs where the parts are kept apart; missing if either part is."""
    for total, host, gpu in PRICE_PARTS:
        if _missing(row.get(host)) and _missing(row.get(gpu)):
            continue
        summed = offering_price(row.get(host), row.get(gpu))
        if not _same(summed, row.get(total)):
            row[total] = summed
            _add_flag(row, f"corrected:{total}")


def _flag_spot_levels(row: dict[str, Any]) -> None:
    """Flag a spot price above on-demand in any part, or equal to it (the rule is validate.spot_level_flags)."""
    for flag in spot_level_flags(row):
        _add_flag(row, flag)


def _derive_availability(row: dict[str, Any]) -> None:
    """No on-demand price: the offering is spot-only if it has a spot price, else reservation-only (flagged)."""
    if not _missing(row.get("price_usd_per_hour")):
        return
    wanted = settled_availability(row.get("availability"), None, row.get("spot_price_usd_per_hour"))
    if row.get("availability") != wanted:
        row["availability"] = wanted
        _add_flag(row, "no_on_demand_price")


def apply_corrections(rows: Sequence[RawOffer], provider: str) -> tuple[list[RawOffer], list[Rejected]]:
    """Apply the corrections table to ``rows`` of ``provider`` (schema column names).

    Returns the corrected rows (new dicts; ``flags`` gains ``corrected:<field>``) and the excluded ones,
    each with the table's reason.
    """
    table = [c for c in load_corrections() if c.provider == provider]
    kept: list[RawOffer] = []
    excluded: list[Rejected] = []
    for original in rows:
        row = dict(original)
        matching = [c for c in table if c.matches(original, provider)]
        exclusion = next((c for c in matching if c.field == EXCLUDE), None)
        if exclusion is not None:
            excluded.append(_rejected(original, provider, f"excluded: {exclusion.reason}"))
            continue
        folds = []
        for correction in matching:
            if correction.value == IN_GPU_PRICE:
                folds.append(correction.field)
                continue
            row[correction.field] = _typed(correction.field, correction.value)
            _add_flag(row, f"corrected:{correction.field}")
        _fold_into_gpu_price(row, folds)
        _derive_prices(row)
        _flag_spot_levels(row)
        _derive_availability(row)
        kept.append(cast(RawOffer, row))
    return kept, excluded
