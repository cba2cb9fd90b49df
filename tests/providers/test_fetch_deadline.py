"""fetch_regions' overall deadline: a hung region fails with "deadline" and the call returns on time."""

from __future__ import annotations

import threading
import time

import pytest

from planner.errors import InputError
from planner.providers.base import ProgressHook, fetch_regions


class Seen(ProgressHook):
    def __init__(self) -> None:
        self.advanced: list[tuple[str, bool]] = []

    def advance(self, provider: str, region: str, ok: bool) -> None:
        self.advanced.append((region, ok))


def test_regions_still_running_at_the_deadline_fail_with_deadline() -> None:
    release = threading.Event()

    def work(region: str) -> str:
        if region == "hung-1":
            release.wait(30)  # a socket that never answers
        if region == "broken-1":
            raise RuntimeError("boom")
        return region.upper()

    hook = Seen()
    started = time.monotonic()
    done, failures = fetch_regions(
        "aws", ["ok-1", "hung-1", "broken-1", "ok-2"], work, workers=4, progress=hook, deadline_s=0.5
    )
    elapsed = time.monotonic() - started
    release.set()
    assert 0.5 <= elapsed < 5
    assert done == {"ok-1": "OK-1", "ok-2": "OK-2"}
    reasons = {f.region: f.reason for f in failures}
    assert reasons["hung-1"].startswith("deadline")
    assert reasons["broken-1"] == "RuntimeError: boom"
    assert sorted(hook.advanced) == [("broken-1", False), ("hung-1", False), ("ok-1", True), ("ok-2", True)]


def test_queued_regions_are_not_started_after_the_deadline() -> None:
    started: list[str] = []

    def slow(region: str) -> str:
        started.append(region)
        time.sleep(0.4)
        return region

    done, failures = fetch_regions("gcp", [f"r{i}" for i in range(6)], slow, workers=1, deadline_s=0.2)
    time.sleep(0.6)
    assert done == {}
    assert len(failures) == 6 and all(f.reason.startswith("deadline") for f in failures)
    assert len(started) <= 2  # the one running at the deadline, perhaps the next it had taken already


def test_without_a_deadline_every_region_finishes() -> None:
    done, failures = fetch_regions("azure", ["a", "b", "c"], lambda r: r * 2, workers=2)
    assert done == {"a": "aa", "b": "bb", "c": "cc"} and failures == []


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_deadline_must_be_positive(bad: float) -> None:
    with pytest.raises(InputError, match="deadline_s must be a positive number"):
        fetch_regions("aws", ["a"], lambda r: r, deadline_s=bad)
