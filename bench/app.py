"""Web app speed: first load and re-rank of the plan page, as ratios to a one-table Streamlit page, same run.

Run: .venv/bin/python bench/app.py   (needs chromium; GPUPLAN_CHROMIUM points at another binary)
     .venv/bin/python bench/app.py --apptest   (the page script's re-rank alone, through Streamlit's AppTest)

Both pages are served by real Streamlit servers on the bundled catalog and driven by a real headless Chromium:
- first load: a fresh browser session opens the page until the answer is on screen (the plan page's headline
  and cost; the baseline's table caption);
- re-rank: the plan page ranks again for a new amount of work (a form submit; never a cached answer) until the
  new cost shows; the baseline reruns on a button and redraws its table.
The baseline reads the same catalog files with pandas and shows them in one st.dataframe: the floor any
Streamlit page pays (server round trip, script run, rendering), so the ratios say what the app adds to it.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("GPUPLAN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
REPEAT = 7

BASELINE = textwrap.dedent(
    """
    import pandas as pd
    import streamlit as st

    files = sorted(__import__("pathlib").Path({catalog!r}).glob("*.csv"))
    frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    runs = st.session_state.setdefault("runs", 0)
    if st.button("Rerun"):
        st.session_state["runs"] = runs = runs + 1
    st.dataframe(frame.sort_values(frame.columns[runs % 5]), hide_index=True)
    st.caption(f"{{len(frame)}} rows shown, run {{runs}}")
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(script: Path, env: dict[str, str]) -> Iterator[str]:
    """A Streamlit server for ``script`` on a free loopback port, until the block ends."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), f"--server.port={port}",
         "--server.address=127.0.0.1", "--server.headless=true", "--browser.gatherUsageStats=false"],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def first_load(browser: Any, url: str, ready: Callable[[Any], object]) -> float:
    """Seconds from navigation to ``ready(page)`` in a fresh browser session (no cookies, no cache)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        return timed(lambda: (page.goto(url, wait_until="commit"), ready(page)))
    finally:
        context.close()


def app_ready(page: Any) -> None:
    page.get_by_text("Best option (cost):").wait_for(timeout=120_000)
    page.get_by_test_id("stMetricValue").first.wait_for(timeout=120_000)


def baseline_ready(page: Any) -> None:
    page.get_by_text("rows shown, run 0").wait_for(timeout=120_000)


def rerank_times(browser: Any, url: str) -> list[float]:
    """Seconds per re-rank: a new amount of work submitted, until the new cost per run shows."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url)
    app_ready(page)
    cost = page.get_by_test_id("stMetricValue").first
    work = page.get_by_label("Amount of work (tokens, images or sequences; 0 = the preset's default)")
    times = []
    for i in range(REPEAT + 1):
        before = cost.inner_text()
        work.fill(f"{1e11 + (i + 1) * 7.3e9:.4e}")

        def submit_and_wait(before: str = before) -> None:
            page.get_by_role("button", name="Rank offerings").click()
            page.wait_for_function(
                "([el, old]) => el.innerText !== old", arg=[cost.element_handle(), before], timeout=120_000
            )

        times.append(timed(submit_and_wait))
    page.close()
    return times[1:]  # the first submit also warms the server's caches


def baseline_rerun_times(browser: Any, url: str) -> list[float]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    baseline_ready(page)
    times = []
    for run in range(1, REPEAT + 2):

        def click_and_wait(run: int = run) -> None:
            page.get_by_role("button", name="Rerun").click()
            page.get_by_text(f"rows shown, run {run}").wait_for(timeout=120_000)

        times.append(timed(click_and_wait))
    page.close()
    return times[1:]


def apptest_rerank_times(home: str) -> list[float]:
    """Seconds per re-rank through Streamlit's AppTest (the script run alone: no server, browser or rendering)."""
    os.environ["GPUPLAN_HOME"] = home
    sys.path.insert(0, str(REPO))
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=120).run()
    times = []
    for i in range(REPEAT + 1):
        app.number_input(key="plan.work").set_value(1e11 + (i + 1) * 7.3e9)
        times.append(timed(lambda: app.button[0].click().run()))
        if app.exception:
            sys.exit(f"the plan page failed: {app.exception}")
    return times[1:]


def main() -> None:
    if "--apptest" in sys.argv:
        # The script's own share of a re-rank, for the 0.3 s target of issue 37; the browser figures include it.
        with tempfile.TemporaryDirectory() as home:
            times = apptest_rerank_times(home)
        print(f"re-rank (AppTest, script run only): median of {REPEAT} {statistics.median(times):.2f} s, "
              f"fastest {min(times):.2f} s")  # fmt: skip
        return
    if CHROMIUM is None:
        sys.exit("bench/app.py needs chromium (apt-get install chromium) or GPUPLAN_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GPUPLAN_HOME": home, "PYTHONPATH": str(REPO)}
        baseline = Path(home) / "one_table.py"
        baseline.write_text(BASELINE.format(catalog=str(REPO / "data" / "catalog")), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "planner", "catalog", "status"], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip  # seed the store outside the timings
        with (
            serve(REPO / "streamlit_app.py", env) as app_url,
            serve(baseline, env) as base_url,
            sync_playwright() as pw,
        ):
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
            try:
                # Warm both servers once (imports, the catalog read), as a deployed app would be.
                first_load(browser, app_url, app_ready)
                first_load(browser, base_url, baseline_ready)
                app_loads, base_loads = [], []
                for _ in range(REPEAT):  # interleaved, so machine load hits both alike
                    app_loads.append(first_load(browser, app_url, app_ready))
                    base_loads.append(first_load(browser, base_url, baseline_ready))
                app_reranks = rerank_times(browser, app_url)
                base_reruns = baseline_rerun_times(browser, base_url)
            finally:
                browser.close()
    load, base_load = statistics.median(app_loads), statistics.median(base_loads)
    rerank, base_rerun = statistics.median(app_reranks), statistics.median(base_reruns)
    print(f"median of {REPEAT}, headless Chromium, bundled catalog")
    print(f"first load: plan page {load:.2f} s, one-table page {base_load:.2f} s -> ratio {load / base_load:.2f}")
    print(
        f"re-rank:    plan page {rerank:.2f} s, one-table rerun {base_rerun:.2f} s -> ratio {rerank / base_rerun:.2f}"
    )


if __name__ == "__main__":
    main()
