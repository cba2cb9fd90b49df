"""Refresh concurrency: 24 AWS regions against local fakes with injected latency, through `refresh()` and the store.

Run: .venv/bin/python bench/refresh.py [--regions 24] [--latency-ms 50]
Prints the wall time of the full refresh as a ratio to the slowest single-region refresh.
Target (issue 5): at most 1.3x, i.e. regions really run side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.catalog.store import CatalogStore  # noqa: E402
from planner.providers.aws import AwsProvider  # noqa: E402
from planner.refresh import refresh  # noqa: E402

# (type, GPU name, GPUs, MiB per GPU, vCPUs, MiB RAM, on-demand USD/h): shapes as DescribeInstanceTypes gives them.
TYPES = [
    ("p5.48xlarge", "H100", 8, 81920, 192, 2097152, "55.04"),
    ("p4d.24xlarge", "A100", 8, 40960, 96, 1179648, "21.96"),
    ("g5.xlarge", "A10G", 1, 22888, 4, 16384, "1.006"),
    ("g6.xlarge", "L4", 1, 22888, 4, 16384, "0.805"),
    ("g6e.xlarge", "L40S", 1, 45776, 4, 32768, "1.861"),
]


class FakeEc2:
    """EC2 answers for one region, each call sleeping ``latency`` seconds like a round trip."""

    def __init__(self, region: str, latency: float) -> None:
        self.region = region
        self.latency = latency
        self.zones = {f"{region}{s}": f"{region[:2]}{region[-1]}-az{i}" for i, s in enumerate("abc", 1)}

    def _wait(self) -> None:
        time.sleep(self.latency)

    def describe_availability_zones(self) -> dict[str, Any]:
        self._wait()
        return {"AvailabilityZones": [{"ZoneName": n, "ZoneId": i} for n, i in self.zones.items()]}

    def get_paginator(self, name: str) -> Any:
        return _Paginator(self, name)

    def pages(self, name: str, **params: Any) -> Iterator[dict[str, Any]]:
        if name == "describe_instance_types":
            for half in (TYPES[:3], TYPES[3:]):
                self._wait()
                yield {
                    "InstanceTypes": [
                        {
                            "InstanceType": t,
                            "VCpuInfo": {"DefaultVCpus": cpus},
                            "MemoryInfo": {"SizeInMiB": ram},
                            "NetworkInfo": {"NetworkPerformance": "100 Gigabit"},
                            "GpuInfo": {"Gpus": [{"Name": g, "Count": n, "MemoryInfo": {"SizeInMiB": mib}}]},
                        }
                        for t, g, n, mib, cpus, ram, _ in half
                    ]
                }
        elif name == "describe_instance_type_offerings":
            self._wait()
            yield {
                "InstanceTypeOfferings": [
                    {"InstanceType": t[0], "Location": zone} for t in TYPES for zone in self.zones.values()
                ]
            }
        elif name == "describe_spot_price_history":
            self._wait()
            stamp = datetime.now(UTC)
            yield {
                "SpotPriceHistory": [
                    {
                        "InstanceType": t[0],
                        "AvailabilityZone": zone,
                        "SpotPrice": f"{float(t[6]) * 0.4:.4f}",
                        "Timestamp": stamp,
                    }
                    for t in TYPES
                    for zone in self.zones
                ]
            }


class _Paginator:
    def __init__(self, client: FakeEc2, name: str) -> None:
        self.client, self.name = client, name

    def paginate(self, **params: Any) -> Iterator[dict[str, Any]]:
        return self.client.pages(self.name, **params)


class FakePricing:
    """GetProducts for every region, with the latency of the region asked about."""

    def __init__(self, latency: dict[str, float]) -> None:
        self.latency = latency

    def get_products(self, **params: Any) -> dict[str, Any]:
        terms = {f["Field"]: f["Value"] for f in params["Filters"]}
        time.sleep(self.latency[terms["regionCode"]])
        price = next(t[6] for t in TYPES if t[0] == terms["instanceType"])
        item = {
            "product": {"attributes": {"usagetype": f"BoxUsage:{terms['instanceType']}"}},
            "terms": {"OnDemand": {"t": {"priceDimensions": {"d": {"unit": "Hrs", "pricePerUnit": {"USD": price}}}}}},
        }
        return {"FormatVersion": "aws_v1", "PriceList": [json.dumps(item)]}


def provider(latency: dict[str, float]) -> AwsProvider:
    ec2 = {region: FakeEc2(region, seconds) for region, seconds in latency.items()}
    pricing = FakePricing(latency)

    def client(service: str, region: str) -> Any:
        return pricing if service == "pricing" else ec2[region]

    # No Pricing rate limit here: it caps real API calls per second and is not what this measures.
    return AwsProvider(client, spot_advisor=dict, pricing_calls_per_s=None)


def timed_refresh(latency: dict[str, float], store: CatalogStore) -> tuple[float, int]:
    started = time.perf_counter()
    report = refresh("aws", regions=list(latency), store=store, clients={"aws": provider(latency)})
    elapsed = time.perf_counter() - started
    if report.exit_code != 0:
        raise SystemExit(f"refresh failed:\n{report.summary()}")
    return elapsed, report["aws"].rows_written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regions", type=int, default=24)
    parser.add_argument(
        "--latency-ms", type=float, default=50.0, help="round trip of the slowest region (real EC2 calls: 100-300 ms)"
    )
    args = parser.parse_args()
    names = [f"xx-bench-{i + 1}" for i in range(args.regions)]
    # Latencies spread from 40% to 100% of the slowest, so one region is clearly the slowest.
    latency = {
        name: args.latency_ms / 1000 * (0.4 + 0.6 * i / max(1, args.regions - 1)) for i, name in enumerate(names)
    }
    with tempfile.TemporaryDirectory() as folder:

        def fresh_store(tag: str) -> CatalogStore:
            return CatalogStore(Path(folder) / f"{tag}.sqlite", seed=False)

        timed_refresh({names[0]: latency[names[0]]}, fresh_store("warm-up"))  # imports, caches
        # Best of 3 for every measurement, so the max over regions is not just the noisiest run.
        singles = {
            name: min(timed_refresh({name: latency[name]}, fresh_store(f"{name}-{i}"))[0] for i in range(3))
            for name in names
        }
        slowest = max(singles.values())
        runs = [timed_refresh(latency, fresh_store(f"all-{i}")) for i in range(3)]
        wall = min(elapsed for elapsed, _ in runs)
        rows = runs[0][1]
    print(f"regions: {args.regions}, calls per region: {5 + len(TYPES)}, slowest round trip: {args.latency_ms:g} ms")
    print(
        f"slowest single region: {slowest * 1000:.0f} ms (each region refreshed alone, best of 3, store write included)"
    )
    print(f"all {args.regions} regions: {wall * 1000:.0f} ms for {rows} offerings (best of 3)")
    print(f"ratio: {wall / slowest:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
