"""A deterministic stand-in for the performance model and a small fixed catalog, for exact expectations."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from factories import make_offer

from planner.errors import InputError

# Per-GPU throughput (tokens/s) and usable memory (GiB) of the fake model: round numbers, easy to check by hand.
TOKENS_PER_GPU_S = {"H100-SXM": 10_000.0, "A100-80GB": 4_000.0, "A100-40GB": 3_500.0, "L4": 1_000.0, "T4": 400.0}
MEMORY_GIB = {"H100-SXM": 80.0, "A100-80GB": 80.0, "A100-40GB": 40.0, "L4": 24.0, "T4": 16.0}
FP8 = {"H100-SXM", "L4"}
# The fake job needs this much memory in total; it is sharded evenly over the GPUs.
JOB_MEMORY_GIB = 120.0


@dataclass(frozen=True)
class FakeEstimate:
    """The fields rank() reads from an Estimate."""

    throughput: float
    throughput_low: float
    throughput_high: float
    time_to_solution_hours: float
    fits_in_memory: bool
    why_not_fits: str | None
    min_gpus_to_fit: int | None
    energy_kwh: float
    gpu_calibrated: bool = True
    held_out_error_pct: float | None = None
    slower_at_scale: float | None = None


class FakeEstimator:
    """Linear scaling inside a node, 80% efficiency per extra node; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(
        self,
        workload: Any,
        gpu: str,
        gpus: int = 1,
        precision: str = "bf16",
        *,
        gpus_per_node: int | None = None,
        interconnect: str | None = None,
        network_gbps: float | None = None,
        **options: Any,
    ) -> FakeEstimate:
        self.calls.append((gpu, gpus, gpus_per_node, interconnect, network_gbps, precision))
        if precision == "fp8" and gpu not in FP8:
            raise InputError(f"--precision fp8 is not supported on {gpu}")
        per_node = gpus_per_node or gpus
        nodes = math.ceil(gpus / per_node)
        need = JOB_MEMORY_GIB / gpus
        if need > MEMORY_GIB[gpu]:
            fit = math.ceil(JOB_MEMORY_GIB / MEMORY_GIB[gpu])
            return FakeEstimate(0.0, 0.0, 0.0, math.inf, False, f"needs {need:g} GiB per GPU", fit, 0.0)
        throughput = TOKENS_PER_GPU_S[gpu] * gpus * 0.8 ** (nodes - 1)
        hours = workload.total_work() / throughput / 3600.0
        return FakeEstimate(
            throughput, throughput * 0.8, throughput * 1.25, hours, True, None, None, hours * gpus * 0.5
        )


def small_catalog() -> pd.DataFrame:
    """Nine offerings: three clouds, two zones of one region, spot-only and reservation-only rows, a small GPU."""
    rows = [
        make_offer(),  # aws p5.48xlarge us-east-1 use1-az4, H100 x8, $55.04, spot $30.5 "<5%"
        make_offer(zone="use1-az6", spot_price_usd_per_hour=28.0),
        make_offer(region="eu-west-1", zone="euw1-az1", price_usd_per_hour=60.0, spot_price_usd_per_hour=None,
                   spot_interruption=None),
        make_offer(instance_type="p4d.24xlarge", gpu="A100-40GB", gpu_memory_gib=40.0, network_gbps=400.0,
                   price_usd_per_hour=21.96, spot_price_usd_per_hour=9.0, spot_interruption=">20%"),
        make_offer(instance_type="g6.xlarge", gpu="L4", gpu_count=1.0, gpu_memory_gib=24.0, interconnect="pcie",
                   network_gbps=10.0, price_usd_per_hour=0.805, spot_price_usd_per_hour=0.3, spot_interruption="5-10%"),
        make_offer(provider="gcp", instance_type="a2-ultragpu-8g", region="us-central1", zone="us-central1-a",
                   gpu="A100-80GB", network_gbps=100.0, price_usd_per_hour=40.22, spot_price_usd_per_hour=12.0,
                   spot_interruption=None),
        make_offer(provider="gcp", instance_type="a2-ultragpu-8g", region="us-central1", zone="us-central1-b",
                   gpu="A100-80GB", network_gbps=100.0, price_usd_per_hour=40.22, spot_price_usd_per_hour=11.0,
                   spot_interruption=None, availability="spot-only"),
        make_offer(provider="azure", instance_type="Standard_ND96isr_H100_v5", region="eastus", zone="",
                   network_gbps=3200.0, price_usd_per_hour=98.32, spot_price_usd_per_hour=40.0,
                   spot_interruption=None, availability="spot-only"),
        make_offer(instance_type="p5e.48xlarge", gpu="H100-SXM", availability="reservation-only",
                   price_usd_per_hour=None, spot_price_usd_per_hour=None, spot_interruption=None),
    ]  # fmt: skip
    return pd.DataFrame(rows)
