"""The hardware table and the GPU name resolver."""

from __future__ import annotations

import pytest

from planner.errors import UnknownGpuError
from planner.hardware import GpuSpec, gpu_table, lookup, resolve_gpu

REQUIRED = [
    "V100-16GB", "V100-32GB", "V100-PCIe-16GB", "V100-PCIe-32GB", "T4", "A10G", "A10", "L4", "A100-40GB", "A100-80GB",
    "A100-PCIe-40GB", "A100-PCIe-80GB", "L40S", "H100-SXM", "H100-PCIe", "H100-NVL", "H200", "GH200", "B200", "MI300X",
]  # fmt: skip


def test_every_required_variant_has_a_sourced_row() -> None:
    table = gpu_table()
    for gpu in REQUIRED:
        spec = table[gpu]
        assert spec.source and spec.source_date
        assert spec.memory_gib > 0 and spec.memory_bandwidth_gbps > 0 and spec.fp16_tflops > 0 and spec.tdp_w > 0


def test_every_gpu_names_its_memory_type() -> None:
    # The power bound groups GPUs by memory family (planner.perf.ceilings.memory_family): a typo would move a GPU into
    # the other family's peers without a word.
    known = {"HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR6", "GDDR6X", "GDDR7"}
    for spec in _gpus():
        assert spec.memory_type in known, (spec.id, spec.memory_type)
    assert resolve_gpu("H100-PCIe").memory_type.startswith("HBM") and resolve_gpu("L40S").memory_type == "GDDR6"


def _gpus() -> list[GpuSpec]:
    """The GPUs of the table (its Cloud TPU rows have their own test)."""
    return [spec for spec in gpu_table().values() if spec.accelerator_kind == "gpu"]


def test_tpus_share_the_table_with_their_own_kind() -> None:
    # The catalog, the ranking and estimate() find a TPU as they find a GPU; the kind sends it to its own station.
    tpus = {spec.id: spec for spec in gpu_table().values() if spec.accelerator_kind == "tpu"}
    assert set(tpus) == {"TPU-v5e", "TPU-v5p", "TPU-v6e", "TPU-v7"}
    assert resolve_gpu("trillium").id == "TPU-v6e" and resolve_gpu("tpu7x").id == "TPU-v7"
    for spec in tpus.values():
        assert spec.source and spec.source_date and spec.fp16_tflops > 0 and spec.memory_gib > 0
        assert spec.fp8_tflops is None or spec.fp8_tflops == 2 * spec.fp16_tflops
    assert resolve_gpu("H100-SXM").accelerator_kind == "gpu"


def test_specs_are_consistent() -> None:
    for spec in _gpus():
        assert spec.fp16_tflops >= spec.fp32_tflops * 0.9 or spec.vendor == "amd", spec.id
        if spec.fp8_tflops is not None:
            assert spec.fp8_tflops >= spec.fp16_tflops, spec.id
        assert spec.supports("fp8") == (spec.architecture in ("ada", "hopper", "blackwell", "cdna3", "cdna4"))
        assert spec.supports("bf16") == (spec.architecture not in ("volta", "turing"))


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("V100", "V100-16GB"), ("v100-32gb", "V100-32GB"), ("V100-PCIe", "V100-PCIe-16GB"), ("A100", "A100-40GB"),
        ("A100-40GB", "A100-40GB"), ("a100-80gb", "A100-80GB"), ("A100-PCIe-80GB", "A100-PCIe-80GB"), ("H100", "H100-SXM"),
        ("H100-SXM", "H100-SXM"), ("h100-pcie", "H100-PCIe"), ("H100 NVL", "H100-NVL"), ("H200", "H200"), ("B200", "B200"),
        ("GH200", "GH200"), ("L4", "L4"), ("t4", "T4"), ("A10G", "A10G"), ("L40S", "L40S"), ("A10", "A10"),
        ("nvidia-tesla-v100", "V100-16GB"), ("nvidia-tesla-t4", "T4"), ("nvidia-l4", "L4"),
        ("nvidia-tesla-a100", "A100-40GB"), ("nvidia-a100-80gb", "A100-80GB"), ("nvidia-h100-80gb", "H100-SXM"),
        ("nvidia-h100-mega-80gb", "H100-SXM"), ("ND A100 v4", "A100-40GB"), ("ND96amsr_A100_v4", "A100-80GB"),
        ("Standard_ND96amsr_A100_v4", "A100-80GB"), ("NC A100 v4", "A100-PCIe-80GB"), ("ND H100 v5", "H100-SXM"),
        ("NC H100 v5", "H100-NVL"), ("NCasT4_v3", "T4"), ("NVadsA10_v5", "A10"), ("NCv3", "V100-PCIe-16GB"),
        ("MI325X", "MI325X"), ("Instinct MI325X", "MI325X"), ("AMD Instinct MI355X", "MI355X"), ("mi355x", "MI355X"),
        ("H200-NVL", "H200-NVL"), ("H200 NVL", "H200-NVL"), ("H100-SXM5-96GB", "H100-SXM-96GB"),
    ],
)  # fmt: skip
def test_every_spelling_resolves(name: str, gpu: str) -> None:
    assert resolve_gpu(name).id == gpu


@pytest.mark.parametrize(
    ("name", "memory_gib", "gpu"),
    [("V100", 32, "V100-32GB"), ("A100", 80, "A100-80GB"), ("A100", 40, "A100-40GB"), ("H100", 80, "H100-SXM"),
     ("H200", 141, "H200"), ("A10G", 22.35, "A10G"), ("L40S", 44.7, "L40S"), ("B200", 179.1, "B200")],
)  # fmt: skip
def test_cloud_memory_picks_the_variant(name: str, memory_gib: float, gpu: str) -> None:
    assert resolve_gpu(name, memory_gib).id == gpu


def test_ambiguous_name_says_what_it_assumed() -> None:
    resolution = lookup("A100")
    assert resolution.note is not None and "A100-40GB" in resolution.note
    assert lookup("A100-80GB").note is None


def test_unknown_name_suggests() -> None:
    with pytest.raises(UnknownGpuError, match=r"unknown GPU 'H1000' \(did you mean H100"):
        resolve_gpu("H1000")
    with pytest.raises(UnknownGpuError, match="unknown GPU 'banana'"):
        resolve_gpu("banana")


def test_the_library_hardware_table_names_fields_and_says_where_the_rates_come_from() -> None:
    import planner

    frame = planner.hardware_table()
    assert list(frame["gpu"]) == list(planner.gpu_table())
    rows = frame.set_index("gpu")
    assert rows.loc["RTX-6000-Ada", "sustained_source"] == "power bound (L4)"
    assert rows.loc["A10", "sustained_source"] == "measured"
    assert rows.loc["A10", "sustained_fp16_tflops"] < rows.loc["A10", "fp16_tflops"] / 2
    assert rows.loc["H100-SXM", "sustained_fp16_tflops"] == pytest.approx(794.5)
    assert rows.loc["B200", "sustained_fp32_source"] == "measured"
    assert not any(column.startswith("--") or "-" in column for column in frame.columns)


def test_a_memory_and_power_variant_is_its_base_with_its_own_memory_and_power() -> None:
    # data/gpu_variants.csv: a row naming its base GPU, not a code path.
    base, variant = resolve_gpu("MI300X"), resolve_gpu("MI325X")
    assert variant.base == "MI300X" and base.base is None
    for rate in ("fp32_tflops", "tf32_tflops", "fp16_tflops", "fp8_tflops", "bf16_supported", "architecture"):
        assert getattr(variant, rate) == getattr(base, rate), rate
    assert (variant.memory_gib, variant.memory_bandwidth_gbps, variant.tdp_w) == (256, 6000, 1000)
    assert variant.memory_type == "HBM3e" and variant.vendor == "amd" and variant.form_factor == "oam"
    h100, capped = resolve_gpu("H100-SXM"), resolve_gpu("H100-SXM5-96GB")
    assert capped.fp16_tflops == h100.fp16_tflops and capped.fp8_tflops == h100.fp8_tflops
    assert (capped.memory_gib, capped.tdp_w) == (96, 500)
    # What it does not give, it inherits.
    assert capped.memory_bandwidth_gbps == h100.memory_bandwidth_gbps and capped.nvlink_gbps == h100.nvlink_gbps


def test_a_cloud_reporting_96_gb_h100s_gets_the_96_gb_variant() -> None:
    assert resolve_gpu("H100", 96).id == "H100-SXM-96GB"
    assert resolve_gpu("H100", 80).id == "H100-SXM"
