"""A throwaway PostgreSQL server for the tests and the bench: ``initdb`` and ``pg_ctl`` in a temporary folder, on a
free loopback port, trusting local connections, removed when stopped. As root it runs as the ``postgres`` system user
(the server refuses to run as root)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote

BINDIR_ENV = "GPUPLAN_PG_BINDIR"


def find_bindir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: $GPUPLAN_PG_BINDIR (only there when set), PATH, or Debian's
    /usr/lib/postgresql/<version>/bin."""
    if os.environ.get(BINDIR_ENV):
        given = Path(os.environ[BINDIR_ENV])
        return given if (given / "initdb").is_file() and (given / "pg_ctl").is_file() else None
    candidates = []
    found = shutil.which("pg_ctl")
    if found:
        candidates.append(str(Path(found).parent))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for candidate in candidates:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class TempPostgres:
    """One server; ``start()`` returns its URL (the ``postgres`` database) or raises RuntimeError with the reason."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="gpuplan-pg-"))
        self.data = self.folder / "data"
        self.as_postgres = os.geteuid() == 0
        self.url = ""

    def _run(self, *argv: str) -> None:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = (self.folder / "server.log").read_text() if (self.folder / "server.log").is_file() else ""
            raise RuntimeError(f"{argv[0]} failed: {(done.stderr or done.stdout).strip()[-400:]} {log[-400:]}")

    def start(self) -> str:
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        for _attempt in range(3):  # another process may take the free port between the probe and the start
            port = _free_port()
            options = f"-p {port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-o", options, "-w",
                          "start")  # fmt: skip
            except RuntimeError:
                continue
            self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            return self.url
        raise RuntimeError(f"the PostgreSQL server in {self.folder} would not start")

    def stop(self) -> None:
        if self.url:
            with contextlib.suppress(RuntimeError):  # removing its folder below is what matters
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def start_server() -> TempPostgres:
    """A running server, or RuntimeError saying why there is none."""
    try:
        import psycopg  # noqa: F401  # the store's client: without it no test can talk to the server
    except ImportError:
        raise RuntimeError("psycopg is not installed (pip install 'gpu-planner[postgres]')") from None
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError(f"no PostgreSQL server binaries (apt-get install postgresql, or set {BINDIR_ENV})")
    server = TempPostgres(bindir)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server


def new_schema(url: str) -> str:
    """A URL of ``url``'s database whose tables go to a new, empty schema: one store per test, one server."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {name}")
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={name}')}"
