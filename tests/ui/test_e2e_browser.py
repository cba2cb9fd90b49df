"""End to end: the real Streamlit server, driven by a real headless Chromium through Playwright."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import make_offer

from planner.catalog.store import CatalogStore

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("GPUPLAN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (scripts/dev.sh test installs it)"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def app_url(isolated_store: Path) -> Iterator[str]:
    with CatalogStore(seed=False) as store:
        store.write_snapshot("aws", [make_offer()], source="e2e", as_of="2026-11-01T00:00:00+00:00")
    port = _free_port()
    env = {**os.environ, "GPUPLAN_HOME": str(isolated_store), "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "streamlit_app.py"), "--server.headless=true",
         f"--server.port={port}", "--server.address=127.0.0.1", "--browser.gatherUsageStats=false"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the Streamlit server did not start within 60 s")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)


BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]  # fmt: skip


def test_plan_and_catalog_pages_in_a_real_browser(app_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(app_url, wait_until="domcontentloaded")
            page.get_by_role("button", name="Rank offerings").click(timeout=60_000)
            page.get_by_text("Best option (cost):").wait_for(timeout=60_000)
            page.get_by_text(re.compile(r"^\$[\d,]+$")).first.wait_for(timeout=30_000)  # the cost per run
            page.get_by_text(re.compile(r"\d+ options, \d+ on the cost/time Pareto front")).wait_for()
            page.screenshot(path=str(tmp_path / "plan.png"), full_page=True)
            page.goto(app_url + "/catalog", wait_until="domcontentloaded")
            page.get_by_text("Catalog freshness").wait_for(timeout=60_000)
            page.get_by_text(re.compile(r"^\d+ offerings$")).wait_for(timeout=30_000)
        finally:
            browser.close()
