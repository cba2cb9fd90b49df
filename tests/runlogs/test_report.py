"""The utilisation report: busy share, activity, memory, power against TDP, idle stretches, bounded series."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import InputError
from planner.runlogs.gpu_readers import GpuSample
from planner.runlogs.lines import LogSource
from planner.runlogs.readers import gpu_samples
from planner.runlogs.report import SERIES_POINTS, UtilisationAccumulator

DATA = Path(__file__).resolve().parents[1] / "data" / "runlogs"


def sample(time_s: float, gpu: str = "0", util: float | None = 100.0, **fields: float | None) -> GpuSample:
    values: dict[str, float | None] = dict.fromkeys(GpuSample._fields[2:])
    values.update(util_pct=util, **fields)
    return GpuSample(time_s, gpu, **values)  # type: ignore[arg-type]


def test_idle_stretches_count_only_long_quiet_spells() -> None:
    acc = UtilisationAccumulator()
    # 0-99 s busy, 100-189 s idle (90 s), 190-199 busy, 200-229 idle (30 s: too short), 230-299 busy.
    for t in range(300):
        quiet = 100 <= t < 190 or 200 <= t < 230
        acc.add(sample(float(t), util=1.0 if quiet else 95.0))
    usage = acc.report().gpus[0]
    assert usage.idle_stretches == 1
    assert usage.idle_hours * 3600 == pytest.approx(90.0)
    assert usage.longest_idle_s == pytest.approx(90.0)
    assert usage.hours * 3600 == pytest.approx(300.0)
    assert usage.busy_share == pytest.approx((180 * 0.95 + 120 * 0.01) / 300)


def test_an_idle_stretch_running_to_the_end_of_the_log_counts() -> None:
    acc = UtilisationAccumulator()
    for t in range(200):
        acc.add(sample(float(t), util=0.0 if t >= 100 else 90.0))
    assert acc.report().gpus[0].idle_hours * 3600 == pytest.approx(100.0)


def test_node_figures_weigh_gpus_by_their_hours_and_power_against_tdp() -> None:
    acc = UtilisationAccumulator()
    for t in range(10):
        acc.add(sample(float(t), "0", 100.0, power_w=600.0, memory_used_mib=40960.0, memory_total_mib=81920.0))
        acc.add(sample(float(t), "1", 50.0, power_w=300.0, memory_used_mib=20480.0, memory_total_mib=81920.0))
    report = acc.report("H100-SXM", 700.0, ["x.csv"])
    node = report.node
    assert node.busy_share == pytest.approx(0.75) and node.power_mean_w == pytest.approx(450.0)
    assert node.power_share_of_tdp == pytest.approx(450 / 700)
    assert node.memory_peak_gib == pytest.approx(40.0) and node.memory_total_gib == pytest.approx(80.0)
    assert report.gpu_count == 2 and report.interval_s == pytest.approx(1.0)
    frame = report.to_frame()
    assert list(frame["gpu"]) == ["0", "1", "node"]
    text = report.summary()
    assert "2x H100-SXM" in text and "busy 75%" in text and "700 W TDP (64%)" in text


def test_dcgm_sample_reports_sm_and_tensor_activity() -> None:
    acc = UtilisationAccumulator()
    acc.add_all(gpu_samples(LogSource.from_path(DATA / "dcgm_exporter.prom"), "dcgm-prometheus"))
    node = acc.report().node
    assert 0.38 < node.sm_active < 0.44 and 0.21 < node.tensor_active < 0.25  # type: ignore[operator]
    assert node.hours * 3600 == pytest.approx(2 * 4 * 30.0)


def test_the_chart_series_stays_bounded_over_a_long_log() -> None:
    acc = UtilisationAccumulator()
    for t in range(20_000):
        acc.add(sample(float(t), util=float(t % 100), power_w=100.0))
    report = acc.report()
    assert SERIES_POINTS // 2 <= len(report.series) <= SERIES_POINTS
    frame = report.series_frame()
    assert frame["time_s"].is_monotonic_increasing and frame["util_pct"].mean() == pytest.approx(49.5, abs=1.0)


def test_no_samples_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no GPU samples"):
        UtilisationAccumulator().report()
