"""The shared HTTP client's edges (issue 43): the token goes only to the API's host over https, a name that does not
resolve fails at once, and an answer is read only up to a limit."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from planner.errors import ProviderError
from planner.providers.azure import AzureProvider
from planner.providers.base import HostUnresolvable
from planner.providers.http import JsonApi, read_capped
from planner.refresh import refresh
from providers.provider_fakes import DO_URL, NOW, load, paperspace_provider
from providers.test_provider_azure import _known


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def _client(**options: Any) -> JsonApi:
    return JsonApi("paperspace", "paperspace", requests.Session(), "test-token", "hint", backoff_s=0.001, **options)


@pytest.mark.parametrize(
    ("next_link", "message"),
    [
        ("http://evil.test/v2/sizes?page=2", "paperspace: refused to send the API token over http to evil.test"),
        (
            "https://evil.test/v2/sizes?page=2",
            "paperspace: refused to follow a link to evil.test: the API token goes only to do.test",
        ),
    ],
)
def test_pagination_to_another_host_is_refused_and_named(
    api: responses.RequestsMock, next_link: str, message: str
) -> None:
    page = load("digitalocean_sizes_pages.json")["page1"]
    page["links"] = {"pages": {"next": next_link}}
    api.add(responses.GET, re.compile(re.escape(DO_URL)), json=page)
    elsewhere: list[Any] = []
    api.add_callback(
        responses.GET, re.compile(r"https?://evil\.test/.*"), callback=lambda r: elsewhere.append(r) or (200, {}, "{}")
    )
    with pytest.raises(ProviderError) as caught:
        paperspace_provider().fetch()
    assert str(caught.value) == message
    assert elsewhere == []  # the token never left for evil.test


def test_plain_http_only_to_loopback_and_only_when_allowed(api: responses.RequestsMock) -> None:
    api.add(responses.GET, "http://127.0.0.1:8080/v2/sizes", json={"sizes": []})
    with pytest.raises(ProviderError, match=r"refused to send the API token over http to 127\.0\.0\.1"):
        _client().get("http://127.0.0.1:8080/v2/sizes")
    assert _client(allow_loopback_http=True).get("http://127.0.0.1:8080/v2/sizes") == {"sizes": []}
    with pytest.raises(ProviderError, match=r"over http to api\.example\.test"):
        _client(allow_loopback_http=True).get("http://api.example.test/v2/sizes")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No name resolves (as offline); the names asked are recorded. Nothing is sent to a resolver."""
    asked: list[str] = []

    def fail(host: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(str(host))
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    return asked


def test_a_name_that_does_not_resolve_is_not_retried(offline: list[str]) -> None:
    started = time.monotonic()
    with pytest.raises(HostUnresolvable, match=r"^paperspace: cannot resolve api\.example\.invalid: offline\?$"):
        JsonApi("paperspace", "paperspace", requests.Session(), "t", "hint", attempts=6, backoff_s=1.0).get(
            "https://api.example.invalid/v2/sizes"
        )
    assert time.monotonic() - started < 1.0  # six attempts with 1 s backoff would take over 15 s
    assert offline == ["api.example.invalid"]


def test_an_offline_azure_refresh_is_one_line_at_once(offline: list[str], tmp_path: Path) -> None:
    """Issue 43: offline, Azure retried for 67 s and printed 49 long lines, one per region."""
    provider = AzureProvider(
        requests.Session(),
        base_url="https://prices.example.invalid/api/retail/prices",
        known_sizes=_known,
        now=lambda: NOW,
    )
    started = time.monotonic()
    report = refresh("azure", store=tmp_path / "c.sqlite", clients={"azure": provider})
    assert time.monotonic() - started < 5.0
    assert report["azure"].error == "azure: cannot resolve prices.example.invalid: offline?"
    assert report.summary().splitlines() == [
        "azure: not refreshed, kept the previous catalog: cannot resolve prices.example.invalid: offline?"
    ]


def test_an_answer_past_the_limit_is_refused_by_name(api: responses.RequestsMock) -> None:
    big = json.dumps({"sizes": [], "padding": "x" * 3_000_000})
    api.add(responses.GET, DO_URL, body=big)
    with pytest.raises(ProviderError, match=r"^paperspace: the answer from do\.test is larger than 1 MiB; gave up$"):
        _client(max_body_bytes=2**20).get(DO_URL)
    assert _client(max_body_bytes=4 * 2**20).get(DO_URL)["sizes"] == []


def test_a_body_without_a_length_is_cut_while_streaming() -> None:
    """A chunked answer declares no length: reading stops past the limit, not after the whole body."""

    class Endless:
        def __init__(self) -> None:
            self.headers: dict[str, str] = {}
            self.read = 0
            self.closed = False

        def iter_content(self, size: int) -> Iterator[bytes]:
            while True:
                self.read += size
                yield b"x" * size

        def close(self) -> None:
            self.closed = True

    endless = Endless()
    with pytest.raises(ProviderError, match="larger than 1 MiB"):
        read_capped(endless, "azure", "https://prices.azure.com/api/retail/prices", 2**20)
    assert endless.read <= 2**20 + 2**16 and endless.closed
