"""Build the bundled Lambda and Paperspace (DigitalOcean GPU Droplet) rows: ``data/catalog/lambda.csv``,
``data/catalog/paperspace.csv`` and their ``manifest.json`` entries.

Lambda comes from SkyPilot's catalog of Lambda's instance-types API (``catalogs/v9/lambda/vms.csv``, pass its
path); DigitalOcean from its public GPU Droplet price list, transcribed below with the page and date. Every GPU
goes through ``planner.hardware.lookup`` and must agree with ``data/instance_families.csv``; rows are validated.
The output is deterministic.

    .venv/bin/python scripts/build_gpu_clouds.py --lambda-vms PATH/TO/catalogs/v9/lambda/vms.csv [--out data/catalog]
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from build_catalog import LICENCES, render_csv, render_manifest  # noqa: E402

from planner.catalog.families import family_facts  # noqa: E402
from planner.catalog.schema import REGION_UNKNOWN  # noqa: E402
from planner.catalog.validate import Rejected, validate_rows  # noqa: E402
from planner.errors import UnknownGpuError  # noqa: E402
from planner.hardware import gpu_table, lookup  # noqa: E402
from planner.providers.regions import UNKNOWN_FLAG  # noqa: E402

MIB_PER_GIB = 1024.0


@dataclass(frozen=True)
class Upstream:
    """Where one provider's bundled prices come from, and when they were taken."""

    origin: str  # for the manifest
    price_source: str  # stored on every row
    as_of: str  # ISO 8601 UTC


UPSTREAMS: dict[str, Upstream] = {
    # The v9 catalog was created on 2026-07-09 (skypilot-catalog#185), the same lower bound as the AWS rows.
    "lambda": Upstream(
        origin="skypilot-catalog catalogs/v9/lambda/vms.csv @2c3d7ea7",
        price_source=(
            "skypilot-catalog v9 lambda/vms.csv @2c3d7ea7 (Lambda instance-types API; as_of approximate; it "
            "lists every type in every region, so where each is sold is unknown)"
        ),
        as_of="2026-07-09T00:00:00+00:00",
    ),
    "paperspace": Upstream(
        origin="docs.digitalocean.com/products/droplets/details/pricing (validated 2026-05-28)",
        price_source=(
            "DigitalOcean Droplet pricing page, GPU Droplet list (validated 2026-05-28); "
            "the page names no regions; L40S/MI300X host specs uncertain"
        ),
        as_of="2026-05-28T00:00:00+00:00",
    ),
}


@dataclass(frozen=True)
class DropletPlan:
    """One self-service GPU Droplet plan of DigitalOcean's price list."""

    slug: str
    gpu_count: float
    vcpus: int
    ram_gib: float
    price_usd_per_hour: float


# The plans priced on docs.digitalocean.com/products/droplets/details/pricing (validated 2026-05-28); MI325X,
# MI350X and B300 are "per contract" there and left out. vCPUs and memory of H100x1/x8 as the Sizes API lists
# them (245760 and 1966080 MiB); the L40S and MI300X host figures are uncertain. The page names no regions, so
# the rows are in region "unknown" until a live refresh reads each size's regions from the Sizes API.
DROPLET_PLANS: tuple[DropletPlan, ...] = (
    DropletPlan("gpu-h100x1-80gb", 1, 20, 240, 3.39),
    DropletPlan("gpu-h100x8-640gb", 8, 160, 1920, 23.92),
    DropletPlan("gpu-l40sx1-48gb", 1, 8, 64, 1.57),
    DropletPlan("gpu-mi300x1-192gb", 1, 20, 240, 1.99),
    DropletPlan("gpu-mi300x8-1536gb", 8, 160, 1920, 15.92),
)


def _row(provider: str, instance_type: str) -> dict[str, Any]:
    """A row whose source does not say where the type is sold: region "unknown", never every region."""
    upstream = UPSTREAMS[provider]
    return {
        "provider": provider,
        "instance_type": instance_type,
        "region": REGION_UNKNOWN,
        "zone": "",
        "availability": "on-demand",
        "price_source": upstream.price_source,
        "as_of": upstream.as_of,
        "available_now": "unknown",  # a price list says nothing about capacity now
        "flags": UNKNOWN_FLAG,
    }


def lambda_rows(vms: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One row per GPU instance type of SkyPilot's Lambda table (CPU-only types are skipped).

    SkyPilot copies every type into every region Lambda runs (Lambda's API names only the regions with spare
    capacity), so the table does not say where a type is sold: one row in region "unknown" at its one price.
    """
    rows: dict[str, dict[str, Any]] = {}
    for ref in vms:
        if not ref["AcceleratorName"]:
            continue
        known = rows.get(ref["InstanceType"])
        if known is not None:
            if known["price_usd_per_hour"] != float(ref["Price"]):
                raise ValueError(f"{ref['InstanceType']}: Lambda prices differ by region ({ref['Region']})")
            continue
        # GpuInfo is a Python repr of the API's dict, as in the AWS reference.
        gpu = ast.literal_eval(ref["GpuInfo"])["Gpus"][0]
        row = _row("lambda", ref["InstanceType"])
        row.update(
            gpu=gpu["Name"],
            gpu_memory_gib=gpu["MemoryInfo"]["SizeInMiB"] / MIB_PER_GIB,
            gpu_count=float(ref["AcceleratorCount"]),
            vcpus=int(float(ref["vCPUs"])),
            ram_gib=float(ref["MemoryGiB"]),
            price_usd_per_hour=float(ref["Price"]),
        )
        rows[ref["InstanceType"]] = row
    return list(rows.values())


def paperspace_rows(plans: tuple[DropletPlan, ...] = DROPLET_PLANS) -> list[dict[str, Any]]:
    """One row per GPU Droplet plan, region unknown; the GPU is the family table's (the slug pins the variant)."""
    rows = []
    for plan in plans:
        facts = family_facts("paperspace", plan.slug)
        row = _row("paperspace", plan.slug)
        row.update(
            gpu=facts.gpu if facts else plan.slug,
            gpu_memory_gib=None,
            gpu_count=plan.gpu_count,
            vcpus=plan.vcpus,
            ram_gib=plan.ram_gib,
            price_usd_per_hour=plan.price_usd_per_hour,
        )
        rows.append(row)
    return rows


def resolve(rows: list[dict[str, Any]], left_out: list[Rejected]) -> list[dict[str, Any]]:
    """Canonical GPU, interconnect and network for every row; the family table must cover and agree with it."""
    kept = []
    for row in rows:
        where = (row["provider"], row["instance_type"], row["region"], row["zone"])
        facts = family_facts(row["provider"], row["instance_type"])
        if facts is None:
            left_out.append(Rejected(*where, reason="instance type is in no covered family"))
            continue
        try:
            gpu = lookup(str(row["gpu"]), row.get("gpu_memory_gib")).spec.id
        except UnknownGpuError as exc:
            left_out.append(Rejected(*where, reason=str(exc)))
            continue
        # SkyPilot says only 'H100' or 'A100': the family (from the type name) names the variant when they share
        # a family ('H100' resolves to H100-SXM, the family may say H100-PCIe).
        if gpu.split("-")[0] != facts.gpu.split("-")[0]:
            left_out.append(Rejected(*where, reason=f"GPU {gpu} disagrees with the family's {facts.gpu}"))
            continue
        if facts.gpu_count is not None and row["gpu_count"] != facts.gpu_count:
            left_out.append(Rejected(*where, reason=f"GPU count {row['gpu_count']:g} is not {facts.gpu_count:g}"))
            continue
        row.update(
            gpu=facts.gpu,
            gpu_memory_gib=gpu_table()[facts.gpu].memory_gib,
            interconnect=facts.interconnect,
            network_gbps=facts.network_gbps,
        )
        kept.append(row)
    return kept


def build(lambda_vms: Path) -> tuple[dict[str, list[dict[str, Any]]], list[Rejected]]:
    """Validated, sorted rows per provider and every row left out with its reason."""
    with lambda_vms.open(newline="", encoding="utf-8") as handle:
        vms = list(csv.DictReader(handle))
    left_out: list[Rejected] = []
    out = {}
    for provider, rows in (("lambda", lambda_rows(vms)), ("paperspace", paperspace_rows())):
        report = validate_rows(resolve(rows, left_out))
        left_out.extend(report.rejected)
        out[provider] = sorted((dict(r) for r in report.accepted), key=lambda r: (r["instance_type"], r["region"]))
    return out, left_out


def render(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """File name -> content: both provider files and the manifest with their entries."""
    files: dict[str, str] = {}
    entries: dict[str, Any] = {}
    for provider, provider_rows in rows.items():
        name = f"{provider}.csv"
        files[name] = render_csv(provider_rows)
        digest = hashlib.sha256(files[name].encode("utf-8")).hexdigest()[:12]
        upstream = UPSTREAMS[provider]
        entries[provider] = {
            "file": name,
            "source": f"bundled {digest} ({upstream.origin})",
            "as_of": upstream.as_of,
            "rows": len(provider_rows),
            "licence": LICENCES[provider],
        }
    files["manifest.json"] = render_manifest(entries)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lambda-vms", type=Path, required=True, help="skypilot-catalog catalogs/v9/lambda/vms.csv")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "catalog", help="output folder")
    args = parser.parse_args(argv)
    if not args.lambda_vms.is_file():
        print(f"error: no file {args.lambda_vms}", file=sys.stderr)
        return 2
    rows, left_out = build(args.lambda_vms)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in render(rows).items():
        (args.out / name).write_text(content, encoding="utf-8")
    for provider, provider_rows in rows.items():
        types = len({r["instance_type"] for r in provider_rows})
        regions = len({r["region"] for r in provider_rows})
        print(f"{provider}: {len(provider_rows)} rows, {types} instance types, {regions} regions")
    grouped: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item in left_out:
        grouped[(item.provider, item.reason)].add(item.instance_type)
    print(f"left out: {len(left_out)} rows")
    for (provider, reason), names in sorted(grouped.items()):
        print(f"  {provider}: {reason} [{', '.join(sorted(names))}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
