"""Azure commitment prices from the Retail Prices API: reservations and the savings plan.

Reservation items (``type`` Reservation, ``reservationTerm`` "1 Year" or "3 Years") price the whole term: their
``retailPrice`` is what the term costs, paid up front or in monthly instalments of the same total, so it is stored
as the term's fee. Pay-as-you-go items of api-version 2023-01-01-preview carry a ``savingsPlan`` array of
``{unitPrice, retailPrice, term}``: the hourly rate under a 1- or 3-year savings plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from planner.catalog.validate import Rejected
from planner.providers.base import rejected

# The api-version whose pay-as-you-go items carry the savingsPlan array.
API_VERSION = "2023-01-01-preview"
TERMS = {"1 Year": 1, "3 Years": 3}


def _price(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def _linux_vm(item: Mapping[str, Any]) -> bool:
    """A Linux VM meter: not Windows, Cloud Services, Spot or Low Priority (those have no commitment here)."""
    product = str(item.get("productName") or "")
    meter = f"{item.get('meterName') or ''} {item.get('skuName') or ''}".split()
    windows = "Windows" in product or product.endswith(" Win")
    return not windows and "CloudServices" not in product and "Spot" not in meter and "Priority" not in meter


def commitment_rows(
    items: Iterable[Mapping[str, Any]], sizes: Iterable[str], region: str, source: str, as_of: str
) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """The reservation and savings-plan prices of ``sizes`` in ``region`` (planner.catalog.commitments rows); an item
    or plan entry with a bad field is rejected with it named, the rest are kept. The latest effectiveStartDate wins."""
    wanted = set(sizes)
    ordered = sorted(items, key=lambda item: str(item.get("effectiveStartDate") or ""))
    rows: list[dict[str, Any]] = []
    bad: list[Rejected] = []
    for item in ordered:
        size = str(item.get("armSkuName") or "")
        if size not in wanted or str(item.get("armRegionName") or region) != region or not _linux_vm(item):
            continue
        if item.get("type") == "Reservation":
            term, price = TERMS.get(str(item.get("reservationTerm"))), _price(item.get("retailPrice"))
            if term is None or price is None:
                field = "reservationTerm" if term is None else "retailPrice"
                why = f"reservation: bad {field} {item.get(field)!r}"
                bad.append(rejected("azure", size, region, why))
                continue
            rows.append(_row(size, region, "reservation", term, "all-upfront", price, 0.0, source, as_of))
        elif item.get("type") == "Consumption":
            plans = item.get("savingsPlan") or []
            for plan in plans if isinstance(plans, list) else []:
                term = TERMS.get(str(plan.get("term"))) if isinstance(plan, Mapping) else None
                price = _price(plan.get("retailPrice", plan.get("unitPrice"))) if isinstance(plan, Mapping) else None
                if term is None or price is None:
                    why = f"savings plan: bad {'term' if term is None else 'retailPrice'} in {plan!r:.80}"
                    bad.append(rejected("azure", size, region, why))
                    continue
                rows.append(_row(size, region, "savings-plan", term, "no-upfront", 0.0, price, source, as_of))
    return rows, bad


def _row(
    size: str, region: str, kind: str, term: int, payment: str, upfront: float, hourly: float, source: str, as_of: str
) -> dict[str, Any]:
    return {
        "provider": "azure",
        "instance_type": size,
        "region": region,
        "commitment": kind,
        "term_years": term,
        "payment": payment,
        "upfront_usd": upfront,
        "hourly_usd_per_hour": hourly,
        "price_source": source,
        "as_of": as_of,
    }
