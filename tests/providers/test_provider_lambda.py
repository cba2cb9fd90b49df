"""Lambda adapter: the instance-types API through `responses` (never the network), capacity as data."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import responses
from factories import make_offer

from planner.catalog.query import OfferFilter, filter_offers
from planner.catalog.store import CatalogStore
from planner.catalog.validate import validate_rows
from planner.errors import MissingCredentials, ProviderError
from planner.providers.lambda_cloud import LambdaProvider, gpu_from_description
from planner.refresh import refresh
from providers.provider_fakes import LAMBDA_KNOWN, LAMBDA_URL, NOW, ScriptedApi, lambda_answer, lambda_provider

CHECKED = NOW.isoformat(timespec="seconds")
CliRun = Callable[..., tuple[int, str, str]]


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def _serve(api: responses.RequestsMock, faults: list[object] | None = None) -> ScriptedApi:
    scripted = ScriptedApi(lambda_answer, faults)
    api.add_callback(responses.GET, re.compile(re.escape(LAMBDA_URL)), callback=scripted)
    return scripted


def _by(rows: list[dict[str, object]], instance_type: str, region: str) -> dict[str, object]:
    return next(r for r in rows if r["instance_type"] == instance_type and r["region"] == region)


def test_one_row_per_type_and_region_with_capacity_as_data(api: responses.RequestsMock) -> None:
    _serve(api)
    result = lambda_provider().fetch()
    assert result.regions == ["europe-central-1", "unknown", "us-east-1", "us-east-3", "us-west-1"]
    types = {r["instance_type"] for r in result.rows}
    # The CPU-only type is skipped; the unknown GPU is rejected with a reason, not dropped silently.
    assert types == {"gpu_8x_h100_sxm5", "gpu_1x_h100_pcie", "gpu_1x_a100", "gpu_1x_gh200", "gpu_1x_a10"}
    # Each type only where Lambda has capacity now or the catalog knew it: never in every region.
    assert {(r["instance_type"], r["region"]) for r in result.rows} == {
        ("gpu_8x_h100_sxm5", "us-east-3"),
        ("gpu_8x_h100_sxm5", "us-east-1"),  # known before, no capacity now
        ("gpu_1x_h100_pcie", "us-west-1"),
        ("gpu_1x_h100_pcie", "us-east-1"),
        ("gpu_1x_h100_pcie", "europe-central-1"),
        ("gpu_1x_gh200", "us-east-3"),
        ("gpu_1x_a10", "us-west-1"),
        ("gpu_1x_a100", "unknown"),  # no capacity and never seen anywhere: said so, not guessed
    }
    assert _by(result.rows, "gpu_1x_a100", "unknown")["flags"] == "region_unknown"
    assert [(r.instance_type, r.reason) for r in result.rejected] == [
        ("gpu_1x_mystery", "GPU 'Mystery (12 GB)' is not in the hardware table (data/gpus.csv)")
    ]
    h100 = _by(result.rows, "gpu_8x_h100_sxm5", "us-east-3")
    assert (h100["gpu"], h100["gpu_count"], h100["price_usd_per_hour"]) == ("H100-SXM", 8.0, 23.92)
    assert (h100["interconnect"], h100["network_gbps"]) == ("nvswitch", None)  # single node only
    assert (h100["available_now"], h100["available_checked_at"], h100["as_of"]) == ("true", CHECKED, CHECKED)
    assert _by(result.rows, "gpu_8x_h100_sxm5", "us-east-1")["available_now"] == "false"
    # The API's description names the variant the type name hides.
    assert _by(result.rows, "gpu_1x_a100", "unknown")["gpu"] == "A100-PCIe-40GB"
    assert {r["available_now"] for r in result.rows if r["instance_type"] == "gpu_1x_a100"} == {"false"}
    assert validate_rows(result.rows).rejected == []
    assert result.notes == [
        f"lambda: 4 of 5 GPU instance types had capacity in the asked regions at {CHECKED}; 1 CPU-only types skipped"
    ]


def test_regions_come_from_the_current_catalog_and_the_capacity_lists(api: responses.RequestsMock) -> None:
    _serve(api)
    previous = [
        make_offer(provider="lambda", instance_type="gpu_1x_a10", region="asia-south-1"),
        make_offer(provider="lambda", instance_type="gpu_1x_a100", region="unknown"),
    ]
    result = lambda_provider().fetch(previous=previous)
    # A region with capacity now (us-west-1) is added to the one the catalog knows, for that type only.
    assert result.regions == ["asia-south-1", "unknown", "us-east-1", "us-east-3", "us-west-1"]
    assert {r["region"] for r in result.rows if r["instance_type"] == "gpu_1x_a10"} == {"asia-south-1", "us-west-1"}
    assert {r["region"] for r in result.rows if r["instance_type"] == "gpu_8x_h100_sxm5"} == {"us-east-3"}
    assert {r["region"] for r in result.rows if r["instance_type"] == "gpu_1x_a100"} == {"unknown"}
    asked = lambda_provider().fetch(["us-west-1"])
    assert {r["region"] for r in asked.rows} == {"us-west-1"} and asked.regions == ["us-west-1"]


def test_a_type_found_with_capacity_leaves_region_unknown(api: responses.RequestsMock, tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "c.sqlite", seed=False)
    store.write_snapshot(
        "lambda",
        [
            make_offer(
                provider="lambda",
                instance_type="gpu_1x_gh200",
                gpu="GH200",
                gpu_memory_gib=96.0,
                price_usd_per_hour=1.49,  # Lambda's list price: the refresh's history gate passes it
                region="unknown",
                zone="",
            )
        ],
        source="bundled",
        as_of="2026-11-01T00:00:00+00:00",
    )
    _serve(api)
    report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
    assert report.exit_code == 0, report.summary()
    frame = store.read_current()
    assert set(frame[frame["instance_type"] == "gpu_1x_gh200"]["region"]) == {"us-east-3"}


def test_throttling_is_retried(api: responses.RequestsMock) -> None:
    scripted = _serve(api, faults=[(429, {"error": {"code": "global/too-many-requests"}}), (503, "busy")])
    result = lambda_provider().fetch()
    assert result.rows and len(scripted.calls) == 3


def test_timeouts_are_retried(api: responses.RequestsMock) -> None:
    scripted = _serve(api, faults=[requests.Timeout("read timed out")])
    assert lambda_provider().fetch().rows
    assert len(scripted.calls) == 2


def test_persistent_5xx_fails_with_one_line(api: responses.RequestsMock) -> None:
    _serve(api, faults=[(502, "bad gateway")] * 3)
    with pytest.raises(ProviderError, match=r"^lambda: HTTP 502 from lambda after retries$"):
        lambda_provider().fetch()


def test_refused_key_says_how_to_set_it(api: responses.RequestsMock) -> None:
    _serve(api, faults=[(401, {"error": {"code": "global/invalid-api-key", "message": "API key was invalid"}})])
    with pytest.raises(MissingCredentials, match="refused the token \\(HTTP 401\\); set LAMBDA_API_KEY"):
        lambda_provider().fetch()


def test_malformed_reply_fails_the_provider_and_keeps_its_catalog(api: responses.RequestsMock, tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "c.sqlite", seed=False)
    store.write_snapshot(
        "lambda", [make_offer(provider="lambda", region="us-east-1")], source="old", as_of="2026-11-01T00:00:00+00:00"
    )
    _serve(api, faults=[(200, {"error": {"message": "maintenance"}})])
    report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
    assert report["lambda"].error == "lambda: the instance-types answer has no 'data' object"
    assert [s.source for s in store.current_snapshots()] == ["old"]
    _serve(api, faults=[(200, "<html>oops</html>")])
    report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
    assert report["lambda"].error == "lambda: the API answered with something that is not JSON"


def test_a_malformed_entry_is_rejected_the_others_kept(api: responses.RequestsMock) -> None:
    from providers.provider_fakes import load

    payload = load("lambda_instance_types.json")
    payload["data"]["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"] = "75"
    _serve(api, faults=[(200, payload)])
    result = lambda_provider().fetch()
    assert "gpu_1x_a10" not in {r["instance_type"] for r in result.rows}
    assert any(r.instance_type == "gpu_1x_a10" and "price_cents_per_hour '75'" in r.reason for r in result.rejected)


def test_refresh_stores_capacity_and_offers_can_ask_for_it(api: responses.RequestsMock, tmp_path: Path) -> None:
    _serve(api)
    store = CatalogStore(tmp_path / "c.sqlite", seed=False)
    report = refresh("lambda", store=store, clients={"lambda": lambda_provider()})
    assert report.exit_code == 0, report.summary()
    frame = store.read_current()
    available, notes = filter_offers(frame, OfferFilter(available_only=True))
    assert set(zip(available["instance_type"], available["region"], strict=True)) == {
        ("gpu_8x_h100_sxm5", "us-east-3"),
        ("gpu_1x_h100_pcie", "us-west-1"),
        ("gpu_1x_h100_pcie", "us-east-1"),
        ("gpu_1x_gh200", "us-east-3"),
        ("gpu_1x_a10", "us-west-1"),
    }
    assert set(available["available_checked_at"]) == {CHECKED} and notes == []


def test_missing_key_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAMBDA_API_KEY", raising=False)
    with pytest.raises(MissingCredentials) as info:
        LambdaProvider.from_environment()
    assert str(info.value) == (
        "lambda: no credentials; set LAMBDA_API_KEY to an API key made on the API keys page of the Lambda Cloud dashboard"
    )


def test_endpoint_override_and_key_from_the_environment(
    api: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMBDA_API_KEY", "test-key")
    monkeypatch.setenv("GPUPLAN_LAMBDA_URL", LAMBDA_URL)
    scripted = _serve(api)
    provider = LambdaProvider.from_environment(known_regions=lambda: LAMBDA_KNOWN, backoff_s=0.001)
    assert provider.fetch().rows and len(scripted.calls) == 1


@pytest.mark.parametrize(
    ("description", "gpu"),
    [
        ("H100 (80 GB SXM5)", "H100-SXM"),
        ("H100 (80 GB PCIe)", "H100-PCIe"),
        ("A100 (40 GB SXM4)", "A100-40GB"),
        ("A100 (80 GB SXM4)", "A100-80GB"),
        ("Quadro RTX 6000 (24 GB)", "Quadro-RTX-6000"),
        ("RTX A6000 (48 GB)", "RTX-A6000"),
        ("Tesla V100 (16 GB)", "V100-16GB"),
        ("B200 (180 GB SXM6)", "B200"),
        ("GH200 (96 GB)", "GH200"),
        ("no parenthesis", None),
    ],
)
def test_gpu_descriptions_resolve(description: str, gpu: str | None) -> None:
    assert gpu_from_description(description) == gpu


def test_offers_available_only_on_the_cli(cli: CliRun, no_bundled_catalog: Path) -> None:
    import json

    checked = "2026-11-20T06:00:00+00:00"
    with CatalogStore(seed=False) as store:
        store.write_snapshot("aws", [make_offer()], source="fixture", as_of=checked)
        lam = {"provider": "lambda", "instance_type": "gpu_8x_h100_sxm5", "zone": "", "available_checked_at": checked}
        store.write_snapshot(
            "lambda",
            [
                make_offer(**lam, region="us-east-3", available_now="true"),
                make_offer(**lam, region="us-east-1", available_now="false"),
            ],
            source="fixture",
            as_of=checked,
        )
    code, out, err = cli("offers", "--available-only", "--format", "json")
    assert code == 0
    assert [(r["provider"], r["region"], r["available_now"]) for r in json.loads(out)["offers"]] == [
        ("lambda", "us-east-3", "true")
    ]
    assert "warning: left out aws: no capacity figure (only lambda reports capacity on refresh)" in err
    # --quiet keeps it: a whole cloud left out changes the answer.
    code, _, quiet_err = cli("offers", "--available-only", "--format", "json", "--quiet")
    assert code == 0 and "warning: left out aws: no capacity figure" in quiet_err
    code, out, _ = cli("offers", "--available-only")
    assert code == 0 and "us-east-3" in out and "us-east-1 " not in out
    code, out, _ = cli("offers", "--format", "json")
    assert {r["available_now"] for r in json.loads(out)["offers"]} == {"true", "false", "unknown"}
