"""A small JSON-over-HTTPS client for the GPU clouds without an SDK (Lambda, DigitalOcean) and public price feeds.

``requests`` and ``tenacity`` are imported lazily: importing this module loads neither. Throttling (429) and
server errors (5xx), timeouts and dropped connections are retried with jittered exponential backoff, honouring
``Retry-After``; a refused token (401/403) fails at once with the provider's credential hint, and so does a host
name that does not resolve (offline). The token goes only to the host of the first URL asked (the configured
API), over https; an answer is read up to ``MAX_BODY_BYTES``.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable, Mapping
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

from planner.errors import MissingCredentials, ProviderError
from planner.providers.base import DEFAULT_TIMEOUT_S, HostUnresolvable, require

# The largest answer read: the clouds' GPU listings are under 2 MB (DigitalOcean's whole size list, a page of
# Azure prices); past 64 MiB an answer is broken or hostile, and reading on would cost memory, not data.
MAX_BODY_BYTES = 64 * 2**20
CHUNK_BYTES = 2**16

T = TypeVar("T")


class TransientHttpError(Exception):
    """A 429 or 5xx answer: worth retrying, after ``retry_after_s`` when the server said so."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def unresolvable_host(exc: BaseException, url: str, provider: str) -> HostUnresolvable | None:
    """A HostUnresolvable when ``exc`` (a requests ConnectionError) comes from a name that does not resolve."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, socket.gaierror) or type(current).__name__ == "NameResolutionError":
            return HostUnresolvable(f"{provider}: cannot resolve {urlsplit(url).hostname}: offline?")
        # urllib3 wraps the cause in MaxRetryError.reason; requests passes that on as its first argument.
        pending.extend(e for e in (current.__cause__, current.__context__, getattr(current, "reason", None)) if e)
        pending.extend(a for a in current.args if isinstance(a, BaseException))
    return None


def read_capped(response: Any, provider: str, url: str, limit_bytes: int = MAX_BODY_BYTES) -> bytes:
    """The body of a streamed ``requests`` response, or ProviderError past ``limit_bytes`` (never read whole)."""
    too_big = ProviderError(
        f"{provider}: the answer from {urlsplit(url).hostname} is larger than {limit_bytes / 2**20:g} MiB; gave up"
    )
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit_bytes:
        response.close()
        raise too_big
    body = bytearray()
    for chunk in response.iter_content(CHUNK_BYTES):
        body.extend(chunk)
        if len(body) > limit_bytes:
            response.close()
            raise too_big
    return bytes(body)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header given in seconds (the HTTP-date form is left to the backoff)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


class JsonApi:
    """GET JSON from one provider's API with a bearer token (none for a public feed), retries and a timeout."""

    def __init__(
        self,
        provider: str,
        extra: str,
        session: Any,
        token: str | None,
        credentials_hint: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = 6,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        allow_loopback_http: bool = False,
    ) -> None:
        self.provider = provider
        self._max_body_bytes = max_body_bytes
        # Plain http only to this machine, and only when asked (tests' local servers): the token never travels in clear.
        self._allow_loopback_http = allow_loopback_http
        self._origin: tuple[str, str] | None = None  # (scheme, host:port) the token is sent to
        self._extra = extra
        self._session = session
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._hint = credentials_hint
        self._timeout_s = timeout_s
        tenacity = require("tenacity", extra)
        backoff = tenacity.wait_exponential_jitter(multiplier=backoff_s, jitter=backoff_s, max=max_backoff_s)

        def wait(state: Any) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            if isinstance(error, TransientHttpError) and error.retry_after_s is not None:
                return min(error.retry_after_s, max_backoff_s)
            return float(backoff(state))

        self._retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(attempts),
            wait=wait,
            retry=tenacity.retry_if_exception(self._is_transient),
            reraise=True,
        )

    def _is_transient(self, exc: BaseException) -> bool:
        if isinstance(exc, TransientHttpError):
            return True
        requests = require("requests", self._extra)
        urllib3 = require("urllib3", self._extra)
        # ProtocolError: the connection dropped inside a streamed body (fewer bytes than Content-Length).
        return isinstance(exc, requests.Timeout | requests.ConnectionError | urllib3.exceptions.ProtocolError)

    def _check_destination(self, url: str) -> None:
        """ProviderError unless ``url`` is https (or allowed loopback http) on the host the first call went to.

        Only a client that sends a token is pinned: a public feed (no token) may span hosts, as AWS's price files do."""
        if "Authorization" not in self._headers:
            return
        parts = urlsplit(url)
        host = parts.hostname or ""
        secure = parts.scheme == "https" or (parts.scheme == "http" and self._allow_loopback_http and _loopback(host))
        if not secure:
            raise ProviderError(f"{self.provider}: refused to send the API token over {parts.scheme or '?'} to {host}")
        origin = (parts.scheme, parts.netloc.rpartition("@")[2].lower())
        if self._origin is None:
            self._origin = origin
        elif origin != self._origin:
            raise ProviderError(
                f"{self.provider}: refused to follow a link to {host}: the API token goes only to {self._origin[1]}"
            )

    def get(self, url: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The JSON object at ``url``; ProviderError for a refused token, an HTTP error or a reply that is not JSON."""

        self._check_destination(url)
        requests = require("requests", self._extra)

        def attempt() -> dict[str, Any]:
            try:
                response = self._session.get(
                    url, params=params, headers=self._headers, timeout=self._timeout_s, stream=True
                )
            except requests.ConnectionError as exc:
                unresolved = unresolvable_host(exc, url, self.provider)
                if unresolved is not None:
                    raise unresolved from None
                raise
            with response:  # a streamed answer left unread would hold its connection: release it on every path
                return self._json_of(response, url)

        try:
            answer: dict[str, Any] = self._retrying(attempt)
        except TransientHttpError as exc:
            raise ProviderError(f"{self.provider}: {exc} after retries") from None
        return answer

    def _json_of(self, response: Any, url: str) -> dict[str, Any]:
        """The JSON object of one answer; TransientHttpError for 429/5xx, ProviderError for the rest."""
        status = int(response.status_code)
        if status == 429 or status >= 500:
            raise TransientHttpError(
                f"HTTP {status} from {self.provider}", _retry_after(response.headers.get("Retry-After"))
            )
        if status in (401, 403):
            raise MissingCredentials(f"{self.provider}: the API refused the token (HTTP {status}); {self._hint}")
        if status >= 400:
            raise ProviderError(f"{self.provider}: HTTP {status} from {url.split('?')[0]}")
        try:
            payload = json.loads(read_capped(response, self.provider, url, self._max_body_bytes))
        except ValueError:
            raise ProviderError(f"{self.provider}: the API answered with something that is not JSON") from None
        if not isinstance(payload, dict):
            raise ProviderError(f"{self.provider}: the API answered with a JSON {type(payload).__name__}")
        return payload

    def stream(self, url: str, read: Callable[[IO[bytes]], T]) -> T:
        """``read`` the body at ``url`` as it arrives (gzip undone), never holding it whole; the whole GET and read
        are retried on throttling, 5xx and a connection dropped mid-body. ProviderError as for ``get``."""

        self._check_destination(url)
        requests = require("requests", self._extra)

        def attempt() -> T:
            try:
                opened = self._session.get(url, headers=self._headers, timeout=self._timeout_s, stream=True)
            except requests.ConnectionError as exc:
                unresolved = unresolvable_host(exc, url, self.provider)
                if unresolved is not None:
                    raise unresolved from None
                raise
            with opened as response:
                status = int(response.status_code)
                if status == 429 or status >= 500:
                    raise TransientHttpError(
                        f"HTTP {status} from {self.provider}", _retry_after(response.headers.get("Retry-After"))
                    )
                if status >= 400:
                    raise ProviderError(f"{self.provider}: HTTP {status} from {url.split('?')[0]}")
                response.raw.decode_content = True  # urllib3 then inflates a gzip Content-Encoding while reading
                return read(response.raw)

        try:
            answer: T = self._retrying(attempt)
        except TransientHttpError as exc:
            raise ProviderError(f"{self.provider}: {exc} after retries") from None
        return answer


def token_from_environment(names: tuple[str, ...], getenv: Callable[[str], str | None]) -> str | None:
    """The first non-empty variable of ``names``."""
    for name in names:
        value = (getenv(name) or "").strip()
        if value:
            return value
    return None


# The options of JsonApi a provider's from_environment passes through.
HTTP_OPTIONS = ("timeout_s", "attempts", "backoff_s", "max_backoff_s", "max_body_bytes")


def api_from_environment(
    provider: str, extra: str, token_names: tuple[str, ...], hint: str, options: dict[str, Any]
) -> JsonApi:
    """A JsonApi with the first token set among ``token_names``; MissingCredentials (``hint``) when none is.

    Takes the HTTP options out of ``options``, leaving the provider's own.
    """
    import os

    requests = require("requests", extra)
    token = token_from_environment(token_names, os.environ.get)
    if token is None:
        raise MissingCredentials(hint)
    http = {k: options.pop(k) for k in HTTP_OPTIONS if k in options}
    http.setdefault("timeout_s", DEFAULT_TIMEOUT_S)
    return JsonApi(provider, extra, requests.Session(), token, hint, **http)
