"""A small JSON-over-HTTPS client for the GPU clouds without an SDK (Lambda, DigitalOcean) and public price feeds.

``requests`` and ``tenacity`` are imported lazily: importing this module loads neither. Throttling (429) and
server errors (5xx), timeouts and dropped connections are retried with jittered exponential backoff, honouring
``Retry-After``; a refused token (401/403) fails at once with the provider's credential hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, Any, TypeVar

from planner.errors import MissingCredentials, ProviderError
from planner.providers.base import DEFAULT_TIMEOUT_S, require

T = TypeVar("T")


class TransientHttpError(Exception):
    """A 429 or 5xx answer: worth retrying, after ``retry_after_s`` when the server said so."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


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
    ) -> None:
        self.provider = provider
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

    def get(self, url: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The JSON object at ``url``; ProviderError for a refused token, an HTTP error or a reply that is not JSON."""

        def attempt() -> dict[str, Any]:
            response = self._session.get(url, params=params, headers=self._headers, timeout=self._timeout_s)
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
                payload = response.json()
            except ValueError:
                raise ProviderError(f"{self.provider}: the API answered with something that is not JSON") from None
            if not isinstance(payload, dict):
                raise ProviderError(f"{self.provider}: the API answered with a JSON {type(payload).__name__}")
            return payload

        try:
            answer: dict[str, Any] = self._retrying(attempt)
        except TransientHttpError as exc:
            raise ProviderError(f"{self.provider}: {exc} after retries") from None
        return answer

    def stream(self, url: str, read: Callable[[IO[bytes]], T]) -> T:
        """``read`` the body at ``url`` as it arrives (gzip undone), never holding it whole; the whole GET and read
        are retried on throttling, 5xx and a connection dropped mid-body. ProviderError as for ``get``."""

        def attempt() -> T:
            with self._session.get(url, headers=self._headers, timeout=self._timeout_s, stream=True) as response:
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
HTTP_OPTIONS = ("timeout_s", "attempts", "backoff_s", "max_backoff_s")


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
