"""A real HTTP server on 127.0.0.1 in a thread, answering scripted replies per path: the providers' own client
(requests, urllib3, gzip decoding, retries) runs unchanged against it."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


@dataclass
class Reply:
    """One answer: status, body and headers; ``gzip`` compresses the body (Content-Encoding: gzip); ``cut_at``
    sends only that many bytes of a body announced whole (a connection dropped mid-body)."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False
    cut_at: int | None = None


@dataclass
class Seen:
    """One request the server answered."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


Route = Callable[[Seen], Reply]


class Loopback:
    """Routes by path; a list of replies per path is served in turn (the last one repeats)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route | list[Reply]] = {}
        self.seen: list[Seen] = []
        self.base_url = ""

    def serve(self, path: str, *replies: Reply | Route) -> None:
        """Answer ``path`` with ``replies`` in turn, or with a function of the request."""
        if len(replies) == 1 and callable(replies[0]):
            self.routes[path] = replies[0]
        else:
            self.routes[path] = [r for r in replies if isinstance(r, Reply)]

    def requests_to(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    def answer(self, seen: Seen) -> Reply:
        self.seen.append(seen)
        route = self.routes.get(seen.path)
        if route is None:
            return Reply(b'{"error": "no such path"}', 404)
        if callable(route):
            return route(seen)
        return route.pop(0) if len(route) > 1 else route[0]


@contextmanager
def loopback() -> Iterator[Loopback]:
    """A running Loopback; its ``base_url`` is http://127.0.0.1:<port>."""
    state = Loopback()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            url = urlparse(self.path)
            reply = state.answer(Seen(url.path, parse_qs(url.query), dict(self.headers.items())))
            body = gzip.compress(reply.body) if reply.gzip else reply.body
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.gzip:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            if reply.cut_at is not None:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body if reply.cut_at is None else body[: reply.cut_at])
            if reply.cut_at is not None:
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:  # keep the test log clean
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
