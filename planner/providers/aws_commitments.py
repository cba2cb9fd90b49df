"""AWS commitment prices from the public Price List: Reserved Instances and Savings Plans.

Reserved Instances are the ``terms.Reserved`` entries of a region's EC2 offer file, keyed by the same product SKU
as the on-demand price. Each term says ``LeaseContractLength`` (1yr, 3yr), ``OfferingClass`` (standard,
convertible: only standard is kept) and ``PurchaseOption`` (No/Partial/All Upfront); its price dimensions are an
``Upfront Fee`` (unit Quantity) and an hourly rate (unit Hrs).

Savings Plans have their own offer files (``/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/
region_index.json``, then one file per region): ``products`` name each plan (productFamily ComputeSavingsPlans or
EC2InstanceSavingsPlans, purchaseOption, purchaseTerm) and ``terms.savingsPlan`` list, per plan, the rate it
charges for each usage type it covers (``discountedUsageType`` "USE1-BoxUsage:p5.48xlarge", ``discountedOperation``
"RunInstances" for Linux). That rate is per hour of use, whatever the payment: a plan paid all upfront is stored as
its rate times the term's hours up front, a partial one as half of it up front and half by the hour (AWS asks at
least half up front), so every payment costs its rate per hour of the term.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, Any

from planner.catalog.commitments import HOURS_PER_YEAR
from planner.catalog.validate import Rejected
from planner.providers.base import rejected, require

SAVINGS_PLAN_INDEX_PATH = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json"
PAYMENTS = {"No Upfront": "no-upfront", "Partial Upfront": "partial-upfront", "All Upfront": "all-upfront"}
LEASES = {"1yr": 1, "3yr": 3}
PLAN_FAMILIES = {"ComputeSavingsPlans": "savings-plan-compute", "EC2InstanceSavingsPlans": "savings-plan-ec2"}
# Linux on shared tenancy: the operation of the on-demand list price the catalog holds.
LINUX_OPERATION = "RunInstances"


def _usd(text: Any) -> float | None:
    try:
        value = float(str(text))
    except ValueError:
        return None
    return value if value >= 0 else None


def reserved_commitments(
    instance_type: str, region: str, reserved_terms: Mapping[str, Any], source: str, as_of: str
) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """The standard Reserved Instance prices of one product (its ``terms.Reserved`` entry); a term with a bad field
    is rejected with that field named and the others are kept."""
    rows, bad = [], []
    for term in reserved_terms.values():
        if not isinstance(term, Mapping):
            continue
        attributes = term.get("termAttributes") or {}
        if str(attributes.get("OfferingClass", "")).lower() != "standard":
            continue  # convertible reservations are not priced here
        years = LEASES.get(str(attributes.get("LeaseContractLength", "")).replace(" ", ""))
        payment = PAYMENTS.get(str(attributes.get("PurchaseOption", "")))
        what = f"{attributes.get('LeaseContractLength')} {attributes.get('PurchaseOption')}"
        if years is None or payment is None:
            field = "LeaseContractLength" if years is None else "PurchaseOption"
            bad.append(rejected("aws", instance_type, region, f"reserved {what}: unknown {field}"))
            continue
        upfront = hourly = 0.0
        reason = None
        for dimension in (term.get("priceDimensions") or {}).values():
            price = _usd((dimension.get("pricePerUnit") or {}).get("USD"))
            unit = dimension.get("unit")
            if price is None or unit not in ("Quantity", "Hrs"):
                reason = (
                    f"reserved {what}: unreadable {unit} price {(dimension.get('pricePerUnit') or {}).get('USD')!r}"
                )
                break
            if unit == "Quantity":
                upfront += price
            else:
                hourly += price
        if reason is not None:
            bad.append(rejected("aws", instance_type, region, reason))
            continue
        rows.append(_row(instance_type, region, "reserved-standard", years, payment, upfront, hourly, source, as_of))
    return rows, bad


def _row(
    instance_type: str,
    region: str,
    kind: str,
    years: int,
    payment: str,
    upfront: float,
    hourly: float,
    source: str,
    as_of: str,
) -> dict[str, Any]:
    return {
        "provider": "aws",
        "instance_type": instance_type,
        "region": region,
        "commitment": kind,
        "term_years": years,
        "payment": payment,
        "upfront_usd": round(upfront, 6),
        "hourly_usd_per_hour": round(hourly, 6),
        "price_source": source,
        "as_of": as_of,
    }


def plan_prices(rate: float, years: int, payment: str) -> tuple[float, float]:
    """(upfront fee, hourly rate) of a Savings Plan rate per hour of use, by payment option (see the module doc)."""
    hours = years * HOURS_PER_YEAR
    if payment == "all-upfront":
        return rate * hours, 0.0
    if payment == "partial-upfront":
        return rate * hours / 2, rate / 2
    return 0.0, rate


def read_savings_plans(
    body: IO[bytes], region: str, instance_types: Iterable[str], source: str, as_of: str
) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """Stream one region's Savings Plans offer file: the Linux rates of ``instance_types`` in ``region``."""
    ijson = require("ijson", "aws")
    wanted = set(instance_types)
    plans: dict[str, tuple[str, int, str]] = {}  # plan SKU -> kind, years, payment
    rows: list[dict[str, Any]] = []
    bad: list[Rejected] = []
    for prefix, value in _entries(ijson, body):
        if prefix == "products.item":
            attributes = value.get("attributes") or {}
            kind = PLAN_FAMILIES.get(str(value.get("productFamily")))
            years = LEASES.get(str(attributes.get("purchaseTerm", "")).replace(" ", ""))
            payment = PAYMENTS.get(str(attributes.get("purchaseOption", "")))
            if kind is not None and years is not None and payment is not None:
                plans[str(value.get("sku"))] = (kind, years, payment)
            continue
        plan = plans.get(str(value.get("sku")))
        if plan is None:
            continue
        kind, years, payment = plan
        for rate in value.get("rates") or []:
            usage = str(rate.get("discountedUsageType") or "")
            name = usage.rpartition(":")[2]
            if "BoxUsage" not in usage or name not in wanted or rate.get("discountedOperation") != LINUX_OPERATION:
                continue
            if str(rate.get("discountedRegionCode") or region) != region:
                continue  # a Local Zone's rate
            price = _usd((rate.get("discountedRate") or {}).get("price"))
            if price is None:
                why = f"{kind} {years}yr {payment}: unreadable discountedRate {rate.get('discountedRate')!r}"
                bad.append(rejected("aws", name, region, why))
                continue
            upfront, hourly = plan_prices(price, years, payment)
            rows.append(_row(name, region, kind, years, payment, upfront, hourly, source, as_of))
    return rows, bad


def _entries(ijson: Any, body: IO[bytes], chunk_bytes: int = 1 << 16) -> Iterable[tuple[str, Any]]:
    """Each product and each plan term of the file as it is read, through two incremental parsers over the same
    bytes (AWS writes the products first, so every plan is known before its rates)."""
    products: list[Any] = ijson.sendable_list()
    terms: list[Any] = ijson.sendable_list()
    parsers = (ijson.items_coro(products, "products.item"), ijson.items_coro(terms, "terms.savingsPlan.item"))
    while True:
        chunk = body.read(chunk_bytes)
        for parser in parsers:
            if chunk:
                parser.send(chunk)
            else:
                parser.close()
        for prefix, found in (("products.item", products), ("terms.savingsPlan.item", terms)):
            for value in found:
                if isinstance(value, Mapping):
                    yield prefix, value
            del found[:]
        if not chunk:
            return


def savings_plan_urls(index: Mapping[str, Any], base_url: str) -> dict[str, str]:
    """Region code -> absolute URL of its Savings Plans offer file; the index lists ``regions`` as an array of
    ``{regionCode, versionUrl}`` (the EC2 index is an object keyed by region)."""
    from urllib.parse import urljoin

    entries = index.get("regions")
    if not isinstance(entries, list):
        raise ValueError("the Savings Plans region index has no 'regions' list")
    return {
        str(entry["regionCode"]): urljoin(base_url, str(entry["versionUrl"]))
        for entry in entries
        if isinstance(entry, Mapping) and entry.get("regionCode") and entry.get("versionUrl")
    }
