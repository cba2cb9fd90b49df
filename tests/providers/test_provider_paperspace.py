"""Paperspace (DigitalOcean GPU Droplets) adapter: the paginated Sizes API through `responses`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import responses
from factories import make_offer

from planner.catalog.store import CatalogStore
from planner.catalog.validate import validate_rows
from planner.errors import MissingCredentials, ProviderError
from planner.providers.paperspace import PaperspaceProvider
from planner.refresh import refresh
from providers.provider_fakes import DO_URL, NOW, ScriptedApi, do_answer, paperspace_provider


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def _serve(api: responses.RequestsMock, faults: list[object] | None = None) -> ScriptedApi:
    scripted = ScriptedApi(do_answer, faults)
    api.add_callback(responses.GET, re.compile(re.escape(DO_URL)), callback=scripted)
    return scripted


def test_follows_pages_and_builds_one_row_per_size_and_region(api: responses.RequestsMock) -> None:
    scripted = _serve(api)
    result = paperspace_provider().fetch()
    queries = [parse_qs(urlparse(str(c.url)).query) for c in scripted.calls]
    assert queries == [{"per_page": ["200"]}, {"page": ["2"], "per_page": ["3"]}]  # links.pages.next as given
    keys = {(r["instance_type"], r["region"]) for r in result.rows}
    assert keys == {
        ("gpu-h100x1-80gb", "nyc2"),
        ("gpu-h100x1-80gb", "tor1"),
        ("gpu-h100x8-640gb", "nyc2"),
        ("gpu-4000adax1-20gb", "tor1"),
    }
    assert result.regions == ["nyc2", "tor1"]  # CPU sizes and sizes with no row do not add regions
    tor = next(r for r in result.rows if r["instance_type"] == "gpu-h100x1-80gb" and r["region"] == "tor1")
    nyc = next(r for r in result.rows if r["instance_type"] == "gpu-h100x1-80gb" and r["region"] == "nyc2")
    # The -spot size is the spot price of the same size, where it is sold.
    assert (tor["price_usd_per_hour"], tor["spot_price_usd_per_hour"]) == (3.39, 1.99)
    assert nyc["spot_price_usd_per_hour"] is None
    assert (tor["gpu"], tor["vcpus"], tor["ram_gib"], tor["available_now"]) == ("H100-SXM", 20, 240.0, "unknown")
    eight = next(r for r in result.rows if r["instance_type"] == "gpu-h100x8-640gb")
    assert (eight["gpu_count"], eight["interconnect"], eight["network_gbps"]) == (8.0, "nvswitch", None)
    ada = next(r for r in result.rows if r["instance_type"] == "gpu-4000adax1-20gb")
    # No family row: the GPU comes from gpu_info through the resolver, and the link is assumed PCIe (flagged).
    assert (ada["gpu"], ada["interconnect"], ada["flags"]) == ("RTX-4000-Ada", "pcie", "interconnect_assumed")
    assert [(r.instance_type, r.reason) for r in result.rejected] == [
        ("gpu-mi350x1-288gb", "GPU 'mi350x' is not in the hardware table (data/gpus.csv)")
    ]
    assert result.notes == ["paperspace: not offered now (available=false): gpu-6000adax1-48gb"]
    assert validate_rows(result.rows).rejected == []
    assert {r["as_of"] for r in result.rows} == {NOW.isoformat(timespec="seconds")}


def test_regions_filter(api: responses.RequestsMock) -> None:
    _serve(api)
    result = paperspace_provider().fetch(["nyc2"])
    assert {r["region"] for r in result.rows} == {"nyc2"} and result.regions == ["nyc2"]


def test_throttling_is_retried_honouring_retry_after(api: responses.RequestsMock) -> None:
    scripted = _serve(api, faults=[(429, {"id": "too_many_requests", "message": "API Rate limit exceeded."})])
    assert paperspace_provider().fetch().rows
    assert len(scripted.calls) == 3  # the throttled call again, then page 2


def test_malformed_reply_fails_the_provider_and_keeps_its_catalog(api: responses.RequestsMock, tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "c.sqlite", seed=False)
    old = make_offer(provider="paperspace", instance_type="gpu-h100x1-80gb", region="nyc2", zone="")
    store.write_snapshot("paperspace", [old], source="old", as_of="2026-11-01T00:00:00+00:00")
    _serve(api, faults=[(200, {"id": "unexpected", "message": "no sizes here"})])
    report = refresh("paperspace", store=store, clients={"paperspace": paperspace_provider()})
    assert report["paperspace"].error == "paperspace: the sizes answer has no 'sizes' list"
    assert report.exit_code == 1
    assert [s.source for s in store.current_snapshots()] == ["old"]


def test_refused_token_and_missing_token(api: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch) -> None:
    _serve(api, faults=[(401, {"id": "Unauthorized", "message": "Unable to authenticate you"})])
    with pytest.raises(MissingCredentials, match="HTTP 401\\); set DIGITALOCEAN_TOKEN"):
        paperspace_provider().fetch()
    for name in ("DIGITALOCEAN_TOKEN", "DIGITALOCEAN_ACCESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingCredentials) as info:
        PaperspaceProvider.from_environment()
    assert str(info.value).startswith("paperspace: no credentials; set DIGITALOCEAN_TOKEN") and "\n" not in str(
        info.value
    )


def test_doctl_token_name_and_endpoint_override(api: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIGITALOCEAN_TOKEN", raising=False)
    monkeypatch.setenv("DIGITALOCEAN_ACCESS_TOKEN", "test-token")
    monkeypatch.setenv("GPUPLAN_DIGITALOCEAN_URL", DO_URL)
    scripted = _serve(api)
    assert PaperspaceProvider.from_environment(backoff_s=0.001).fetch().rows
    assert len(scripted.calls) == 2


def test_endless_pages_are_cut(api: responses.RequestsMock) -> None:
    def loop(request: object) -> tuple[int, dict[str, str], str]:
        import json

        return 200, {}, json.dumps({"sizes": [], "links": {"pages": {"next": DO_URL + "?page=9"}}})

    api.add_callback(responses.GET, re.compile(re.escape(DO_URL)), callback=loop)
    with pytest.raises(ProviderError, match="more than 50 pages"):
        paperspace_provider().fetch()


def test_a_size_listed_without_regions_keeps_the_known_ones_or_says_unknown(api: responses.RequestsMock) -> None:
    from providers.provider_fakes import load

    page = load("digitalocean_sizes_pages.json")["page1"]
    page["links"] = {}  # one page
    for size in page["sizes"]:
        if size["slug"] == "gpu-h100x8-640gb":
            size["regions"] = []
    _serve(api, faults=[(200, page), (200, page)])
    first = paperspace_provider().fetch()
    eight = [r for r in first.rows if r["instance_type"] == "gpu-h100x8-640gb"]
    assert [(r["region"], r["flags"]) for r in eight] == [("unknown", "region_unknown")]
    assert first.regions == ["nyc2", "tor1", "unknown"]
    previous = [make_offer(provider="paperspace", instance_type="gpu-h100x8-640gb", region="tor1", zone="")]
    second = paperspace_provider().fetch(previous=previous)
    assert {r["region"] for r in second.rows if r["instance_type"] == "gpu-h100x8-640gb"} == {"tor1"}
