"""From logs to report, profile and advice: units, GPU detection, the advice and its money."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.api import estimate
from planner.errors import InputError
from planner.runlogs.advice import advise
from planner.runlogs.calibrate import calibrate
from planner.runlogs.gpu_readers import GpuSample
from planner.runlogs.lines import LogSource
from planner.runlogs.profile import Run
from planner.runlogs.report import UtilisationAccumulator

DATA = Path(__file__).resolve().parents[1] / "data" / "runlogs"


def logs(*names: str) -> list[LogSource]:
    return [LogSource.from_path(DATA / name) for name in names]


def test_megatron_and_dcgm_logs_calibrate_a_profile_in_the_workloads_unit() -> None:
    result = calibrate(logs("megatron.log", "dcgm_exporter.prom"), workload="llama-2-7b", gpus=16)
    assert result.report is not None and result.report.gpu_model == "H100-SXM"
    # Samples per second x the workload's 4,096-token sequences: tokens per second, and the note says so.
    samples = result.training[0].rate
    assert result.throughput == pytest.approx(samples * 4096)  # type: ignore[operator]
    assert any("seq_len 4096" in note for note in result.notes)
    profile = result.profile
    assert profile is not None and (profile.gpu, profile.gpus) == ("H100-SXM", 16)
    assert estimate("llama-2-7b", "H100", 16, **profile.estimate_options()).throughput == pytest.approx(
        result.throughput, rel=1e-12
    )


def test_the_users_figure_replaces_the_logs_and_the_gpu_is_named_by_the_user() -> None:
    result = calibrate(logs("nvidia_smi_units.csv"), workload="llama-2-7b", gpu="A100-80GB", throughput=9000.0)
    assert result.profile is not None and result.profile.throughput == 9000.0
    assert result.profile.gpus == 2 and result.report.tdp_w == 400.0  # type: ignore[union-attr]


def test_earlier_runs_fit_together_with_this_one() -> None:
    earlier = [Run("A100-80GB", 8, 22_000.0)]
    result = calibrate([], workload="llama-2-7b", gpu="H100", gpus=8, throughput=60_000.0, runs=earlier)
    assert result.profile is not None and len(result.profile.runs) == 2
    assert result.profile.held_out_error is not None


def test_without_a_gpu_model_calibration_asks_for_it() -> None:
    with pytest.raises(InputError) as caught:
        calibrate(logs("dcgmi_dmon.txt"), workload="llama-2-7b", throughput=1000.0)
    assert caught.value.field == "gpu"


def test_without_a_workload_the_report_comes_with_a_note() -> None:
    result = calibrate(logs("trainer_state.json", "nvidia_smi_nounits.csv"))
    assert result.profile is None and result.report is not None and result.report.gpu_model == "L4"
    assert any("give the workload" in note for note in result.notes)


def _report(util: float, sm: float | None, power: float, memory_mib: float, seconds: int = 3600) -> object:
    acc = UtilisationAccumulator()
    for t in range(0, seconds, 10):
        for gpu in ("0", "1"):
            acc.add(GpuSample(float(t), gpu, util, sm, None, None, memory_mib, 81920.0, power, None))
    return acc.report("H100-SXM", 700.0)


def test_advice_prices_input_bound_and_power_slack_at_the_offerings_rate() -> None:
    report = _report(util=95.0, sm=0.30, power=250.0, memory_mib=70_000.0)
    found = {item.kind: item for item in advise(report, gpu="H100-SXM", price_usd_per_gpu_hour=4.0)}  # type: ignore[arg-type]
    run_cost = 2 * 1.0 * 4.0  # two GPUs for an hour
    assert found["input-bound"].cost_usd == pytest.approx(0.70 * run_cost)
    assert found["power"].cost_usd == pytest.approx((1 - 250 / 700) * run_cost)
    assert "idle" not in found and "underused" not in found and "smaller-gpu" not in found
    assert "SMs were active 30%" in found["input-bound"].text and "$5.60" in found["input-bound"].text


def test_a_smaller_gpu_is_advised_when_peak_memory_fits_with_margin_and_the_run_is_cheaper() -> None:
    report = _report(util=97.0, sm=0.8, power=600.0, memory_mib=30_000.0)  # 29.3 GiB peak
    prices = {"H100-SXM": 4.0, "A100-40GB": 1.5, "L4": 0.5}

    def speed_on(gpu: str) -> tuple[float | None, bool]:
        # L4 holds 24 GiB: never reached (29.3 GiB x 1.1 does not fit); A100-40GB half the speed.
        return {"H100-SXM": (100.0, True), "A100-40GB": (50.0, True), "L4": (5.0, True)}[gpu]

    found = {
        item.kind: item
        for item in advise(
            report,  # type: ignore[arg-type]
            gpu="H100-SXM",
            price_usd_per_gpu_hour=4.0,
            prices_usd_per_gpu_hour=prices,
            speed_on=speed_on,
        )
    }
    smaller = found["smaller-gpu"]
    assert "A100-40GB" in smaller.text
    # 2 GPU-hours at $4 = $8; on A100-40GB: twice the time at $1.5 = $6.
    assert smaller.cost_usd == pytest.approx(2.0)


def test_no_smaller_gpu_when_it_would_cost_more_at_its_speed() -> None:
    report = _report(util=97.0, sm=0.8, power=600.0, memory_mib=30_000.0)
    found = advise(
        report,  # type: ignore[arg-type]
        gpu="H100-SXM",
        price_usd_per_gpu_hour=4.0,
        prices_usd_per_gpu_hour={"A100-40GB": 3.0},
        speed_on=lambda gpu: (100.0, True) if gpu == "H100-SXM" else (30.0, True),
    )
    assert [item.kind for item in found] == []


def test_idle_and_underused_advice_carry_their_share_of_the_cost() -> None:
    acc = UtilisationAccumulator()
    for t in range(3600):
        acc.add(GpuSample(float(t), "0", 0.0 if t < 1800 else 90.0, None, None, None, None, None, None, None))
    report = acc.report()
    found = {item.kind: item for item in advise(report, gpu=None, price_usd_per_gpu_hour=2.0)}
    assert found["idle"].cost_usd == pytest.approx(1.0)
    assert found["underused"].cost_usd == pytest.approx(0.55 * 2.0)


def test_the_library_prices_advice_from_the_catalogs_cheapest_offering() -> None:
    import pandas as pd
    from factories import make_offer

    import planner

    one_gpu = {"gpu_count": 1.0, "interconnect": "pcie", "spot_price_usd_per_hour": None, "spot_interruption": None}
    catalog = pd.DataFrame(
        [
            make_offer(instance_type="g2-standard-8", gpu="L4", gpu_memory_gib=24, price_usd_per_hour=0.8, **one_gpu),
            make_offer(instance_type="g2-big", gpu="L4", gpu_memory_gib=24, price_usd_per_hour=1.1, **one_gpu),
            make_offer(instance_type="g4dn.xlarge", gpu="T4", gpu_memory_gib=16, price_usd_per_hour=0.5, **one_gpu),
        ]
    )
    result = planner.calibrate(DATA / "nvidia_smi_nounits.csv", catalog=catalog)
    assert "priced at $0.80 per GPU-hour (the cheapest catalog offering)" in result.notes
    found = {item.kind: item for item in result.advice}
    # 9.2 GiB peak (+10%) fits the T4's 16 GiB: without a workload, at the same speed, $0.5 instead of $0.8 an hour.
    hours = result.report.node.hours  # type: ignore[union-attr]
    assert "T4" in found["smaller-gpu"].text
    assert found["smaller-gpu"].cost_usd == pytest.approx(hours * 0.3)
    assert found["underused"].cost_usd == pytest.approx((1 - result.report.node.busy_share) * hours * 0.8)  # type: ignore[union-attr,operator]


def test_the_library_needs_a_log_or_a_figure() -> None:
    import planner

    with pytest.raises(InputError) as caught:
        planner.calibrate([])
    assert caught.value.field == "log"


def test_gpus_of_several_metrics_logs_keep_apart() -> None:
    result = calibrate(logs("dcgmi_dmon.txt", "dcgm_exporter.prom"), gpu="H100")
    assert [usage.gpu for usage in result.report.gpus] == [  # type: ignore[union-attr]
        "dcgm_exporter.prom/0", "dcgm_exporter.prom/1", "dcgmi_dmon.txt/0", "dcgmi_dmon.txt/1",
    ]  # fmt: skip


def test_a_training_log_alone_needs_the_gpu_and_its_count() -> None:
    with pytest.raises(InputError) as caught:
        calibrate(logs("megatron.log"), workload="llama-2-7b", gpu="H100")
    assert caught.value.field == "gpus"
    result = calibrate(logs("megatron.log"), workload="llama-2-7b", gpu="H100", gpus=16)
    assert result.report is None and result.profile is not None and result.advice == ()
