"""The provider contract, walked for every registered provider, and refresh end to end on the real adapters."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from planner.catalog.schema import COLUMN_NAMES
from planner.catalog.store import CatalogStore
from planner.catalog.validate import validate_rows
from planner.errors import MissingExtra
from planner.providers import REGISTRY, provider_class, provider_names
from planner.providers.base import Provider
from planner.refresh import refresh
from providers import test_provider_aws as aws_tests
from providers.provider_fakes import (
    DO_URL,
    LAMBDA_URL,
    NOW,
    PricingEndpoint,
    ScriptedApi,
    StubbedAws,
    aws_provider,
    do_answer,
    gcp_provider,
    lambda_answer,
    lambda_provider,
    paperspace_provider,
)
from providers.test_provider_azure import BASE, RetailPrices, _known

REPO = Path(__file__).resolve().parents[2]
SDK_MODULES = {
    "aws": "boto3",
    "gcp": "google.cloud.compute_v1",
    "azure": "requests",
    "lambda": "requests",
    "paperspace": "requests",
}


def _aws() -> Provider:
    aws = StubbedAws(["us-east-1"], PricingEndpoint(aws_tests.PRICES))
    aws_tests._us_east_1(aws)
    provider: Provider = aws_provider(aws.factory)
    return provider


def _gcp() -> Provider:
    provider: Provider = gcp_provider()
    return provider


def _azure() -> Provider:
    from planner.providers.azure import AzureProvider

    return AzureProvider(requests.Session(), base_url=BASE, known_sizes=_known, backoff_s=0.001, now=lambda: NOW)


# Every registered provider needs an offline double here: a new provider without one fails the contract test.
DOUBLES: dict[str, Callable[[], Provider]] = {
    "aws": _aws,
    "gcp": _gcp,
    "azure": _azure,
    "lambda": lambda_provider,
    "paperspace": paperspace_provider,
}


@pytest.fixture
def prices_api() -> Iterator[None]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.GET, BASE, callback=RetailPrices())
        mock.add_callback(responses.GET, re.compile(re.escape(LAMBDA_URL)), callback=ScriptedApi(lambda_answer))
        mock.add_callback(responses.GET, re.compile(re.escape(DO_URL)), callback=ScriptedApi(do_answer))
        yield


def test_registry_names_every_provider_and_each_has_a_double() -> None:
    assert provider_names() == ("aws", "gcp", "azure", "lambda", "paperspace")
    assert set(DOUBLES) == set(REGISTRY)


@pytest.mark.parametrize("name", provider_names())
def test_class_contract(name: str) -> None:
    cls = provider_class(name)
    assert issubclass(cls, Provider) and cls.name == name
    assert cls.credentials_hint.startswith(f"{name}: ")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert cls.extra in extras


@pytest.mark.parametrize("name", provider_names())
def test_missing_sdk_is_missing_extra_with_the_pip_command(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, SDK_MODULES[name], None)
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", "")
    monkeypatch.setenv("LAMBDA_API_KEY", "k")  # the missing package is found before the missing key
    monkeypatch.setenv("DIGITALOCEAN_TOKEN", "t")
    with pytest.raises(MissingExtra, match=rf"-m pip install -e '.*\[{name}\]'"):
        provider_class(name).from_environment()


@pytest.mark.parametrize("name", provider_names())
def test_fetch_yields_valid_rows_of_the_stored_schema(name: str, prices_api: None) -> None:
    provider = DOUBLES[name]()
    result = provider.fetch(None if name != "aws" else ["us-east-1"])
    assert result.rows, f"{name} produced no rows"
    for row in result.rows:
        assert tuple(row) == COLUMN_NAMES
        assert row["provider"] == name
        assert row["price_source"].startswith(provider.source)
    checked = validate_rows(result.rows)
    assert checked.rejected == []
    for row in checked.accepted:
        assert row["price_usd_per_hour"] is None or row["price_usd_per_hour"] > 0
        assert type(row["gpu_count"]) is float


def test_refresh_end_to_end_on_all_real_adapters(tmp_path: Path, prices_api: None) -> None:
    store = CatalogStore(tmp_path / "catalog.sqlite", seed=False)
    clients = {name: build() for name, build in DOUBLES.items()}
    report = refresh(
        ["aws", "gcp", "azure"],
        regions=["us-east-1", "us-central1", "eastus", "westus2"],
        store=store,
        clients=clients,
    )
    assert report.exit_code == 0, report.summary()
    # Region codes of lambda and paperspace overlap aws and azure ones; refresh routes them once refresh.py knows
    # their patterns, so the GPU clouds are refreshed here over all their regions.
    gpu_clouds = refresh(["lambda", "paperspace"], store=store, clients=clients)
    assert gpu_clouds.exit_code == 0, gpu_clouds.summary()
    frame = store.read_current()
    assert set(frame["provider"]) == {"aws", "gcp", "azure", "lambda", "paperspace"}
    assert set(frame.loc[frame["provider"] == "lambda", "available_now"]) == {"true", "false"}
    assert set(frame.loc[frame["provider"] != "lambda", "available_now"]) == {"unknown"}
    assert {s.kind for s in store.current_snapshots()} == {"live"}
    gcp = frame[frame["provider"] == "gcp"]
    both = gcp.dropna(subset=["host_price_usd_per_hour"])
    assert not both.empty
    assert (
        abs(both["host_price_usd_per_hour"] + both["gpu_price_usd_per_hour"] - both["price_usd_per_hour"]) < 1e-6
    ).all()
    assert report["aws"].rejected and "g4ad.xlarge" in report.summary()


def test_importing_the_providers_imports_no_cloud_sdk() -> None:
    code = (
        "import sys, planner.providers, planner.providers.base, planner.refresh, planner.providers.aws, "
        "planner.providers.gcp, planner.providers.azure, planner.providers.lambda_cloud, planner.providers.paperspace, "
        "planner.providers.http, planner.providers.aws_public, planner.providers.gcp_public\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore', 'google', 'azure', 'requests', "
        "'tenacity', 'pandas', 'ijson')]\n"
        "print(','.join(sorted(loaded)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == ""


def test_sdk_loggers_stay_at_warning(tmp_path: Path) -> None:
    import logging

    logging.getLogger("botocore").setLevel(logging.DEBUG)
    refresh("aws", regions=["us-east-1"], store=tmp_path / "c.sqlite", clients={"aws": _Unused()})
    assert logging.getLogger("botocore").level == logging.WARNING


class _Unused(Provider):
    name = "aws"
    extra = "aws"
    credentials_hint = "aws: -"

    @classmethod
    def from_environment(cls, **options: Any) -> Provider:
        return cls()

    def fetch(self, regions: Any = None, *, progress: Any = None, previous: Any = ()) -> Any:
        from planner.providers.base import FetchResult

        return FetchResult(regions=list(regions or []))

    @property
    def source(self) -> str:
        return "unused"


def test_error_lines_never_carry_credentials() -> None:
    from planner.providers.base import describe_error

    line = describe_error(RuntimeError("denied: X-Amz-Security-Token=IQoJb3JpZ2luX2VjE secret=abc\nmore detail"))
    assert line == "RuntimeError: denied: X-Amz-Security-Token=*** secret=***"


def test_progress_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prices_api: None) -> None:
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    from planner.cli.refresh import RichProgress

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    with RichProgress() as bar:
        report = refresh(
            "azure",
            regions=["eastus", "westus2"],
            store=tmp_path / "c.sqlite",
            clients={"azure": _azure()},
            progress=bar,
        )
    assert report.exit_code == 0
    assert "azure" in screen.getvalue() and "2/2" in screen.getvalue()


def test_refresh_routes_the_region_codes_of_every_provider() -> None:
    # refresh.py picks the clouds a --region belongs to by pattern; a provider without one makes
    # `gpuplan catalog refresh --region X` fail with a KeyError.
    from planner.refresh import REGION_PATTERNS

    assert set(REGION_PATTERNS) == set(REGISTRY)
    samples = {"lambda": ("us-east-1", "europe-central-1"), "paperspace": ("nyc2", "tor1", "atl1")}
    for name, codes in samples.items():
        assert all(REGION_PATTERNS[name].match(code) for code in codes), name


@pytest.mark.parametrize("name", ["aws", "gcp"])
def test_no_account_adapters_keep_the_contract(name: str) -> None:
    """The public-file AWS adapter and the API-key Google one stand in for their provider: same contract."""
    from providers import test_provider_aws_public as aws_public
    from providers import test_provider_gcp_public as gcp_public
    from providers.loopback import loopback

    with loopback() as server:
        if name == "aws":
            aws_public.serve_all(server, "us-east-1")
            provider: Provider = aws_public.provider(server)
        else:
            server.serve(gcp_public.SKUS, gcp_public.catalog)
            provider = gcp_public.provider(server)
        result = provider.fetch(["us-east-1" if name == "aws" else "us-central1"])
    assert isinstance(provider, Provider) and provider.name == name and provider.extra == name
    assert provider.credentials_hint.startswith(f"{name}: ")
    assert result.rows
    for row in result.rows:
        assert tuple(row) == COLUMN_NAMES and row["provider"] == name
        assert row["price_source"].startswith(provider.source)
    assert validate_rows(result.rows).rejected == []
