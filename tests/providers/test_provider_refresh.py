"""Refresh orchestration: one snapshot per provider, partial failures keep what was there, reports say why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from factories import make_offer

import planner
from planner.catalog.store import CatalogStore
from planner.errors import MissingCredentials, MissingExtra
from planner.providers.base import FetchResult, ProgressHook, Provider, RegionFailure
from planner.refresh import refresh, regions_for
from planner.report import records

REPO = Path(__file__).resolve().parents[2]
OLD = "2026-01-01T00:00:00+00:00"


class ScriptedProvider(Provider):
    """A provider whose fetch returns prepared rows and failures, or raises."""

    name = "aws"
    extra = "aws"
    credentials_hint = "aws: set it up"

    def __init__(
        self,
        name: str,
        rows: list[dict[str, Any]],
        failures: Sequence[RegionFailure] = (),
        error: Exception | None = None,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self._rows = rows
        self._failures = list(failures)
        self._error = error
        self.asked: Sequence[str] | None = None

    @classmethod
    def from_environment(cls, **options: Any) -> Provider:
        raise NotImplementedError

    def fetch(
        self, regions: Sequence[str] | None = None, *, progress: ProgressHook | None = None, previous: Any = ()
    ) -> FetchResult:
        self.asked = regions
        if self._error is not None:
            raise self._error
        found = sorted({r["region"] for r in self._rows} | {f.region for f in self._failures})
        return FetchResult(
            rows=[dict(r) for r in self._rows], failures=list(self._failures), regions=list(regions or found)
        )

    @property
    def source(self) -> str:
        return f"scripted {self.name}"


def _store(tmp_path: Path) -> CatalogStore:
    store = CatalogStore(tmp_path / "catalog.sqlite", seed=False)
    store.write_snapshot(
        "aws",
        [
            make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=50.0, as_of=OLD),
            make_offer(region="eu-west-1", zone="euw1-az1", price_usd_per_hour=60.0, as_of=OLD),
        ],
        source="previous",
        as_of=OLD,
    )
    store.write_snapshot(
        "gcp",
        [make_offer(provider="gcp", region="us-central1", zone="", spot_interruption=None)],
        source="previous",
        as_of=OLD,
    )
    return store


def _current(store: CatalogStore, provider: str) -> dict[tuple[str, str], float]:
    frame = store.read_current()
    frame = frame[frame["provider"] == provider]
    return {(str(r["region"]), str(r["zone"])): float(r["price_usd_per_hour"]) for r in records(frame)}


def test_all_providers_refresh(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider(
        "aws",
        [
            make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=51.0),
            make_offer(region="eu-west-1", zone="euw1-az1", price_usd_per_hour=61.0),
        ],
    )
    gcp = ScriptedProvider(
        "gcp",
        [make_offer(provider="gcp", region="us-central1", zone="", price_usd_per_hour=40.0, spot_interruption=None)],
    )
    report = refresh(["aws", "gcp"], store=store, clients={"aws": aws, "gcp": gcp})
    assert report.exit_code == 0
    assert _current(store, "aws") == {("us-east-1", "use1-az1"): 51.0, ("eu-west-1", "euw1-az1"): 61.0}
    assert report["aws"].rows_written == 2 and report["aws"].carried_over == 0
    assert [s.kind for s in store.current_snapshots()] == ["live", "live"]
    assert "aws: 2 offerings from 2/2 regions; 0 rows rejected" in report.summary()


def test_missing_credentials_for_one_provider_others_still_refresh(tmp_path: Path) -> None:
    store = _store(tmp_path)
    hint = "aws: no usable credentials; set AWS_PROFILE (after `aws configure` or `aws sso login`) or AWS_ACCESS_KEY_ID"
    aws = ScriptedProvider("aws", [], error=MissingCredentials(hint))
    gcp = ScriptedProvider(
        "gcp",
        [make_offer(provider="gcp", region="us-central1", zone="", price_usd_per_hour=40.0, spot_interruption=None)],
    )
    report = refresh(["aws", "gcp"], store=store, clients={"aws": aws, "gcp": gcp})
    assert report.exit_code == 3
    assert report["aws"].error == hint
    assert _current(store, "aws") == {("us-east-1", "use1-az1"): 50.0, ("eu-west-1", "euw1-az1"): 60.0}
    assert _current(store, "gcp") == {("us-central1", ""): 40.0}
    lines = report.summary().splitlines()
    assert f"aws: not refreshed, kept the previous catalog: {hint.removeprefix('aws: ')}" in lines


def test_missing_extra_names_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if the aws extra were not installed
    report = refresh("aws", store=store)
    assert report.exit_code == 1
    # The pip of the Python running the planner, from this source checkout (issue 43: a bare pip was another's).
    root = Path(planner.__file__).resolve().parents[1]
    assert report["aws"].error == (
        f"aws: the boto3 package is not installed; run: {sys.executable} -m pip install -e '{root}[aws]'"
    )
    assert isinstance(MissingExtra(report["aws"].error), MissingExtra)


def test_failed_region_keeps_its_previous_rows(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider(
        "aws",
        [make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=52.0)],
        failures=[RegionFailure("eu-west-1", "ReadTimeoutError: Read timeout on endpoint URL")],
    )
    report = refresh("aws", store=store, clients={"aws": aws})
    assert report.exit_code == 3
    assert _current(store, "aws") == {("us-east-1", "use1-az1"): 52.0, ("eu-west-1", "euw1-az1"): 60.0}
    frame = store.read_current()
    kept = frame[(frame["provider"] == "aws") & (frame["region"] == "eu-west-1")].iloc[0]
    assert kept["as_of"] == OLD and "carried_over" in kept["flags"]
    assert (report["aws"].rows_written, report["aws"].carried_over) == (1, 1)
    assert "  region eu-west-1 failed: ReadTimeoutError: Read timeout on endpoint URL" in report.summary()


def test_region_subset_leaves_other_regions_alone(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider("aws", [make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=49.0)])
    # Lambda names a region us-east-1 too, so the region goes to both clouds.
    lam = ScriptedProvider(
        "lambda",
        [
            make_offer(
                provider="lambda",
                instance_type="gpu_1x_h100_sxm5",
                region="us-east-1",
                zone="",
                gpu_count=1,
                available_now="true",
                available_checked_at="2026-11-20T06:00:00+00:00",
            )
        ],
    )
    report = refresh("all", regions=["us-east-1"], store=store, clients={"aws": aws, "lambda": lam})
    assert aws.asked == ["us-east-1"] and lam.asked == ["us-east-1"]
    assert report.exit_code == 0
    assert _current(store, "aws") == {("us-east-1", "use1-az1"): 49.0, ("eu-west-1", "euw1-az1"): 60.0}
    assert report["gcp"].notes == ("no gcp region among us-east-1",)
    assert not report["gcp"].written
    assert "gcp: skipped\n  note: no gcp region among us-east-1" in report.summary()


def test_implausible_rows_are_rejected_one_by_one_and_reported(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider(
        "aws",
        [
            make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=53.0),
            make_offer(region="us-east-1", zone="use1-az2", price_usd_per_hour=-53.0),
            make_offer(region="us-east-1", zone="use1-az3", spot_price_usd_per_hour=0.00001),
            make_offer(
                instance_type="g5.xlarge",
                gpu="A10G",
                gpu_memory_gib=22.35,
                gpu_count=0,
                region="us-east-1",
                zone="use1-az1",
                price_usd_per_hour=1.0,
            ),
        ],
    )
    report = refresh("aws", store=store, clients={"aws": aws})
    reasons = {(r.instance_type, r.zone): r.reason for r in report["aws"].rejected}
    # An on-demand offering without an on-demand price (none before either) cannot stand.
    assert "price_usd_per_hour -53 held back (must be positive" in reasons[("p5.48xlarge", "use1-az2")]
    assert "gpu_count must be positive" in reasons[("g5.xlarge", "use1-az1")]
    # An implausible spot price loses only itself: the row is stored without spot, and the price is named.
    assert ("p5.48xlarge", "use1-az3") not in reasons
    held = {(h.zone, h.field): str(h) for h in report["aws"].held}
    assert "implausibly low" in held[("use1-az3", "spot_price_usd_per_hour")]
    assert held[("use1-az3", "spot_price_usd_per_hour")].endswith("; left empty")
    assert report["aws"].rows_written == 2
    summary = report.summary()
    assert (
        "2 rows rejected" in summary
        and "rejected aws g5.xlarge us-east-1/use1-az1: gpu_count must be positive" in summary
    )


def test_nothing_valid_keeps_the_previous_snapshot(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider("aws", [make_offer(region="us-east-1", zone="use1-az1", gpu_count=0)])
    report = refresh("aws", store=store, clients={"aws": aws})
    assert report.exit_code == 1
    assert "kept the previous catalog" in (report["aws"].error or "")
    assert _current(store, "aws") == {("us-east-1", "use1-az1"): 50.0, ("eu-west-1", "euw1-az1"): 60.0}


def test_every_region_failing_is_an_error_not_an_empty_catalog(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider(
        "aws", [], failures=[RegionFailure("us-east-1", "HTTP 503"), RegionFailure("eu-west-1", "HTTP 503")]
    )
    report = refresh("aws", store=store, clients={"aws": aws})
    assert (
        report["aws"].error
        == "aws: refresh produced no valid offering (2 of 2 regions failed); kept the previous catalog"
    )
    assert len(store.snapshots("aws")) == 1


def test_unexpected_exception_in_one_provider_is_contained(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider("aws", [], error=KeyError("GpuInfo"))
    gcp = ScriptedProvider(
        "gcp",
        [make_offer(provider="gcp", region="us-central1", zone="", price_usd_per_hour=41.0, spot_interruption=None)],
    )
    report = refresh(["aws", "gcp"], store=store, clients={"aws": aws, "gcp": gcp})
    assert report["aws"].error == "aws: KeyError: 'GpuInfo'"
    assert report["gcp"].written and report.exit_code == 3


def test_regions_go_to_the_cloud_they_belong_to() -> None:
    regions = ["us-east-1", "us-central1", "eastus2", "europe-west4", "ap-southeast-2", "westeurope"]
    assert regions_for("aws", regions) == ["us-east-1", "ap-southeast-2"]
    assert regions_for("gcp", regions) == ["us-central1", "europe-west4"]
    assert regions_for("azure", regions) == ["eastus2", "westeurope"]
    assert regions_for("aws", None) is None


_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from planner.catalog.store import CatalogStore
    from planner.providers.base import FetchResult, Provider
    from planner.refresh import refresh
    from factories import make_offer

    class Pausing:
        # The store's connection, except that it stops inside the write transaction, after the rows went in.
        def __init__(self, db):
            self._db = db
        def __getattr__(self, name):
            return getattr(self._db, name)
        def executemany(self, *args):
            result = self._db.executemany(*args)
            print("writing", flush=True)
            time.sleep(60)
            return result

    class Big(Provider):
        name = "aws"
        extra = "aws"
        credentials_hint = ""
        @classmethod
        def from_environment(cls, **options):
            return cls()
        @property
        def source(self):
            return "killed"
        def fetch(self, regions=None, *, progress=None, previous=()):
            rows = [make_offer(zone=f"use1-az{i}", price_usd_per_hour=70.0 + i) for i in range(500)]
            return FetchResult(rows=rows, regions=["us-east-1"])

    store = CatalogStore(sys.argv[1], seed=False)
    store._db = Pausing(store._db)
    refresh("aws", store=store, clients={"aws": Big()})
    """
)


def test_kill_during_the_store_write_leaves_the_previous_snapshot(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.close()
    script = tmp_path / "killed_refresh.py"
    script.write_text(_KILLED_WRITER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "catalog.sqlite")],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    line = b""
    while time.monotonic() < deadline and b"writing" not in line:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
    assert b"writing" in line, "the refresh never reached its store write"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    with CatalogStore(tmp_path / "catalog.sqlite", seed=False) as reopened:
        assert {s.provider: s.source for s in reopened.current_snapshots()} == {"aws": "previous", "gcp": "previous"}
        assert _current(reopened, "aws") == {("us-east-1", "use1-az1"): 50.0, ("eu-west-1", "euw1-az1"): 60.0}
        assert reopened._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_unreadable_new_row_keeps_the_previous_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    aws = ScriptedProvider(
        "aws",
        [
            make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=49.0, gpu_count=0),
            make_offer(region="eu-west-1", zone="euw1-az1", price_usd_per_hour=62.0),
        ],
    )
    report = refresh("aws", store=store, clients={"aws": aws})
    assert _current(store, "aws") == {("us-east-1", "use1-az1"): 50.0, ("eu-west-1", "euw1-az1"): 62.0}
    assert (report["aws"].rows_written, report["aws"].carried_over, len(report["aws"].rejected)) == (1, 1, 1)


def test_an_implausible_price_keeps_the_previous_one_and_its_date(tmp_path: Path) -> None:
    """Issue 38: one bad field never throws away the good fields beside it; the kept price keeps its own date."""
    store = _store(tmp_path)
    fresh = "2026-11-20T06:00:00+00:00"
    aws = ScriptedProvider(
        "aws",
        [
            make_offer(
                region="us-east-1", zone="use1-az1", price_usd_per_hour=0.0, spot_price_usd_per_hour=20.0, as_of=fresh
            ),
            make_offer(region="eu-west-1", zone="euw1-az1", price_usd_per_hour=62.0, as_of=fresh),
        ],
    )
    report = refresh("aws", store=store, clients={"aws": aws})
    row = store.read_current().set_index("region").loc["us-east-1"]
    # The on-demand price and as_of are January's; the fresh spot price carries its own date.
    assert (row["price_usd_per_hour"], row["as_of"], row["spot_price_usd_per_hour"]) == (50.0, OLD, 20.0)
    assert row["spot_as_of"] == fresh
    assert [(h.field, h.value, h.kept_value, h.kept_as_of) for h in report["aws"].held] == [
        ("price_usd_per_hour", 0.0, 50.0, OLD)
    ]
    info = next(s for s in store.current_snapshots() if s.provider == "aws")
    assert info.as_of == OLD  # the snapshot is as old as the price it could not renew
    assert report.exit_code == 3


def test_snapshot_age_is_that_of_the_oldest_price_it_failed_to_renew(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ok = ScriptedProvider("aws", [make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=52.0)])
    refresh("aws", regions=["us-east-1"], store=store, clients={"aws": ok})
    info = next(s for s in store.current_snapshots() if s.provider == "aws")
    assert info.as_of > OLD  # eu-west-1 was not asked for: its rows keep their own as_of
    failing = ScriptedProvider(
        "aws",
        [make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=53.0)],
        failures=[RegionFailure("eu-west-1", "HTTP 503")],
    )
    refresh("aws", store=store, clients={"aws": failing})
    info = next(s for s in store.current_snapshots() if s.provider == "aws")
    assert info.as_of == OLD  # eu-west-1 should have been renewed and still carries January's price


def test_a_region_of_no_cloud_is_bad_input(tmp_path: Path) -> None:
    from planner.errors import InputError

    with pytest.raises(InputError, match=r"^region 'US East' is not a region code of aws, gcp, azure"):
        refresh("all", regions=["us-east-1", "US East"], store=tmp_path / "c.sqlite")
    with pytest.raises(InputError, match=r"^region 'eastus' is not a region code of aws"):
        refresh("aws", regions=["eastus"], store=tmp_path / "c.sqlite")


def test_a_hung_provider_is_given_up_at_the_time_limit_and_keeps_its_catalog(tmp_path: Path) -> None:
    """A fetch that never returns (a hung socket in a listing) must not hold the refresh nor lose the others."""
    import threading

    store = _store(tmp_path)
    release = threading.Event()

    class Hung(ScriptedProvider):
        def fetch(self, regions: Any = None, *, progress: Any = None, previous: Any = ()) -> FetchResult:
            release.wait(30)
            return super().fetch(regions, progress=progress, previous=previous)

    hung = Hung("aws", [make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=1.0)])
    gcp = ScriptedProvider("gcp", [make_offer(provider="gcp", region="us-central1", zone="")])
    before = store.read_current()
    started = time.monotonic()
    try:
        report = refresh(["aws", "gcp"], store=store, clients={"aws": hung, "gcp": gcp}, time_limit_s=0.5)
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert "time limit" in (report["aws"].error or "")
    assert report["aws"].snapshot_id is None
    after = store.read_current()
    assert after[after["provider"] == "aws"].equals(before[before["provider"] == "aws"])
    # Issue 43: gcp fetched beside the hung provider and had the whole time limit: the hang did not use it up.
    assert report["gcp"].error is None and report["gcp"].written
    assert report.exit_code == 3


def test_live_price_outliers_are_flagged_and_named(tmp_path: Path) -> None:
    store = _store(tmp_path)
    rows = [
        make_offer(region=region, zone="", price_usd_per_hour=price, spot_price_usd_per_hour=spot)
        for region, price, spot in (
            ("us-east-1", 55.0, 30.0),
            ("us-west-2", 55.0, 30.0),
            ("eu-west-1", 20.0, 10.0),  # under 60% of the shape's median: a commitment price?
            ("eu-central-1", 55.0, 60.0),  # spot above on-demand
        )
    ]
    report = refresh("aws", store=store, clients={"aws": ScriptedProvider("aws", rows)})
    current = store.read_current()
    flagged = current[current["provider"] == "aws"].set_index("region")["flags"].str.contains("price_outlier")
    assert flagged.to_dict() == {"us-east-1": False, "us-west-2": False, "eu-west-1": True, "eu-central-1": True}
    assert sum("price outlier" in n for n in report["aws"].notes) == 2


def test_two_refreshes_of_one_provider_for_different_regions_keep_both_updates(tmp_path: Path) -> None:
    """Both read the current catalog before either writes; the store merges by region inside its write lock."""
    import threading

    path = tmp_path / "c.sqlite"
    with CatalogStore(path, seed=False) as store:
        store.write_snapshot(
            "aws",
            [make_offer(region=r, zone="", price_usd_per_hour=50.0) for r in ("us-east-1", "eu-west-1")],
            source="before",
            as_of="2026-10-01T00:00:00+00:00",
        )
    both_fetched = threading.Barrier(2)

    class Racing(ScriptedProvider):
        def fetch(self, regions: Any = None, *, progress: Any = None, previous: Any = ()) -> FetchResult:
            both_fetched.wait(10)
            return super().fetch(regions, progress=progress, previous=previous)

    def run(region: str, price: float) -> None:
        provider = Racing("aws", [make_offer(region=region, zone="", price_usd_per_hour=price)])
        with CatalogStore(path, seed=False) as own:
            refresh("aws", regions=[region], store=own, clients={"aws": provider})

    threads = [threading.Thread(target=run, args=args) for args in (("us-east-1", 41.0), ("eu-west-1", 42.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    with CatalogStore(path, seed=False) as store:
        prices = store.read_current().set_index("region")["price_usd_per_hour"].to_dict()
    assert prices == {"us-east-1": 41.0, "eu-west-1": 42.0}


def test_a_refresh_that_reads_almost_nothing_keeps_the_previous_catalog(tmp_path: Path) -> None:
    """Issue 43: a reply that lost nine in ten offerings is a broken answer, not the cloud's new catalog."""
    store = CatalogStore(tmp_path / "c.sqlite", seed=False)
    before = [make_offer(zone=f"use1-az{i}", price_usd_per_hour=50.0 + i) for i in range(30)]
    store.write_snapshot("aws", before, source="previous", as_of=OLD)
    aws = ScriptedProvider("aws", [make_offer(zone="use1-az0", price_usd_per_hour=51.0)])
    report = refresh("aws", store=store, clients={"aws": aws})
    assert report["aws"].error == (
        "aws: read only 1 valid offerings where its catalog held 30 (under 10%); kept the previous catalog"
    )
    assert report.exit_code == 1
    assert len(store.read_current()) == 30 and len(store.snapshots("aws")) == 1


def test_a_region_the_provider_does_not_have_is_one_line(tmp_path: Path) -> None:
    """Issue 43: `-p lambda --region eu-west-3` stored five Lambda offerings in Paris, where Lambda has no region."""
    from planner.errors import InputError

    with CatalogStore(tmp_path / "c.sqlite") as store:  # the bundled catalog lists Lambda's regions
        lam = ScriptedProvider("lambda", [])
        with pytest.raises(InputError, match=r"^region 'eu-west-3' is not a region of lambda \(lambda: .*us-east-1"):
            refresh("lambda", regions=["eu-west-3"], store=store, clients={"lambda": lam})
        assert lam.asked is None  # refused before any fetch
        # With AWS asked too, eu-west-3 is AWS's alone: Lambda is not asked for it.
        aws = ScriptedProvider("aws", [make_offer(region="eu-west-3", zone="euw3-az1")])
        report = refresh(["aws", "lambda"], regions=["eu-west-3"], store=store, clients={"aws": aws, "lambda": lam})
        assert aws.asked == ["eu-west-3"] and lam.asked is None
        assert report["lambda"].notes == ("no lambda region among eu-west-3",)


def test_rows_outside_the_regions_asked_for_are_dropped_and_named(tmp_path: Path) -> None:
    store = _store(tmp_path)
    lam = ScriptedProvider(
        "lambda",
        [
            make_offer(
                provider="lambda",
                instance_type="gpu_8x_h100_sxm5",
                region=region,
                zone="",
                spot_price_usd_per_hour=None,
                spot_interruption=None,
            )
            for region in ("us-east-1", "eu-west-3")
        ],
    )
    report = refresh("lambda", regions=["us-east-1"], store=store, clients={"lambda": lam})
    assert set(store.read_current().query("provider == 'lambda'")["region"]) == {"us-east-1"}
    assert [str(r) for r in report["lambda"].rejected] == [
        "lambda gpu_8x_h100_sxm5 eu-west-3: region 'eu-west-3' is not among the regions asked for"
    ]


def test_providers_fetch_at_once_each_with_the_whole_time_limit(tmp_path: Path) -> None:
    """A slow provider ahead in the list does not shorten the time of the one after it."""
    store = _store(tmp_path)

    class Slow(ScriptedProvider):
        def fetch(self, regions: Any = None, *, progress: Any = None, previous: Any = ()) -> FetchResult:
            time.sleep(0.6)
            return super().fetch(regions, progress=progress, previous=previous)

    aws = Slow("aws", [make_offer(region="us-east-1", zone="use1-az1", price_usd_per_hour=51.0)])
    gcp = Slow("gcp", [make_offer(provider="gcp", region="us-central1", zone="", spot_interruption=None)])
    # One after the other they need 1.2 s; together 0.6 s, inside the 1 s limit.
    report = refresh(["aws", "gcp"], store=store, clients={"aws": aws, "gcp": gcp}, time_limit_s=1.0)
    assert report["aws"].written and report["gcp"].written and report.exit_code == 0


@pytest.mark.parametrize("limit", [1e10, 0.0, -5.0, float("nan")])
def test_a_time_limit_out_of_range_is_one_line_naming_the_range(tmp_path: Path, limit: float) -> None:
    from planner.errors import InputError

    with pytest.raises(InputError, match=r"^time_limit_s must be a number of seconds above 0 and up to 86400"):
        refresh("aws", store=tmp_path / "c.sqlite", clients={"aws": ScriptedProvider("aws", [])}, time_limit_s=limit)
