"""End to end: the real Streamlit server, driven by a real headless Chromium through Playwright."""

from __future__ import annotations

import csv
import io
import json
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
from typing import Any

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


HOSTILE = "p4d.24xlarge\r=cmd|' /C calc'!A0"  # a bare carriage return, then a formula


@pytest.fixture
def app_url(isolated_store: Path) -> Iterator[str]:
    with CatalogStore(seed=False) as store:
        store.write_snapshot(
            "aws",
            [
                make_offer(),
                make_offer(instance_type=HOSTILE, gpu="A100-40GB", gpu_memory_gib=40.0, price_usd_per_hour=21.96,
                           spot_price_usd_per_hour=None, spot_interruption=None, interconnect="nvswitch"),
            ],
            source="e2e",
            as_of="2026-11-01T00:00:00+00:00",
        )  # fmt: skip
    port = _free_port()
    env = {**os.environ, "GPUPLAN_HOME": str(isolated_store), "PYTHONPATH": str(REPO)}
    # Started from the repository root without address flags: .streamlit/config.toml binds it to 127.0.0.1.
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "streamlit_app.py"), f"--server.port={port}"],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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


def _downloaded_csv(page: Any, button: str) -> list[list[str]]:
    with page.expect_download(timeout=30_000) as info:
        page.get_by_role("button", name=button).first.click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    return list(csv.reader(io.StringIO(text, newline="")))


def _assert_safe(rows: list[list[str]]) -> None:
    assert rows and all(len(row) == len(rows[0]) for row in rows), "a line break in a cell started a new row"
    for cell in (cell for row in rows[1:] for cell in row):
        lines = cell.replace("\r", "\n").split("\n")
        assert not any(line.startswith(("=", "+", "-", "@")) for line in lines), cell
    assert any("p4d.24xlarge" in cell for row in rows for cell in row)


def test_plan_page_answers_on_load_keeps_the_form_in_the_url_and_draws_the_chart(app_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            # A laptop's screen: the first screen shows the answer, the form beside it in the sidebar.
            page = browser.new_page(viewport={"width": 1440, "height": 900}, accept_downloads=True)
            page.goto(app_url, wait_until="domcontentloaded")
            # First load: the default workload's answer, without pressing anything.
            page.get_by_text("Best option (cost):").wait_for(timeout=60_000)
            page.get_by_text(re.compile(r"^\$[\d,]+$")).first.wait_for(timeout=30_000)  # the cost per run
            for shown in (page.get_by_text("Best option (cost):"), page.get_by_text(re.compile(r"^\$[\d,]+$")).first):
                box = shown.bounding_box()
                assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 900, box
            page.get_by_text(re.compile(r"\d+ options, \d+ on the cost/time Pareto front")).wait_for()
            page.get_by_text(re.compile(r"^Prices: aws .* old \(live\)")).wait_for()
            page.get_by_text(re.compile(r"Best option \(cost\):.*spot")).wait_for()
            # The chart is drawn: a vega-embed canvas or SVG with a legend for pricing and GPU.
            page.locator(".vega-embed canvas, .vega-embed svg").first.wait_for(timeout=30_000)
            page.screenshot(path=str(tmp_path / "plan.png"), full_page=True)
            # The results table fits the main area at 1440 px: no column is cut at its right edge.
            widths = page.evaluate(
                "() => [...document.querySelectorAll('.dvn-scroller')].map(e => [e.scrollWidth, e.clientWidth])"
            )
            assert widths and all(scroll <= client + 1 for scroll, client in widths), widths
            _assert_safe(_downloaded_csv(page, "Download CSV"))

            # Change the form: the URL takes it, and a fresh tab on that URL gives the same answer.
            page.get_by_text("on-demand", exact=True).first.click()
            page.get_by_role("button", name="Rank offerings").click()
            page.wait_for_url(re.compile(r"pricing=on-demand"), timeout=30_000)
            page.get_by_text(re.compile(r"Best option \(cost\):.*on-demand")).wait_for(timeout=30_000)
            shared = page.url
            other = browser.new_page(viewport={"width": 1440, "height": 900})
            other.goto(shared, wait_until="domcontentloaded")
            other.get_by_text(re.compile(r"Best option \(cost\):.*on-demand")).wait_for(timeout=60_000)
            expect(other.get_by_role("radio", name="on-demand")).to_be_checked(timeout=10_000)
            other.close()

            # Back returns to the previous answer (and the previous form).
            page.go_back()
            page.wait_for_url(lambda url: "pricing=" not in url, timeout=30_000)
            page.get_by_text(re.compile(r"Best option \(cost\):.*spot")).wait_for(timeout=30_000)
            expect(page.get_by_role("radio", name="both")).to_be_checked(timeout=10_000)

            # An evaluation schedule typed into the form reaches the URL and the ranking's assumptions.
            page.get_by_text("Batch and evaluations").click()
            # Each value is committed (Tab leaves the field) before the form is submitted.
            for name, value in (("Evaluation passes (0 = none)", "90"), ("Samples per evaluation", "50000")):
                field = page.get_by_role("spinbutton", name=name)
                field.fill(value)
                field.press("Tab")
                expect(field).to_have_value(value, timeout=10_000)
            page.get_by_role("button", name="Rank offerings").click()
            page.wait_for_url(re.compile(r"evals=90.*eval_samples=50000|eval_samples=50000.*evals=90"), timeout=30_000)
            page.get_by_text("Assumptions", exact=True).click()
            page.get_by_text(re.compile(r"evaluation: 90 passes of 50000 samples")).first.wait_for(timeout=30_000)

            # The estimate page's link holds its form too.
            page.goto(f"{app_url}/estimate?w=resnet50&gpu=A100-80GB&n=4&prec=fp16&evals=90&eval_samples=50000")
            page.get_by_text("Throughput (images/s)").wait_for(timeout=60_000)
            page.get_by_text(re.compile(r"evaluation: 90 passes of 50000 samples")).first.wait_for(timeout=30_000)
            expect(page.get_by_role("spinbutton", name="GPUs")).to_have_value("4", timeout=10_000)
            with page.expect_download(timeout=30_000) as info:
                page.get_by_role("button", name="Download JSON").click()
            estimate = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
            assert estimate["gpus"] == 4 and estimate["gpu"] == "A100-80GB" and estimate["throughput"] > 0
        finally:
            browser.close()


def test_catalog_page_in_a_real_browser(app_url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
            page.goto(app_url + "/catalog", wait_until="domcontentloaded")
            page.get_by_text("Price age per provider").wait_for(timeout=60_000)
            page.get_by_text(re.compile(r"^\d+ offerings$")).wait_for(timeout=30_000)
            page.get_by_text("Price history").wait_for(timeout=30_000)
            page.locator(".vega-embed canvas, .vega-embed svg").first.wait_for(timeout=30_000)
            _assert_safe(_downloaded_csv(page, "Download CSV"))
        finally:
            browser.close()


def test_your_runs_page_takes_an_uploaded_log_and_draws_its_charts(app_url: str, tmp_path: Path) -> None:
    """Issue 42: the page that reads a team's own logs, in the real browser, with a DCGM exporter sample uploaded."""
    from playwright.sync_api import sync_playwright

    sample = REPO / "tests" / "data" / "runlogs" / "dcgm_exporter.prom"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(app_url + "/runs", wait_until="domcontentloaded")
            page.locator("input[type=file]").first.set_input_files(str(sample))
            page.get_by_text("Busy (GPU utilisation)").wait_for(timeout=60_000)
            page.get_by_text("98%").first.wait_for(timeout=30_000)  # the sample's node busy share
            # Utilisation, SM activity and power over time: three charts drawn.
            page.locator(".vega-embed canvas, .vega-embed svg").nth(2).wait_for(timeout=30_000)
            page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)
        finally:
            browser.close()
