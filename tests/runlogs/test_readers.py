"""Each log reader against a realistic sample (tests/data/runlogs), format sniffing, and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import InputError
from planner.runlogs.gpu_readers import LogInfo
from planner.runlogs.lines import BoundedSample, LogSource
from planner.runlogs.readers import FORMATS, check_format, detect_format, gpu_samples, training_log

DATA = Path(__file__).resolve().parents[1] / "data" / "runlogs"


def source(name: str) -> LogSource:
    return LogSource.from_path(DATA / name)


def text(name: str, body: str) -> LogSource:
    return LogSource.from_bytes(name, body.encode())


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("nvidia_smi_units.csv", "nvidia-smi"),
        ("nvidia_smi_nounits.csv", "nvidia-smi"),
        ("dcgm_exporter.prom", "dcgm-prometheus"),
        ("dcgmi_dmon.txt", "dcgmi-dmon"),
        ("trainer_state.json", "hf-trainer-state"),
        ("hf_train.log", "hf-log"),
        ("lightning_metrics.csv", "lightning-csv"),
        ("megatron.log", "megatron"),
        ("wandb_history.csv", "wandb-csv"),
    ],
)
def test_every_sample_is_sniffed_as_its_format(name: str, fmt: str) -> None:
    assert detect_format(source(name)) == fmt


def test_an_unknown_log_names_the_formats_known() -> None:
    with pytest.raises(InputError) as caught:
        detect_format(text("notes.txt", "hello\nworld\n"))
    assert caught.value.field == "log"
    assert "notes.txt" in str(caught.value) and "nvidia-smi" in str(caught.value)


def test_an_explicit_format_overrides_sniffing_and_is_checked() -> None:
    # A megatron log read as W&B CSV has no throughput column: the override is obeyed, not second-guessed.
    assert check_format("wandb-csv", source("megatron.log")) == "wandb-csv"
    with pytest.raises(InputError, match="must be one of"):
        check_format("tensorboard", source("megatron.log"))
    assert len(FORMATS) == 8


def test_nvidia_smi_with_units_reads_every_field() -> None:
    samples = list(gpu_samples(source("nvidia_smi_units.csv"), "nvidia-smi"))
    assert len(samples) == 300
    first = samples[0]
    assert first.gpu == "0" and first.util_pct == 100.0
    assert first.memory_used_mib == 61324.0 and first.memory_total_mib == 81920.0
    assert first.power_w == pytest.approx(341.38) and first.sm_clock_mhz == 1410.0
    # Clock times: the second sample of GPU 0 is one second after the first.
    assert samples[2].time_s - first.time_s == pytest.approx(1.0)
    assert first.sm_active is None


def test_nvidia_smi_nounits_with_name_and_a_missing_value() -> None:
    info = LogInfo("x")
    samples = list(gpu_samples(source("nvidia_smi_nounits.csv"), "nvidia-smi", info))
    assert info.models == {"NVIDIA L4"}
    assert len(samples) == 40
    assert samples[7].power_w is None and samples[8].power_w is not None
    assert samples[0].memory_total_mib == 23034.0


def test_nvidia_smi_without_timestamps_spaces_samples_by_the_interval() -> None:
    body = "index, utilization.gpu [%]\n0, 50 %\n1, 60 %\n0, 70 %\n1, 80 %\n"
    samples = list(gpu_samples(text("t.csv", body), "nvidia-smi", interval_s=2.0))
    assert [(s.gpu, s.time_s, s.util_pct) for s in samples] == [
        ("0", 0.0, 50.0),
        ("1", 0.0, 60.0),
        ("0", 2.0, 70.0),
        ("1", 2.0, 80.0),
    ]


def test_dcgm_exporter_scrapes_become_one_sample_per_gpu_and_scrape() -> None:
    info = LogInfo("x")
    samples = list(gpu_samples(source("dcgm_exporter.prom"), "dcgm-prometheus", info))
    assert info.models == {"NVIDIA H100 80GB HBM3"}
    assert [(s.gpu, s.time_s) for s in samples[:4]] == [("0", 0.0), ("1", 0.0), ("0", 30.0), ("1", 30.0)]
    assert len(samples) == 8
    first = samples[0]
    assert 0.38 <= first.sm_active <= 0.44 and 0.21 <= first.tensor_active <= 0.25  # type: ignore[operator]
    assert first.memory_used_mib == 52300.0 and first.memory_total_mib == 81559.0
    assert first.util_pct in (96.0, 99.0, 100.0) and first.power_w is not None


def test_dcgm_exporter_timestamps_are_read_as_milliseconds() -> None:
    body = (
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 90 1700000000000\nDCGM_FI_DEV_GPU_UTIL{gpu="1"} 80 1700000000000\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 70 1700000005000\n'
    )
    samples = list(gpu_samples(text("m.prom", body), "dcgm-prometheus"))
    assert [(s.gpu, s.time_s, s.util_pct) for s in samples] == [
        ("0", 1700000000.0, 90.0),
        ("1", 1700000000.0, 80.0),
        ("0", 1700000005.0, 70.0),
    ]


def test_dcgmi_dmon_rows_repeat_headers_and_missing_values() -> None:
    samples = list(gpu_samples(source("dcgmi_dmon.txt"), "dcgmi-dmon"))
    assert len(samples) == 14
    assert samples[0].gpu == "0" and samples[0].util_pct == 97.0 and samples[0].sm_active == pytest.approx(0.721)
    assert samples[0].memory_used_mib == 71234.0 and samples[0].power_w == pytest.approx(611.142)
    assert [s.time_s for s in samples[:4]] == [0.0, 0.0, 1.0, 1.0]
    assert samples[-1].util_pct is None and samples[-1].power_w == pytest.approx(112.441)


def test_trainer_state_takes_the_training_speed_not_the_evaluation_speed() -> None:
    log = training_log(source("trainer_state.json"), "hf-trainer-state")
    assert log.rate == pytest.approx(23.436) and log.rate_unit == "samples" and not log.per_gpu
    assert log.found_in == "train_samples_per_second"


def test_hf_console_log_reads_printed_dicts_and_the_metrics_block() -> None:
    log = training_log(source("hf_train.log"), "hf-log")
    assert log.rate == pytest.approx(23.436) and log.readings == 2


def test_lightning_prefers_all_devices_tokens_over_per_device_and_samples() -> None:
    log = training_log(source("lightning_metrics.csv"), "lightning-csv")
    assert log.found_in == "train/items_per_sec" and log.rate_unit == "tokens" and not log.per_gpu
    assert 195_000 < log.rate < 210_000  # type: ignore[operator]


def test_megatron_samples_per_second_is_global_batch_over_iteration_time_after_warmup() -> None:
    log = training_log(source("megatron.log"), "megatron")
    # 512 samples per 11.88-11.94 s iteration; the slow first interval (24.8 s) is warm-up and left out.
    assert 512 / 11.94 < log.rate < 512 / 11.88  # type: ignore[operator]
    assert 480 < log.tflops_per_gpu < 487  # type: ignore[operator]


def test_megatron_without_batch_size_uses_consumed_samples() -> None:
    line = " iteration {it}/ 100 | consumed samples: {c} | elapsed time per iteration (ms): 500.0 |\n"
    body = "".join(line.format(it=it, c=it * 64) for it in (10, 20, 30))
    log = training_log(text("m.log", body), "megatron")
    assert log.rate == pytest.approx(64 / 0.5)


def test_wandb_history_and_panel_exports() -> None:
    log = training_log(source("wandb_history.csv"), "wandb-csv")
    assert log.found_in == "throughput/tokens_per_sec" and 73_000 < log.rate < 75_000  # type: ignore[operator]
    assert 360 < log.tflops_per_gpu < 380  # type: ignore[operator]
    panel = 'Step,"run-7 - train/tokens_per_second","run-7 - train/tokens_per_second__MIN"\n10,1000,1\n20,1200,2\n'
    assert detect_format(text("panel.csv", panel)) == "wandb-csv"
    assert training_log(text("panel.csv", panel), "wandb-csv").rate == pytest.approx(1100)


@pytest.mark.parametrize(
    ("name", "fmt", "body", "line", "says"),
    [
        ("a.csv", "nvidia-smi", "index, utilization.gpu [%]\n0, 50 %\n0, 5O %\n", 3, "not a number"),
        ("b.csv", "nvidia-smi", "index, utilization.gpu [%]\n0, 50 %\n0\n", 3, "1 values"),
        ("c.prom", "dcgm-prometheus", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\nDCGM_FI_DEV_GPU_UTIL{gpu="0" 5\n', 2, ""),
        ("d.txt", "dcgmi-dmon", "#Entity GPUTL POWER\nGPU 0 97\n", 2, "1 values"),
        ("e.json", "hf-trainer-state", '{"log_history": [\n  {"loss": 1.0,}\n]}', 2, "not valid JSON"),
        ("f.csv", "lightning-csv", "step,train/samples_per_sec\n1,10\n2,ten\n", 3, "not a number"),
        ("g.log", "megatron", " iteration 1/ 9 | elapsed time per iteration (ms): x |\n", 1, "elapsed"),
        ("h.log", "hf-log", "{'train_samples_per_second': 12.0, 'epoch': [}\n", 1, "does not parse"),
    ],
)
def test_malformed_input_is_one_line_naming_file_and_line(name: str, fmt: str, body: str, line: int, says: str) -> None:
    src = text(name, body)

    def read() -> object:
        return (
            list(gpu_samples(src, fmt))
            if fmt in ("nvidia-smi", "dcgm-prometheus", "dcgmi-dmon")
            else training_log(src, fmt)
        )

    with pytest.raises(InputError) as caught:
        read()
    message = str(caught.value)
    assert caught.value.field == "log" and "\n" not in message
    assert f"{name} line {line}:" in message and says in message


def test_a_log_without_throughput_says_so() -> None:
    with pytest.raises(InputError, match="no training throughput"):
        training_log(text("m.csv", "step,train_loss\n1,2.0\n"), "lightning-csv")


def test_missing_paths_and_directories_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        LogSource.from_path(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="directory"):
        LogSource.from_path(tmp_path)


def test_bounded_sample_keeps_at_most_its_size_and_spans_the_stream() -> None:
    kept = BoundedSample(size=64)
    for value in range(100_000):
        kept.add(float(value))
    assert len(kept.values) <= 64 and kept.seen == 100_000
    assert kept.values[0] == 0.0 and kept.values[-1] > 90_000
    # The median after the first tenth, of an evenly spaced subsample of 0..99,999.
    assert 50_000 < kept.steady() < 60_000  # type: ignore[operator]
