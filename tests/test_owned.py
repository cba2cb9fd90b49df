"""Owned servers (owned.toml): priced per hour by hand-checkable arithmetic, ranked beside the clouds with the same
performance model, bad values one line naming the key, and the break-even utilisation against renting."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from conftest import CliRun
from cost.fakes import FakeEstimator
from factories import make_offer, write_catalog
from hypothesis import given
from hypothesis import strategies as st

import planner
from planner.catalog.owned import OwnedServer, example_servers, parse_servers
from planner.cost.owned import (
    HOURS_PER_YEAR,
    break_even_utilisation,
    buy_or_rent_table,
    hourly_at,
    hourly_cost,
    server_power_kw,
)
from planner.errors import InputError

# 8 x H100 SXM behind NVSwitch, the same hardware as the catalog's p5.48xlarge, with round numbers.
SERVER = """[[server]]
name = "lab-h100"
gpu = "h100 sxm"
gpus = 8
interconnect = "NVSwitch"
purchase_usd = 100000
write_off_years = 5
operations_usd_per_year = 8760
utilisation = 0.5
power_usd_per_kwh = 0.1
pue = 1.5
power_kw = 5.0
"""


def _owned(isolated_store: Path, text: str = SERVER) -> Path:
    # conftest points GPUPLAN_OWNED_FILE here.
    path = isolated_store / "owned.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _server(**overrides: object) -> OwnedServer:
    values: dict[str, object] = {
        "name": "s",
        "gpu": "H100-SXM",
        "gpus": 8,
        "interconnect": "nvswitch",
        "purchase_usd": 100_000.0,
        "write_off_years": 5.0,
        "operations_usd_per_year": 8_760.0,
        "utilisation": 0.5,
        "power_usd_per_kwh": 0.1,
        "pue": 1.5,
        "power_kw": 5.0,
    }
    values.update(overrides)
    return OwnedServer(**values)  # type: ignore[arg-type]


def test_golden_hourly_price_by_hand() -> None:
    hourly = hourly_cost(_server(power_kw=2.0))
    # $100,000 over 5 x 8,760 h = $2.2831/h, at 50% utilisation $4.5662 per hour of use; $8,760 a year of operations
    # is $1/h, $2 per hour of use; 2 kW x PUE 1.5 x $0.10/kWh = $0.30/h.
    assert hourly.capital_usd_per_hour == pytest.approx(100_000 / 43_800 / 0.5)
    assert hourly.capital_usd_per_hour == pytest.approx(4.566210046)
    assert hourly.operations_usd_per_hour == pytest.approx(2.0)
    assert hourly.electricity_usd_per_hour == pytest.approx(0.3)
    assert hourly.total_usd_per_hour == pytest.approx(6.866210046)
    assert hourly.power_stated


def test_golden_power_from_the_gpus_tdp_and_the_fitted_node_factor() -> None:
    # data/node_power.csv's eight measured nodes over their GPUs' TDP: median of 1.2000 and 1.2038 = 1.201875;
    # 8 x 700 W x 1.201875 = 6.7305 kW.
    power, stated = server_power_kw(_server(power_kw=None))
    assert (power, stated) == (pytest.approx(6.7305), False)


def test_golden_the_bundled_dgx_h100_example() -> None:
    dgx = next(s for s in example_servers() if s.name == "example-dgx-h100")
    hourly = hourly_cost(dgx)
    # $199,000 / (4 x 8,760 h) / 0.6 = $9.4654; $39,800 / 8,760 h / 0.6 = $7.5723; 6.7305 kW x 1.58 x $0.0806 = $0.8571.
    assert hourly.capital_usd_per_hour == pytest.approx(9.465373, rel=1e-6)
    assert hourly.operations_usd_per_hour == pytest.approx(7.572298, rel=1e-6)
    assert hourly.electricity_usd_per_hour == pytest.approx(0.857116, rel=1e-5)
    assert hourly.total_usd_per_hour == pytest.approx(17.894787, rel=1e-6)


def test_every_bundled_example_cites_its_purchase_price_and_power() -> None:
    servers = example_servers()
    assert len(servers) == 3
    for server in servers:
        assert {"purchase_usd", "operations_usd_per_year", "power_kw", "power_usd_per_kwh", "pue"} <= set(
            server.sources
        ), server.name


@given(
    purchase=st.floats(1_000, 5_000_000),
    years=st.floats(1, 10),
    operations=st.floats(0, 500_000),
    rent=st.floats(0.5, 500),
    power_price=st.floats(0, 0.5),
)
def test_at_the_break_even_utilisation_owning_and_renting_cost_the_same(
    purchase: float, years: float, operations: float, rent: float, power_price: float
) -> None:
    server = _server(
        purchase_usd=purchase, write_off_years=years, operations_usd_per_year=operations, power_usd_per_kwh=power_price
    )
    level = break_even_utilisation(server, rent)
    if math.isinf(level):
        # The electricity alone costs the rent or more: no utilisation makes owning cheaper.
        assert hourly_cost(server).electricity_usd_per_hour >= rent
        return
    assert hourly_at(server, level) == pytest.approx(rent, rel=1e-9)
    # Above it owning is cheaper, below it renting.
    assert hourly_at(server, level * 1.01) < rent < hourly_at(server, level * 0.99)


def test_golden_break_even_by_hand() -> None:
    # Capital and operations at full use: $100,000 / 43,800 h + $1/h = $3.2831/h; against $20.26/h of rent less the
    # $0.75/h of electricity (5 kW x 1.5 x $0.10): 3.2831 / 19.51 = 16.8%.
    assert break_even_utilisation(_server(), 20.26) == pytest.approx((100_000 / 43_800 + 1) / 19.51)
    assert break_even_utilisation(_server(), 0.75) == math.inf


def test_buy_or_rent_finds_the_cheapest_on_demand_rental_of_the_same_gpus() -> None:
    catalog = pd.DataFrame(
        [
            make_offer(price_usd_per_hour=55.04),
            make_offer(provider="lambda", instance_type="gpu_8x_h100_sxm5", region="unknown", price_usd_per_hour=23.92),
            make_offer(provider="lambda", instance_type="gpu_1x_h100_sxm5", region="unknown", gpu_count=1.0,
                       price_usd_per_hour=2.0),
            make_offer(instance_type="p5.spot", price_usd_per_hour=None, availability="spot-only"),
        ]
    )  # fmt: skip
    row = buy_or_rent_table([_server()], catalog).iloc[0]
    # The 8-GPU instance, not 8 x the 1-GPU one; the break-even against it solves (3.2831/u + 0.75) = 23.92.
    assert (row["rent_provider"], row["rent_instance_type"], row["rent_usd_per_hour"]) == (
        "lambda",
        "gpu_8x_h100_sxm5",
        23.92,
    )
    assert row["break_even_utilisation"] == pytest.approx((100_000 / 43_800 + 1) / (23.92 - 0.75))
    assert row["cheaper_at_stated_utilisation"] == "owned"
    # Without an instance of as many GPUs: the cheapest per GPU-hour times the count, said so.
    row = buy_or_rent_table([_server(gpus=4)], catalog).iloc[0]
    assert row["rent_usd_per_hour"] == pytest.approx(8.0) and "per GPU-hour" in row["rent_basis"]


def test_an_owned_server_ranks_beside_the_same_cloud_hardware_with_the_same_estimate(isolated_store: Path) -> None:
    _owned(isolated_store)
    catalog = pd.DataFrame([make_offer(spot_price_usd_per_hour=None)])
    result = planner.rank("llama-3-8b", tokens=2.88e9, pricing="on-demand", catalog=catalog, estimator=FakeEstimator())
    table = result.table.set_index("provider")
    owned, cloud = table.loc["owned"], table.loc["aws"]
    # One model answer for both: 2.88e9 tokens at 8 x 10,000 tokens/s = 10 h, plus 0.25 h start-up.
    assert owned["time_to_solution_hours"] == cloud["time_to_solution_hours"] == pytest.approx(10.25)
    assert (owned["gpu"], owned["gpus_per_node"], owned["instance_type"]) == ("H100-SXM", 8, "lab-h100")
    assert owned["price_basis"] == "owned" and owned["region"] == "owned"
    # Energy: the stated 5 kW x 10 h at training load x PUE 1.5 = 75 kWh, billed at $0.10; the held hours (10.25,
    # billed by the second) at capital and operations, $6.5662/h: 10.25 x 6.5662 + 75 x 0.10 = $74.80.
    assert owned["energy_kwh"] == pytest.approx(75.0)
    fixed = 100_000 / 43_800 / 0.5 + 2.0
    assert owned["cost_usd"] == pytest.approx(10.25 * fixed + 7.5)
    assert owned["price_usd_per_hour"] == pytest.approx(fixed + 0.75)
    assert cloud["cost_usd"] == pytest.approx(10.25 * 55.04)
    assert int(owned["rank"]) == 1
    # The cost lines sum to the cost, the electricity a line of its own.
    lines = result.cost_lines(int(owned["rank"]))
    assert sum(line.cost_usd for line in lines) == pytest.approx(owned["cost_usd"])
    assert [line.quantity for line in lines if line.unit == "kWh"] == [pytest.approx(75.0)]
    # The assumptions say how it was priced, with the server's own inputs.
    assert any(line.startswith("owned lab-h100: 8 x H100-SXM (nvswitch); $100,000 over 5 years") for line in
               result.assumptions)  # fmt: skip
    assert any("owned servers (owned.toml) ranked beside the clouds: lab-h100" in note for note in result.notes)
    # The one-file HTML report carries them too.
    page = result.to_html()
    assert "owned lab-h100: 8 x H100-SXM" in page and "lab-h100" in page


def test_an_owned_server_is_never_joined_to_others(isolated_store: Path) -> None:
    _owned(isolated_store)
    catalog = pd.DataFrame([make_offer(spot_price_usd_per_hour=None)])
    result = planner.rank(
        "llama-3-8b", tokens=2.88e9, pricing="on-demand", max_nodes=2, catalog=catalog, estimator=FakeEstimator()
    )
    owned = result.table[result.table["provider"] == "owned"]
    assert list(owned["nodes"]) == [1]
    excluded = result.excluded[result.excluded["provider"] == "owned"]
    assert list(excluded["reason"]) == ["an owned server is ranked as one server, never joined to others"]


def test_owned_rows_in_compare_stand_beside_the_clouds_best(isolated_store: Path) -> None:
    _owned(isolated_store)
    catalog = pd.DataFrame([make_offer(spot_price_usd_per_hour=None)])
    result = planner.compare(
        "llama-3-8b", gpus="H100", tokens=2.88e9, pricing="on-demand", catalog=catalog, estimator=FakeEstimator()
    )
    assert list(zip(result.table["choice"], result.table["provider"], strict=True)) == [
        ("H100", "aws"),
        ("H100 (owned)", "owned"),
    ]


def test_without_an_owned_file_nothing_changes(isolated_store: Path) -> None:
    catalog = pd.DataFrame([make_offer()])
    result = planner.rank("llama-3-8b", tokens=2.88e9, catalog=catalog, estimator=FakeEstimator())
    assert "owned" not in set(result.table["provider"])
    assert not any("owned" in line for line in result.assumptions)


def test_owned_rows_in_every_face(isolated_store: Path, no_bundled_catalog: Path, cli: CliRun) -> None:
    write_catalog({"aws": [make_offer()]})
    _owned(isolated_store)
    code, out, err = cli("rank", "-w", "llama-3-8b", "--tokens", "2e9", "--pricing", "on-demand", "-f", "csv")
    assert code == 0, err
    rows = {r["provider"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["owned"]["price_basis"] == "owned" and rows["aws"]["price_basis"] == "list"
    code, out, err = cli("rank", "-w", "llama-3-8b", "--tokens", "2e9", "--provider", "owned", "-f", "json")
    assert code == 0, err
    report = json.loads(out)
    assert {o["provider"] for o in report["options"]} == {"owned"}
    assert any(line.startswith("owned lab-h100:") for line in report["assumptions"])
    code, out, err = cli("offers", "--provider", "owned", "-f", "json")
    assert code == 0, err
    assert [o["instance_type"] for o in json.loads(out)["offers"]] == ["lab-h100"]
    code, out, err = cli("owned", "-f", "csv")
    assert code == 0, err
    row = next(csv.DictReader(io.StringIO(out)))
    assert (row["server"], row["rent_instance_type"]) == ("lab-h100", "p5.48xlarge")
    assert float(row["break_even_utilisation"]) == pytest.approx((100_000 / 43_800 + 1) / (55.04 - 0.75))


def test_the_examples_are_shown_but_never_ranked(isolated_store: Path, no_bundled_catalog: Path, cli: CliRun) -> None:
    write_catalog({"aws": [make_offer()]})
    code, out, err = cli("owned", "--examples", "-f", "json")
    assert code == 0, err
    assert [r["server"] for r in json.loads(out)] == ["example-dgx-h100", "example-dgx-b200", "example-4x-rtx-4090"]
    code, out, err = cli("rank", "-w", "llama-3-8b", "--tokens", "2e9", "-f", "csv")
    assert code == 0 and "owned" not in {r["provider"] for r in csv.DictReader(io.StringIO(out))}


def _with(key: str, value: str) -> str:
    lines = [line for line in SERVER.splitlines() if not line.startswith(f"{key} =")]
    return "\n".join([*lines, f"{key} = {value}"]) + "\n" if value else "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_with("purchase_usd", "-5"), "owned.toml: server[1].purchase_usd must be a positive number, got -5"),
        (_with("utilisation", "0"), "owned.toml: server[1].utilisation must be a share above 0, got 0"),
        (_with("utilisation", "1.2"), "owned.toml: server[1].utilisation must be at most 1, got 1.2"),
        (_with("gpu", '"Z100"'), "owned.toml: server[1].gpu names an unknown GPU"),
        (_with("interconnect", '"infiniband"'), "owned.toml: server[1].interconnect must be one of nvswitch, nvlink"),
        (_with("pue", "0.9"), "owned.toml: server[1].pue must be at least 1"),
        (_with("power_usd_per_kwh", '"cheap"'), "owned.toml: server[1].power_usd_per_kwh must be a number"),
        (_with("gpus", "2.5"), "owned.toml: server[1].gpus must be a whole number"),
        (_with("write_off_years", ""), "owned.toml: server[1].write_off_years is missing"),
        (SERVER + "utilization = 0.5\n", "owned.toml: server[1].utilization is not a key of a server"),
        (SERVER + SERVER, "owned.toml: server[2].name 'lab-h100' is given twice"),
        ("[[servers]]\n", "owned.toml: [[servers]] is not a kind of entry"),
        ("[[server]\n", "owned.toml: is not valid TOML"),
    ],
)  # fmt: skip
def test_a_bad_owned_file_is_one_line_naming_the_key(
    isolated_store: Path, no_bundled_catalog: Path, cli: CliRun, text: str, message: str
) -> None:
    write_catalog({"aws": [make_offer()]})
    _owned(isolated_store, text)
    for command in (("offers",), ("rank", "-w", "llama-3-8b"), ("owned",)):
        code, out, err = cli(*command)
        assert (code, out) == (2, ""), err
        assert err.startswith(f"error: {message}"), err
        assert len(err.strip().splitlines()) == 1


def test_servers_parse_without_a_file() -> None:
    servers = parse_servers({"server": [{**_server().__dict__, "gpu": "H100", "sources": {}}]})
    # "H100" alone is read as the SXM part, the planner's default for the family.
    assert servers[0].gpu == "H100-SXM" and servers[0].power_kw == 5.0
    with pytest.raises(InputError, match=r"server\[1\]\.sources must be a table"):
        parse_servers({"server": [{**_server().__dict__, "sources": ["web"]}]})
    assert HOURS_PER_YEAR == 365 * 24
