"""Bad input, wherever it enters: one line naming the field (library) or the flag (CLI), exit code 2, never a trace.

One row per finding of the hardening review: huge integers, infinities, NaN filters, zero heads, negative --top,
the user's evidence (--efficiency, --measured) and work given in another workload's unit.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from conftest import CliRun

import planner
from planner.errors import InputError

HUGE = "1" + "0" * 400


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--gpus", HUGE], "--gpus"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--layers", HUGE], "--layers"),
        (["rank", "-w", "llama-3-8b", "--max-nodes", HUGE], "--max-nodes"),
        (
            ["estimate", "-w", "transformer", "--layers", "2", "--hidden", "128", "--params", "inf", "-g", "H100"],
            "--params",
        ),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--tokens", "inf", "-f", "json"], "--tokens"),
        (["rank", "-w", "llama-3-8b", "--tokens", "nan"], "--tokens"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--efficiency", "2"], "--efficiency"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--efficiency", "0"], "--efficiency"),
        (["rank", "-w", "llama-3-8b", "--efficiency", "1.5"], "--efficiency"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--measured", "-1", "--measured-on", "H100"], "--measured"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--measured", "5"], "--measured"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--measured", "5", "--measured-on", "H100:x"], "--measured-on"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--heads", "0"], "--heads"),
        (["rank", "-w", "llama-3-8b", "--top", "-1"], "--top"),
        (["rank", "-w", "llama-3-8b", "--top", "0"], "--top"),
        (["offers", "--max-price", "nan"], "--max-price"),
        (["offers", "--min-gpus", "nan"], "--min-gpus"),
        (["offers", "--min-gpu-memory", "inf"], "--min-gpu-memory"),
        (["rank", "-w", "llama-3-8b", "--deadline-hours", "nan"], "--deadline-hours"),
        (["rank", "-w", "llama-3-8b", "--budget-usd", "inf"], "--budget-usd"),
        (["rank", "-w", "llama-3-8b", "--max-age", "nan"], "--max-age"),
        (["rank", "-w", "llama-3-8b", "--checkpoint-interval-hours", "0"], "--checkpoint-interval-hours"),
        (["compare", "-w", "llama-3-8b"], "--gpu"),
        (["rank", "-w", "resnet50", "--seq-len", "128"], "--seq-len"),
        (["rank", "-w", "llama-3-8b", "--instance", "p9.huge"], "--instance"),
        # What click itself refuses (a value it cannot read, a missing option) is one line too, not a usage block.
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--gpus", "1.5"], "--gpus"),
        (["rank", "-w", "llama-3-8b", "--tokens", "abc"], "--tokens"),
        (["catalog", "history", "--instance", "p5.48xlarge"], "--region"),
        (["estimate", "-w", "llama-3-8b", "-g", "H100", "--gpus", "100000000"], "--gpus"),
        (["estimate", "-w", "resnet50", "-g", "H100", "--precision", "fp8"], "--precision"),
        # A share, not a percent; and LoRA's alone.
        (
            ["estimate", "-w", "llama-3-8b", "-g", "H100", "--mode", "lora", "--trainable-share", "0.65"],
            "--trainable-share",
        ),
        (["rank", "-w", "llama-3-8b", "--trainable-share", "0.01"], "--trainable-share"),
    ],
)
def test_cli_bad_input_is_one_line_naming_the_flag_and_exit_2(cli: CliRun, args: list[str], flag: str) -> None:
    code, out, err = cli(*args)
    assert code == 2, (code, err)
    assert out == ""
    assert err.startswith(f"error: {flag} ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "unexpected" not in err
    assert "_" not in err.split()[1], "a library field name leaked into a CLI message"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: planner.rank("llama-3-8b", deadline_hours=-1), "deadline_hours"),
        (lambda: planner.rank("llama-3-8b", budget_usd=math.nan), "budget_usd"),
        (lambda: planner.rank("llama-3-8b", max_nodes=10**400), "max_nodes"),
        (lambda: planner.rank("llama-3-8b", top=-1), "top"),
        (lambda: planner.rank("llama-3-8b", pricing="cheap"), "pricing"),
        (lambda: planner.rank("llama-3-8b", min_gpu_memory_gib=-1), "min_gpu_memory_gib"),
        (lambda: planner.rank("llama-3-8b", instance_type="p9.huge"), "instance_type"),
        (lambda: planner.rank("llama-3-8b", deadlines=4), "deadlines"),
        (lambda: planner.rank("resnet50", tokens=1e6), "tokens"),
        (lambda: planner.estimate("resnet50", "A100", 8, tokens=1e6), "tokens"),
        (lambda: planner.estimate("llama-3-8b", "H100", heads=0), "heads"),
        (lambda: planner.estimate("llama-3-8b", "H100", 10**400), "gpus"),
        (lambda: planner.estimate("llama-3-8b", "H100", efficiency=2.0), "efficiency"),
        (lambda: planner.estimate("llama-3-8b", "H100", network_gbps=math.inf), "network_gbps"),
        (lambda: planner.offers(max_price_usd_per_hour=math.nan), "max_price_usd_per_hour"),
        (lambda: planner.offers(min_gpus=4, max_gpus=2), "min_gpus"),
        (lambda: planner.RankRequest(max_nodes=0), "max_nodes"),
        # A preset's own fields (its unit, kind, FLOPs) are not the user's to set: never silently reread.
        (lambda: planner.estimate("llama-3-8b", "H100", 8, work=2e9, work_unit="images"), "work_unit"),
        (lambda: planner.estimate("llama-3-8b", "H100", 8, kind="cnn"), "kind"),
        (lambda: planner.rank("llama-3-8b", work=2e9, flops_per_sample=3.0), "flops_per_sample"),
        # Wrong types are bad input too, never a Python error from deep inside.
        (lambda: planner.estimate("llama-3-8b", None), "gpu"),
        (lambda: planner.resolve_gpu(123), "gpu"),  # type: ignore[arg-type]
        (lambda: planner.resolve_gpu("A100", memory_gib="80"), "memory_gib"),  # type: ignore[arg-type]
        (lambda: planner.resolve_gpu("A100", memory_gib=math.nan), "memory_gib"),
        (lambda: planner.offers(gpu=100), "gpu"),  # type: ignore[arg-type]
        (lambda: planner.rank("llama-3-8b", request={"deadline_hours": 3}), "request"),  # type: ignore[arg-type]
        (lambda: planner.rank("llama-3-8b", catalog="x"), "catalog"),  # type: ignore[arg-type]
        (lambda: planner.compare("llama-3-8b", instance_types=["p9.x"]), "instance_types"),
        (lambda: planner.catalog_history("p9.xlarge", "us-east-1"), "instance_type"),
        (lambda: planner.catalog_history("p5.48xlarge", "us-east-1", provider="oracle"), "provider"),
        # A precision none of the asked GPUs has is the input's fault, whichever variants the name covers.
        (lambda: planner.rank("llama-3-8b", tokens=1e9, gpu="V100", precision="fp8"), "precision"),
    ],
)
def test_library_bad_input_names_the_field_never_a_flag(call: Any, field: str) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.field == field
    message = str(caught.value)
    assert message.startswith(f"{field} ") and "\n" not in message
    assert "--" not in message, "a CLI flag leaked into a library message"
    assert caught.value.exit_code == 2


def test_a_message_pointing_to_the_library_names_the_command_in_the_cli(cli: CliRun) -> None:
    with pytest.raises(planner.UnknownGpuError) as caught:
        planner.estimate("llama-3-8b", gpu="Z100")
    assert str(caught.value).endswith("planner.hardware_table() lists the known ones")
    _code, _out, err = cli("estimate", "-w", "llama-3-8b", "--gpu", "Z100")
    assert err.rstrip().endswith("`gpuplan gpus` lists the known ones") and "planner." not in err, err


def test_an_unknown_gpu_in_the_users_measurement_is_bad_input_everywhere(cli: CliRun) -> None:
    code, _out, err = cli("rank", "-w", "llama-3-8b", "--measured", "1000", "--measured-on", "X200")
    assert code == 2 and err.startswith("error: --measured-on ") and err.count("\n") == 1, err
    with pytest.raises(InputError) as caught:
        planner.rank("llama-3-8b", tokens=1e9, measured=1000.0, measured_on="X200")
    assert caught.value.field == "measured_on"


def test_a_field_given_twice_names_it() -> None:
    with pytest.raises(InputError) as caught:
        planner.rank("llama-3-8b", tokens=1e9, request=planner.RankRequest(top=3), top=5)
    assert caught.value.field == "top" and "request" in str(caught.value)


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "-w", "llama-3-8b", "--gpu", "Z100"],
        ["rank", "-w", "llama-3-8b", "--gpu", "Z100"],
        ["compare", "-w", "llama-3-8b", "--gpu", "H100", "--gpu", "Z100"],
        ["offers", "--gpu", "Z100"],
    ],
)
def test_an_unknown_gpu_names_the_flag_and_suggests(cli: CliRun, args: list[str]) -> None:
    code, out, err = cli(*args)
    assert code == 2 and out == "", (code, err)
    assert err.startswith("error: --gpu names an unknown GPU 'Z100' (did you mean ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: planner.estimate("llama-3-8b", gpu="Z100"), "gpu"),
        (lambda: planner.rank("llama-3-8b", tokens=1e9, gpu="Z100"), "gpu"),
        (lambda: planner.offers(gpu="Z100"), "gpu"),
        (lambda: planner.compare("llama-3-8b", tokens=1e9, gpus=["H100", "Z100"]), "gpus"),
    ],
)
def test_an_unknown_gpu_names_the_field_and_stays_an_unknown_gpu_error(call: Any, field: str) -> None:
    with pytest.raises(planner.UnknownGpuError) as caught:
        call()
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field} names an unknown GPU 'Z100' (did you mean ")


@pytest.mark.parametrize(
    ("call", "field", "close"),
    [
        (lambda: planner.rank("llama-3-8b", dealine_hours=3), "dealine_hours", "deadline_hours"),
        (lambda: planner.rank("llama-3-8b", provder="aws"), "provder", "provider"),
        (lambda: planner.estimate("llama-3-8b", "H100", efficency=0.3), "efficency", "efficiency"),
    ],
)
def test_a_mistyped_keyword_suggests_the_close_one(call: Any, field: str, close: str) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field} is not an argument here (did you mean {close}")


def test_work_in_images_or_samples_from_the_cli(cli: CliRun) -> None:
    # ResNet-50 counts images: --images (or --samples) gives them, as the library's images= does.
    base = ["estimate", "-w", "resnet50", "-g", "H100", "-f", "json"]
    _, by_images, _ = cli(*base, "--images", "1e8")
    _, by_samples, _ = cli(*base, "--samples", "1e8")
    _, by_work, _ = cli(*base, "--tokens", "1e8")
    assert by_images == by_samples == by_work and "1e+08 images" in by_images
    # A unit the workload does not count in is bad input naming the flag.
    code, _, err = cli("rank", "-w", "llama-3-8b", "--images", "1e8")
    assert code == 2 and err.startswith("error: --images does not apply to llama-3-8b"), err
