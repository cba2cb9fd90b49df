"""Streaming parse of a large AWS EC2 offer file: peak memory and time of `read_offer_file`.

Run: .venv/bin/python bench/aws_bulk.py [--size-mb 250] [--keep DIR]
Writes a synthetic offer file of that size (in a temp dir, removed after) in the Price List's shape: mostly
non-GPU products and their OnDemand and Reserved terms, a few GPU types among them. A child process then parses it
twice, from the file and over HTTP from a loopback server through the provider's client (gzip off), and reports
its peak resident memory (ru_maxrss) against its size after imports. Target: memory flat in the file size
(tens of MB for a file of hundreds of MB), the file's bytes never held whole.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REGION = "us-east-1"
GPU_TYPES = ("p5.48xlarge", "p4d.24xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge")
OTHER_FAMILIES = ("m5", "c5", "r5", "m6i", "c6i", "r6i", "m7g", "c7g", "t3", "i4i")
SIZES = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge")
SYSTEMS = ("Linux", "Windows", "RHEL", "SUSE")
TENANCIES = ("Shared", "Dedicated", "Host")


def product(sku: str, instance_type: str, system: str, tenancy: str) -> dict[str, Any]:
    attributes = {
        "servicecode": "AmazonEC2",
        "location": "US East (N. Virginia)",
        "locationType": "AWS Region",
        "instanceType": instance_type,
        "currentGeneration": "Yes",
        "instanceFamily": "GPU instance" if instance_type in GPU_TYPES else "General purpose",
        "vcpu": "8",
        "physicalProcessor": "Intel Xeon Platinum 8175",
        "clockSpeed": "3.1 GHz",
        "memory": "32 GiB",
        "storage": "EBS only",
        "networkPerformance": "Up to 10 Gigabit",
        "processorArchitecture": "64-bit",
        "tenancy": tenancy,
        "operatingSystem": system,
        "licenseModel": "No License required",
        "usagetype": f"BoxUsage:{instance_type}",
        "operation": "RunInstances",
        "capacitystatus": "Used",
        "gpu": "1" if instance_type in GPU_TYPES else "0",
        "preInstalledSw": "NA",
        "regionCode": REGION,
        "marketoption": "OnDemand",
    }
    return {"sku": sku, "productFamily": "Compute Instance", "attributes": attributes}


def terms(sku: str, usd: float, reserved: int) -> tuple[dict[str, Any], dict[str, Any]]:
    def term(code: str, unit: str, price: float) -> dict[str, Any]:
        rate = f"{sku}.{code}.6YS6EN2CT7"
        dimension = {
            "rateCode": rate,
            "description": f"${price:.4f} per hour",
            "beginRange": "0",
            "endRange": "Inf",
            "unit": unit,
            "pricePerUnit": {"USD": f"{price:.10f}"},
            "appliesTo": [],
        }
        return {
            "offerTermCode": code,
            "sku": sku,
            "effectiveDate": "2026-11-01T00:00:00Z",
            "priceDimensions": {rate: dimension},
            "termAttributes": {},
        }

    on_demand = {f"{sku}.JRTCKXETXF": term("JRTCKXETXF", "Hrs", usd)}
    reserved_terms = {f"{sku}.R{n:07d}": term(f"R{n:07d}", "Quantity", usd * 5000) for n in range(reserved)}
    return on_demand, reserved_terms


def write_offer_file(path: Path, size_mb: float) -> int:
    """Write a synthetic offer file of about ``size_mb`` MB; returns its product count."""
    target = size_mb * 1e6
    types = [*GPU_TYPES, *(f"{f}.{s}" for f in OTHER_FAMILIES for s in SIZES)]
    with path.open("w", encoding="utf-8") as out:
        header = {"formatVersion": "v1.0", "disclaimer": "synthetic", "offerCode": "AmazonEC2", "version": "1"}
        out.write(json.dumps(header)[:-1] + ', "products": {')
        count = 0
        # Products take about a third of a real file; the terms that follow, the rest.
        while out.tell() < target / 3:
            instance_type = types[count % len(types)]
            variant = count // len(types)
            system, tenancy = SYSTEMS[variant % len(SYSTEMS)], TENANCIES[(variant // 4) % len(TENANCIES)]
            sku = f"SKU{count:09d}"
            out.write(
                ("," if count else "")
                + json.dumps(sku)
                + ":"
                + json.dumps(product(sku, instance_type, system, tenancy))
            )
            count += 1
        out.write('}, "terms": {"OnDemand": {')
        for n in range(count):
            sku = f"SKU{n:09d}"
            on_demand, _ = terms(sku, 1.0 + n % 97, 0)
            out.write(("," if n else "") + json.dumps(sku) + ":" + json.dumps(on_demand))
        # Reserved terms fill the rest: the parser must skip them without keeping them.
        out.write('}, "Reserved": {')
        n = 0
        while out.tell() < target:
            sku = f"SKU{n % count:09d}"
            _, reserved = terms(sku, 1.0 + n % 97, 3)
            out.write(("," if n else "") + json.dumps(f"{sku}-{n}") + ":" + json.dumps(reserved))
            n += 1
        out.write("}}}")
    return count


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def parse_child(path: Path, mode: str) -> dict[str, Any]:
    """Runs in the child: parse ``path`` from the file or over loopback HTTP, and report memory and time."""
    import requests

    from planner.providers.aws_public import read_offer_file
    from planner.providers.http import JsonApi

    before = max_rss_mb()
    started, cpu_started = time.perf_counter(), time.process_time()
    read_mb = None
    if mode == "file":
        with path.open("rb") as body:
            offer = read_offer_file(body, REGION)
            read_mb = body.tell() / 1e6
    else:
        handler = partial(SimpleHTTPRequestHandler, directory=str(path.parent))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        api = JsonApi("aws", "aws", requests.Session(), None, "-", timeout_s=60)
        url = f"http://127.0.0.1:{server.server_address[1]}/{path.name}"

        def read(body: IO[bytes]) -> Any:
            return read_offer_file(body, REGION)

        offer = api.stream(url, read)
        server.shutdown()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu_started,
        "read_mb": read_mb,
        "rss_after_imports_mb": before,
        "peak_rss_mb": max_rss_mb(),
        "products": offer.products_read,
        "gpu_types": sorted(offer.types),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=250.0)
    parser.add_argument("--keep", type=Path, help="write the file here and keep it")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(parse_child(Path(args.child[0]), args.child[1])))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        path = folder / "index.json"
        started = time.perf_counter()
        products = write_offer_file(path, args.size_mb)
        size_mb = path.stat().st_size / 1e6
        print(f"offer file: {size_mb:.0f} MB, {products} products, written in {time.perf_counter() - started:.1f} s")
        for mode in ("file", "http"):
            child = subprocess.run(
                [sys.executable, __file__, "--child", str(path), mode], check=True, capture_output=True, text=True
            )
            got = json.loads(child.stdout)
            read = f", read {got['read_mb']:.0f} MB before every GPU price was found" if got["read_mb"] else ""
            print(
                f"{mode:>4}: {got['seconds']:.1f} s wall, {got['cpu_seconds']:.1f} s CPU{read}; "
                f"peak RSS {got['peak_rss_mb']:.0f} MB "
                f"({got['peak_rss_mb'] - got['rss_after_imports_mb']:+.0f} MB over the child after imports), "
                f"{got['products']} products read, GPU types kept: {', '.join(got['gpu_types'])}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
