"""GPU hardware specs (``data/gpus.csv``) and the resolver from every spelling to one canonical id.

Users type ``a100``, AWS says ``A100`` with 40960 MiB, Google says ``nvidia-tesla-a100`` and Azure sells
``Standard_ND96asr_v4``: all of them resolve here, and nowhere else, to ``A100-40GB``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from types import MappingProxyType

from planner import checks
from planner._data import data_dir
from planner.errors import InputError, UnknownGpuError

# How the GPUs inside one instance talk: an NVSwitch fabric, NVLink bridges, or PCIe only.
INTERCONNECTS = ("nvswitch", "nvlink", "pcie")

# Precisions a GPU may support, in the order the CLI lists them.
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "nvfp4", "mxfp4")
# 4-bit floating point (E2M1 with block scales: NVIDIA's NVFP4, 16-element blocks; OCP's MXFP4, 32), run on Blackwell's
# FP4 tensor cores at the peaks of data/gpu_fp4_peaks.csv.
FP4_PRECISIONS = ("nvfp4", "mxfp4")
# Bytes of one stored element (weights, activations, what collectives exchange) at each training precision. FP8 and
# FP4 training (Transformer Engine) run their GEMMs in 8 or 4 bits but keep BF16 bytes: master weights, activations,
# norms, attention and element-wise work stay in BF16. TF32 is an FP32 storage format. Every byte count reads this.
ELEMENT_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 2.0,
    "nvfp4": 2.0,
    "mxfp4": 2.0,
}
# Bytes of one matmul operand as the tensor cores consume it: FP8 runs twice BF16's FLOPs on half the bytes, FP4 four
# times on a quarter (its block scales aside), TF32 half on twice.
OPERAND_BYTES: dict[str, float] = {
    "nvfp4": 0.5,
    "mxfp4": 0.5,
    "fp8": 1.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "tf32": 4.0,
    "fp32": 4.0,
}


@dataclass(frozen=True)
class GpuSpec:
    """One GPU variant. Throughputs are dense peaks (no sparsity) in TFLOP/s."""

    id: str
    name: str
    vendor: str
    architecture: str
    form_factor: str
    memory_gib: float
    memory_bandwidth_gbps: float  # GB/s
    memory_type: str  # HBM2, HBM2e, HBM3, HBM3e, GDDR6, GDDR6X, GDDR7
    fp32_tflops: float
    tf32_tflops: float | None
    fp16_tflops: float  # FP16 (and BF16 where supported) tensor-core peak
    bf16_supported: bool
    fp8_tflops: float | None
    nvlink_gbps: float | None  # GB/s, bidirectional, per GPU
    pcie_gen: int
    tdp_w: float
    datacenter: bool
    source: str
    source_date: str
    notes: str
    # "gpu", or "tpu" for a Cloud TPU chip (data/tpus.csv): the performance model sends each to its own station.
    accelerator_kind: str = "gpu"
    # A memory/power variant (data/gpu_variants.csv) names the GPU whose die and peaks it shares; None for a die's row.
    base: str | None = None
    # Dense FP4 peaks per 4-bit format the tensor cores run ((precision, TFLOP/s) pairs; data/gpu_fp4_peaks.csv).
    fp4_tflops: tuple[tuple[str, float], ...] = ()

    def supports(self, precision: str) -> bool:
        """Whether the GPU runs ``precision`` natively (TF32 on Ampere+, BF16 on Ampere+, FP8 on Ada+)."""
        if precision in ("fp32", "fp16"):
            return True
        if precision == "tf32":
            return self.tf32_tflops is not None
        if precision == "bf16":
            return self.bf16_supported
        if precision == "fp8":
            return self.fp8_tflops is not None
        return precision in dict(self.fp4_tflops)

    def peak_tflops(self, precision: str) -> float:
        """Dense peak for ``precision``; TF32 falls back to FP32 where the GPU has no TF32 path."""
        if precision == "fp32":
            return self.fp32_tflops
        if precision == "tf32":
            return self.tf32_tflops if self.tf32_tflops is not None else self.fp32_tflops
        if precision in ("fp16", "bf16"):
            return self.fp16_tflops
        if precision == "fp8" and self.fp8_tflops is not None:
            return self.fp8_tflops
        if precision in dict(self.fp4_tflops):
            return dict(self.fp4_tflops)[precision]
        raise ValueError(f"{self.id} has no {precision} peak")


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving a name: the spec and, for an ambiguous name, what was assumed."""

    spec: GpuSpec
    note: str | None = None


def _key(name: str) -> str:
    """Normalise a spelling: case, spaces, dashes and underscores do not matter; ``Standard_`` is dropped."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    return key.removeprefix("standard")


def _opt_float(value: str) -> float | None:
    return float(value) if value.strip() else None


def gpu_table() -> Mapping[str, GpuSpec]:
    """All GPU variants keyed by canonical id, in file order: a read-only view of the one table every part of the
    planner reads (a caller's change would otherwise reach them all)."""
    return MappingProxyType(_gpu_specs())


def supported_precisions(spec: GpuSpec) -> tuple[str, ...]:
    """The precisions ``spec`` trains in natively, in ``PRECISIONS`` order."""
    return tuple(p for p in PRECISIONS if spec.supports(p))


@cache
def _fp4_peaks() -> dict[str, tuple[tuple[str, float], ...]]:
    """GPU id -> its dense FP4 peaks (``data/gpu_fp4_peaks.csv``)."""
    peaks: dict[str, list[tuple[str, float]]] = {}
    with (data_dir() / "gpu_fp4_peaks.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["precision"] not in FP4_PRECISIONS:
                raise RuntimeError(f"gpu_fp4_peaks.csv: {row['gpu']} names unknown precision {row['precision']!r}")
            peaks.setdefault(row["gpu"], []).append((row["precision"], float(row["dense_tflops"])))
    return {gpu: tuple(pairs) for gpu, pairs in peaks.items()}


@cache
def _gpu_specs() -> dict[str, GpuSpec]:
    specs: dict[str, GpuSpec] = {}
    fp4 = _fp4_peaks()
    with (data_dir() / "gpus.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            specs[row["gpu"]] = GpuSpec(
                id=row["gpu"],
                name=row["name"],
                vendor=row["vendor"],
                architecture=row["architecture"],
                form_factor=row["form_factor"],
                memory_gib=float(row["memory_gib"]),
                memory_bandwidth_gbps=float(row["memory_bandwidth_gbps"]),
                memory_type=row["memory_type"],
                fp32_tflops=float(row["fp32_tflops"]),
                tf32_tflops=_opt_float(row["tf32_tflops"]),
                fp16_tflops=float(row["fp16_tflops"]),
                bf16_supported=row["bf16_supported"] == "true",
                fp8_tflops=_opt_float(row["fp8_tflops"]),
                nvlink_gbps=_opt_float(row["nvlink_gbps"]),
                pcie_gen=int(row["pcie_gen"]),
                tdp_w=float(row["tdp_w"]),
                datacenter=row["datacenter"] == "true",
                source=row["source"],
                source_date=row["source_date"],
                notes=row["notes"],
                fp4_tflops=fp4.get(row["gpu"], ()),
            )
    unknown = sorted(set(fp4) - set(specs))
    if unknown:
        raise RuntimeError(f"gpu_fp4_peaks.csv: unknown GPU {unknown[0]!r}")
    with (data_dir() / "gpu_variants.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            specs[row["gpu"]] = _variant(specs, row)
    specs.update(_tpu_specs())
    return specs


def _tpu_specs() -> dict[str, GpuSpec]:
    """Cloud TPU chips in the same table, so every spelling, catalog row and ranking resolves them alike. A TPU's
    matrix units run BF16 (and FP8 on TPU7x); it has no published FP32 or TF32 matrix peak (0 and None here), no
    NVLink or PCIe, and Google publishes system power, not a TDP (empty where it publishes none: NaN)."""
    specs: dict[str, GpuSpec] = {}
    with (data_dir() / "tpus.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            specs[row["tpu"]] = GpuSpec(
                id=row["tpu"],
                name=row["name"],
                vendor="google",
                architecture=f"tpu-{row['generation']}",
                form_factor="tpu",
                memory_gib=float(row["memory_gib"]),
                memory_bandwidth_gbps=float(row["memory_bandwidth_gbps"]),
                memory_type=row["memory_type"],
                fp32_tflops=0.0,
                tf32_tflops=None,
                fp16_tflops=float(row["bf16_tflops"]),
                bf16_supported=True,
                fp8_tflops=_opt_float(row["fp8_tflops"]),
                nvlink_gbps=None,
                pcie_gen=0,
                tdp_w=float(row["system_power_w"] or "nan"),
                datacenter=True,
                source=row["source"],
                source_date=row["source_date"],
                notes=row["notes"],
                accelerator_kind="tpu",
            )
    return specs


def _variant(specs: Mapping[str, GpuSpec], row: Mapping[str, str]) -> GpuSpec:
    """A memory/power variant of a GPU: its base's row with the fields the variant row gives (empty: the base's).
    ``clock_relative`` (its boost clock over the base's) scales every peak, else the base's peaks hold."""
    base = specs.get(row["base"])
    if base is None:
        raise RuntimeError(f"gpu_variants.csv: {row['gpu']!r} names unknown base GPU {row['base']!r}")
    clock = float(row["clock_relative"] or 1.0)
    tf32, fp8 = base.tf32_tflops, base.fp8_tflops

    def number(name: str, inherited: float) -> float:
        return float(row[name]) if row[name].strip() else inherited

    return replace(
        base,
        id=row["gpu"],
        name=row["name"],
        form_factor=row["form_factor"] or base.form_factor,
        memory_gib=number("memory_gib", base.memory_gib),
        memory_bandwidth_gbps=number("memory_bandwidth_gbps", base.memory_bandwidth_gbps),
        memory_type=row["memory_type"] or base.memory_type,
        tdp_w=number("tdp_w", base.tdp_w),
        nvlink_gbps=_opt_float(row["nvlink_gbps"]) or base.nvlink_gbps,
        fp32_tflops=base.fp32_tflops * clock,
        tf32_tflops=None if tf32 is None else tf32 * clock,
        fp16_tflops=base.fp16_tflops * clock,
        fp8_tflops=None if fp8 is None else fp8 * clock,
        source=row["source"],
        source_date=row["source_date"],
        notes=row["notes"],
        base=base.id,
    )


@dataclass(frozen=True)
class SoftwareStack:
    """A vendor's training software (``data/software_stacks.csv``): its tuned recipe, where one is measured."""

    vendor: str
    tuned_recipe: str | None
    typical_stack: str


@cache
def _software_stacks() -> dict[str, SoftwareStack]:
    with (data_dir() / "software_stacks.csv").open(newline="", encoding="utf-8") as handle:
        return {
            row["vendor"]: SoftwareStack(row["vendor"], row["tuned_recipe"] or None, row["typical_stack"])
            for row in csv.DictReader(handle)
        }


def software_stack(spec: GpuSpec) -> SoftwareStack:
    """The training software of ``spec``'s vendor; a vendor without a row has no measured tuned recipe."""
    return _software_stacks().get(spec.vendor.lower(), SoftwareStack(spec.vendor, None, "PyTorch"))


@cache
def _aliases() -> dict[str, tuple[str, str | None]]:
    """Normalised spelling -> (canonical id, note for an ambiguous name)."""
    table = gpu_table()
    aliases: dict[str, tuple[str, str | None]] = {_key(gpu_id): (gpu_id, None) for gpu_id in table}
    with (data_dir() / "gpu_aliases.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["gpu"] not in table:
                raise RuntimeError(f"gpu_aliases.csv: alias {row['alias']!r} points at unknown GPU {row['gpu']!r}")
            aliases[_key(row["alias"])] = (row["gpu"], row["note"] or None)
    return aliases


@cache
def _display_names() -> dict[str, str]:
    """Normalised spelling -> how to show it in a suggestion."""
    names = {_key(gpu_id): gpu_id for gpu_id in gpu_table()}
    with (data_dir() / "gpu_aliases.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            names.setdefault(_key(row["alias"]), row["alias"])
    return names


def _by_memory(default: GpuSpec, memory_gib: float) -> GpuSpec:
    """Among the default's siblings (same family and form factor), the one whose memory is closest."""
    family = default.id.split("-")[0]
    siblings = [
        spec
        for spec in gpu_table().values()
        if spec.id.split("-")[0] == family and spec.form_factor == default.form_factor
    ]
    return min(siblings, key=lambda spec: (abs(spec.memory_gib - memory_gib), spec.id != default.id))


def lookup(name: str, memory_gib: float | None = None, *, field: str | None = None) -> Resolution:
    """Resolve any spelling of a GPU; ``memory_gib`` (per GPU, e.g. from a cloud API) picks the variant.

    Raises ``UnknownGpuError`` with a did-you-mean suggestion, naming ``field`` (the argument the user typed the
    name into) when given.
    """
    if not isinstance(name, str):
        raise InputError(f"must be a GPU name, got {name!r:.40}", field=field or "gpu")
    key = _key(name)
    if key.startswith("nvidia") and key not in _aliases():
        key = key.removeprefix("nvidia").removeprefix("tesla")
    found = _aliases().get(key)
    if found is None:
        shown = _display_names()
        hint = checks.suggestion(key, shown, shown)
        raise UnknownGpuError(name, hint, field=field)
    gpu_id, note = found
    spec = gpu_table()[gpu_id]
    if memory_gib is not None and abs(spec.memory_gib - memory_gib) > 4:
        spec = _by_memory(spec, memory_gib)
        note = None
    return Resolution(spec=spec, note=note)


def resolve_gpu(name: str, memory_gib: float | None = None, *, field: str | None = None) -> GpuSpec:
    """The canonical spec for any spelling of a GPU name (case-insensitive); ``field`` as in ``lookup``."""
    return lookup(name, checks.optional_number("memory_gib", memory_gib), field=field).spec


def gpu_ids() -> list[str]:
    """Canonical ids of every known GPU."""
    return list(gpu_table())
