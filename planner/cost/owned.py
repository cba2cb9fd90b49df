"""Owned servers priced per hour beside the clouds, and the utilisation at which owning beats renting.

Per hour of use (HOURS_PER_YEAR hours a year, the server doing paid work ``utilisation`` of them):

    capital     = purchase / (write-off years x HOURS_PER_YEAR) / utilisation
    operations  = operations per year / HOURS_PER_YEAR / utilisation
    electricity = wall power at training load x PUE x power price
    price per hour = capital + operations + electricity

A ranked run pays its held hours at capital + operations and its facility energy (the ranking's ``energy_kwh``, the
performance model's energy at this server's power and PUE) at the power price: the electricity is counted once, from
the run's own energy, not again in the hourly rate. Pure: the servers come from ``planner.catalog.owned``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.catalog.owned import OWNED, OWNED_FILE, OwnedServer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd

# A year of 365 days; the write-off and the yearly operations cost are spread over every hour of it.
HOURS_PER_YEAR = 8760.0
# Columns only owned rows carry (NaN on cloud rows): the power price a run's energy is billed at, the part of the
# hourly price that is electricity at training load, the server's PUE and its wall power.
ELECTRICITY_PRICE = "electricity_usd_per_kwh"
ELECTRICITY_HOURLY = "electricity_usd_per_hour"
FACILITY_PUE = "pue"
NODE_POWER = "node_power_kw"
OWNED_COLUMNS = (ELECTRICITY_PRICE, ELECTRICITY_HOURLY, FACILITY_PUE, NODE_POWER)


def owned_column(offers: pd.DataFrame, column: str) -> npt.NDArray[np.float64]:
    """One of OWNED_COLUMNS as numbers, 0 where missing (cloud rows) or where the catalog has no owned rows."""
    import numpy as np

    if column not in offers.columns:
        return np.zeros(len(offers))
    values: npt.NDArray[np.float64] = np.nan_to_num(offers[column].to_numpy(dtype=float, na_value=np.nan), nan=0.0)
    return values


def energy_cost_usd(kwh: npt.NDArray[np.float64], kwh_price: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The energy a run is billed for: kWh x the power price where a row has one (owned), 0 elsewhere; a cloud row's
    energy (NaN for a GPU without a TDP) never enters its cost, as its price includes the electricity."""
    import numpy as np

    result = np.zeros(len(kwh))
    billed = kwh_price > 0
    result[billed] = kwh[billed] * kwh_price[billed]
    return result


@dataclass(frozen=True)
class OwnedHourly:
    """One server's price per hour of use, in its named parts, and the power behind the electricity."""

    server: OwnedServer
    capital_usd_per_hour: float
    operations_usd_per_hour: float
    electricity_usd_per_hour: float
    power_kw: float
    power_stated: bool  # False: GPUs x TDP x the fitted node factor

    @property
    def fixed_usd_per_hour(self) -> float:
        """What an hour of use costs whatever it draws: capital and operations at the stated utilisation."""
        return self.capital_usd_per_hour + self.operations_usd_per_hour

    @property
    def total_usd_per_hour(self) -> float:
        return self.fixed_usd_per_hour + self.electricity_usd_per_hour


def server_power_kw(server: OwnedServer) -> tuple[float, bool]:
    """The server's wall power at training load, kW, and whether the file states it; else the GPUs' TDP x the node
    factor fitted on measured nodes (data/node_power.csv), the same figure the performance model's energy uses."""
    from planner.energy import node_energy_kwh, node_factor
    from planner.hardware import gpu_table

    if server.power_kw is not None:
        return server.power_kw, True
    modelled = node_energy_kwh(gpu_table()[server.gpu].tdp_w, server.gpus, 1.0, node_factor().expected)
    return float(modelled), False


def fixed_at_full_use_usd_per_hour(server: OwnedServer) -> float:
    """Capital and operations per hour of the year: what an hour costs at utilisation 1."""
    return server.purchase_usd / (server.write_off_years * HOURS_PER_YEAR) + (
        server.operations_usd_per_year / HOURS_PER_YEAR
    )


def hourly_cost(server: OwnedServer) -> OwnedHourly:
    """The server's price per hour of use at its stated utilisation, in parts."""
    power_kw, stated = server_power_kw(server)
    return OwnedHourly(
        server=server,
        capital_usd_per_hour=server.purchase_usd / (server.write_off_years * HOURS_PER_YEAR) / server.utilisation,
        operations_usd_per_hour=server.operations_usd_per_year / HOURS_PER_YEAR / server.utilisation,
        electricity_usd_per_hour=power_kw * server.pue * server.power_usd_per_kwh,
        power_kw=power_kw,
        power_stated=stated,
    )


def hourly_at(server: OwnedServer, utilisation: float) -> float:
    """The server's price per hour of use were it used ``utilisation`` of the year."""
    return fixed_at_full_use_usd_per_hour(server) / utilisation + hourly_cost(server).electricity_usd_per_hour


def break_even_utilisation(server: OwnedServer, rent_usd_per_hour: float) -> float:
    """The utilisation above which owning costs less per hour of use than renting at ``rent_usd_per_hour``: at it
    the two are equal. Above 1 when even full use does not beat the rent; inf when the electricity alone costs more.
    """
    margin = rent_usd_per_hour - hourly_cost(server).electricity_usd_per_hour
    if margin <= 0:
        return math.inf
    return fixed_at_full_use_usd_per_hour(server) / margin


def owned_note(hourly: OwnedHourly) -> str:
    """The option note of an owned server (a catalog flag: no ';'), its hourly parts in words."""
    server = hourly.server
    return (
        f"owned, {server.utilisation:.0%} utilisation: ${hourly.fixed_usd_per_hour:,.2f}/h capital and operations, "
        f"electricity at ${server.power_usd_per_kwh:g}/kWh of the run's energy (${hourly.electricity_usd_per_hour:,.2f}"
        f"/h at {hourly.power_kw:.2f} kW x PUE {server.pue:g})"
    )


def owned_offers(servers: list[OwnedServer], as_of: str) -> pd.DataFrame:
    """The servers as catalog rows (provider, region and price basis ``owned``), with OWNED_COLUMNS; priced at
    ``as_of`` (the moment the ranking judges prices at: the user's assumptions are as fresh as the question)."""
    import pandas as pd

    from planner.hardware import gpu_table

    records: list[dict[str, Any]] = []
    for server in servers:
        hourly = hourly_cost(server)
        records.append(
            {
                "provider": OWNED,
                "instance_type": server.name,
                "region": OWNED,
                "zone": "",
                "gpu": server.gpu,
                "gpu_count": float(server.gpus),
                "gpu_memory_gib": gpu_table()[server.gpu].memory_gib,
                "vcpus": math.nan,
                "ram_gib": math.nan,
                "interconnect": server.interconnect,
                # One server: never joined to others over a network the file does not state.
                "network_gbps": math.nan,
                "price_usd_per_hour": hourly.total_usd_per_hour,
                "spot_price_usd_per_hour": math.nan,
                "host_price_usd_per_hour": math.nan,
                "gpu_price_usd_per_hour": math.nan,
                "host_spot_price_usd_per_hour": math.nan,
                "gpu_spot_price_usd_per_hour": math.nan,
                "spot_interruption": None,
                "availability": "on-demand",
                "price_source": f"{OWNED_FILE}: your stated costs",
                "as_of": as_of,
                "available_now": "unknown",
                "available_checked_at": None,
                "flags": owned_note(hourly),
                "spot_as_of": None,
                "price_basis": OWNED,
                "spot_price_basis": OWNED,
                ELECTRICITY_PRICE: server.power_usd_per_kwh,
                ELECTRICITY_HOURLY: hourly.electricity_usd_per_hour,
                FACILITY_PUE: server.pue,
                NODE_POWER: hourly.power_kw,
            }
        )
    return pd.DataFrame.from_records(records)


def with_owned(frame: pd.DataFrame, servers: list[OwnedServer], as_of: str) -> pd.DataFrame:
    """``frame`` (a catalog) with the servers appended as offerings; unchanged without servers, or when it already
    holds owned rows (a frame passed back in: they are added once)."""
    import pandas as pd

    if not servers or (len(frame) and (frame["provider"] == OWNED).any()):
        return frame
    owned = owned_offers(servers, as_of)
    if frame.empty:
        return owned
    return pd.concat([frame, owned], ignore_index=True)


def assumption_lines(servers: list[OwnedServer]) -> list[str]:
    """The owned-server arithmetic in words, then each server's inputs and hourly parts."""
    from planner.energy import node_factor

    if not servers:
        return []
    lines = [
        f"owned servers ({OWNED_FILE}): price per hour of use = (purchase / (write-off years x {HOURS_PER_YEAR:,.0f} h)"
        f" + operations per year / {HOURS_PER_YEAR:,.0f} h) / utilisation + wall power x PUE x power price; a run pays "
        "its held hours at the capital and operations rate and its energy_kwh at the power price (electricity counted "
        "once); power not stated = GPUs x TDP x node factor "
        f"{node_factor().expected:.2f}; idle power, financing, resale value and storage are not counted; one server, "
        "never joined to others",
    ]
    for server in servers:
        hourly = hourly_cost(server)
        power = "stated" if hourly.power_stated else "GPUs x TDP x node factor"
        lines.append(
            f"owned {server.name}: {server.gpus} x {server.gpu} ({server.interconnect}); ${server.purchase_usd:,.0f} "
            f"over {server.write_off_years:g} years and ${server.operations_usd_per_year:,.0f} a year at "
            f"{server.utilisation:.0%} utilisation = ${hourly.capital_usd_per_hour:,.2f} capital + "
            f"${hourly.operations_usd_per_hour:,.2f} operations per hour; {hourly.power_kw:.2f} kW ({power}) x PUE "
            f"{server.pue:g} x ${server.power_usd_per_kwh:g}/kWh = ${hourly.electricity_usd_per_hour:,.2f} per hour at "
            f"training load; ${hourly.total_usd_per_hour:,.2f}/h in all"
        )
    return lines


# The columns of `buy_or_rent`, in order: the server's hourly parts, the cheapest on-demand rental of the same GPUs,
# and the utilisation above which owning costs less per hour of use.
BUY_OR_RENT_COLUMNS = (
    "server",
    "gpu",
    "gpus",
    "interconnect",
    "utilisation",
    "capital_usd_per_hour",
    "operations_usd_per_hour",
    "electricity_usd_per_hour",
    "power_kw",
    "power_basis",
    "owned_usd_per_hour",
    "rent_provider",
    "rent_instance_type",
    "rent_region",
    "rent_usd_per_hour",
    "rent_basis",
    "rent_price_basis",
    "break_even_utilisation",
    "cheaper_at_stated_utilisation",
)


def cheapest_rental(catalog: pd.DataFrame, server: OwnedServer) -> dict[str, Any] | None:
    """The cheapest on-demand cloud offering of the server's GPUs: an instance of as many of them, else the cheapest
    per GPU-hour times the server's count (said in ``rent_basis``); None when no cloud sells the GPU on demand."""
    import numpy as np

    from planner.catalog.schema import availability_allows

    if catalog.empty:
        return None
    price = catalog["price_usd_per_hour"].to_numpy(dtype=float, na_value=np.nan)
    sold = np.array([availability_allows(str(v), spot=False) for v in catalog["availability"].fillna("on-demand")])
    mine = catalog[(catalog["gpu"] == server.gpu).to_numpy() & (catalog["provider"] != OWNED).to_numpy() & sold
                   & (price > 0)]  # fmt: skip
    if mine.empty:
        return None
    same = mine[mine["gpu_count"].to_numpy(dtype=float) == server.gpus]
    if len(same):
        best = same.loc[same["price_usd_per_hour"].astype(float).idxmin()]
        rent, basis = float(best["price_usd_per_hour"]), f"an instance of {server.gpus} x {server.gpu}"
    else:
        per_gpu = mine["price_usd_per_hour"].astype(float) / mine["gpu_count"].astype(float)
        best = mine.loc[per_gpu.idxmin()]
        rent = float(per_gpu.min()) * server.gpus
        basis = f"{server.gpus} x the cheapest per GPU-hour ({best['gpu_count']:g}-GPU instance)"
    return {
        "rent_provider": str(best["provider"]),
        "rent_instance_type": str(best["instance_type"]),
        "rent_region": str(best["region"]),
        "rent_usd_per_hour": rent,
        "rent_basis": basis,
        "rent_price_basis": str(best["price_basis"]) if "price_basis" in best.index else "list",
    }


def buy_or_rent_table(servers: list[OwnedServer], catalog: pd.DataFrame) -> pd.DataFrame:
    """Per server (BUY_OR_RENT_COLUMNS): its price per hour of use in parts, the cheapest on-demand rental of the
    same GPUs in ``catalog`` and the break-even utilisation against it."""
    import pandas as pd

    records: list[dict[str, Any]] = []
    for server in servers:
        hourly = hourly_cost(server)
        rental = cheapest_rental(catalog, server)
        record: dict[str, Any] = {
            "server": server.name,
            "gpu": server.gpu,
            "gpus": server.gpus,
            "interconnect": server.interconnect,
            "utilisation": server.utilisation,
            "capital_usd_per_hour": hourly.capital_usd_per_hour,
            "operations_usd_per_hour": hourly.operations_usd_per_hour,
            "electricity_usd_per_hour": hourly.electricity_usd_per_hour,
            "power_kw": hourly.power_kw,
            "power_basis": "stated" if hourly.power_stated else "GPUs x TDP x node factor",
            "owned_usd_per_hour": hourly.total_usd_per_hour,
            **(rental or {"rent_basis": "no cloud sells this GPU on demand in the catalog"}),
        }
        if rental is not None:
            record["break_even_utilisation"] = break_even_utilisation(server, rental["rent_usd_per_hour"])
            owned_cheaper = hourly.total_usd_per_hour < rental["rent_usd_per_hour"]
            record["cheaper_at_stated_utilisation"] = OWNED if owned_cheaper else "rent"
        records.append(record)
    return pd.DataFrame.from_records(records, columns=list(BUY_OR_RENT_COLUMNS))
