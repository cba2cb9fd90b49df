"""`gpuplan catalog refresh` through the real CLI app: one line per provider, exit codes 0/3/1, JSON report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses
from conftest import CliRun
from typer.testing import CliRunner

from planner.cli.main import app
from providers.test_provider_azure import BASE, RetailPrices


@pytest.fixture
def no_cloud_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AZURE_SUBSCRIPTION_ID",
        "LAMBDA_API_KEY",
        "GOOGLE_API_KEY",
        "GPUPLAN_GCP_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    monkeypatch.setenv("GPUPLAN_AZURE_PRICES_URL", BASE)


@pytest.fixture
def prices_api() -> Iterator[None]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.GET, BASE, callback=RetailPrices())
        yield


def test_no_credentials_at_all_exits_1_with_one_line_per_provider(no_cloud_credentials: None) -> None:
    # (AWS needs none: without credentials it reads the public Price List, tested in test_provider_aws_public.)
    result = CliRunner().invoke(
        app, ["catalog", "refresh", "--provider", "gcp", "--provider", "lambda", "--no-progress"]
    )
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("gcp: not refreshed, kept the previous catalog: no Application Default Credentials")
    assert "gcloud auth application-default login" in lines[0]
    assert lines[1].startswith("lambda: not refreshed, kept the previous catalog: no credentials; set LAMBDA_API_KEY")
    assert result.stdout == ""


def test_partial_refresh_exits_3_and_prints_the_json_report(no_cloud_credentials: None, prices_api: None) -> None:
    result = CliRunner().invoke(
        app,
        [
            "catalog",
            "refresh",
            "-p",
            "lambda",
            "-p",
            "azure",
            "-r",
            "eastus",
            "-r",
            "us-east-1",
            "--format",
            "json",
            "--no-progress",
        ],
    )
    assert result.exit_code == 3, result.stderr
    payload = json.loads(result.stdout)
    by_name = {p["provider"]: p for p in payload["providers"]}
    assert by_name["lambda"]["error"].startswith("lambda: no credentials")
    assert by_name["azure"]["rows_written"] >= 1 and by_name["azure"]["regions"] == ["eastus"]
    assert any("specs came from the bundled table" in n for n in by_name["azure"]["notes"])
    assert payload["exit_code"] == 3
    status = CliRunner().invoke(app, ["catalog", "status", "--format", "json"])
    kinds = {row["provider"]: row["kind"] for row in json.loads(status.stdout)}
    assert kinds["azure"] == "live"


def test_unknown_provider_is_bad_input(cli: CliRun) -> None:
    code, _out, err = cli("catalog", "refresh", "--provider", "oracle")
    assert code == 2
    assert err == "error: --provider must be one of aws, gcp, azure, lambda, paperspace or all, got 'oracle'\n"


def test_a_time_limit_out_of_range_names_the_real_flag(cli: CliRun) -> None:
    """Issue 43: --time-limit 1e10 failed every provider and named a --time-limit-s flag that does not exist."""
    code, _out, err = cli("catalog", "refresh", "--time-limit", "1e10", "--no-progress")
    assert code == 2
    assert err == "error: --time-limit must be a number of seconds above 0 and up to 86400, got 1e+10\n"


def test_public_flag_refreshes_aws_from_the_public_files(
    no_cloud_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from providers.loopback import loopback
    from providers.test_provider_aws_public import serve_all

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # credentials present: --public still reads the public files
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with loopback() as server:
        serve_all(server, "us-east-1")
        monkeypatch.setenv("GPUPLAN_AWS_PRICE_LIST_URL", server.base_url)
        monkeypatch.setenv("GPUPLAN_AWS_SPOT_PRICES_URL", f"{server.base_url}/spot.js")
        monkeypatch.setenv("GPUPLAN_AWS_SPOT_ADVISOR_URL", f"{server.base_url}/spot-advisor-data.json")
        result = CliRunner().invoke(
            app, ["catalog", "refresh", "-p", "aws", "-r", "us-east-1", "--public", "--format", "json", "--no-progress"]
        )
    assert result.exit_code == 0, result.stderr
    aws = json.loads(result.stdout)["providers"][0]
    assert aws["rows_written"] == 2 and aws["regions"] == ["us-east-1"]
    assert result.stderr.startswith("aws: 2 offerings from 1/1 regions")
