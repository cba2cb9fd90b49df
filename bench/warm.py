"""Warm-query speed (issues 37, 38): `offers()` called again in one process, on SQLite and on PostgreSQL, against
gpuhunt's `Catalog.query` over the same rows.

Run: .venv/bin/python bench/warm.py
Targets: warm `offers(gpu="H100", min_gpus=8, spot=True)` within 2x of gpuhunt's query over the same rows; the
PostgreSQL store within 2x of the SQLite one.

gpuhunt is not a gpu-planner dependency: install it to compare (`.venv/bin/pip install gpuhunt`; its wheel also
installs a top-level ``tests`` package, so a separate folder is kinder to the venv:
`.venv/bin/pip install --no-deps --target /tmp/gpuhunt gpuhunt` and GPUHUNT_PATH=/tmp/gpuhunt). PostgreSQL:
GPUPLAN_BENCH_DATABASE_URL, else a throwaway server (tests/postgres_server.py) when its binaries are installed.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(1, str(REPO / "tests"))

from _common import median_ms  # noqa: E402

from planner.api import offers  # noqa: E402
from planner.catalog import store as store_module  # noqa: E402
from planner.catalog.store import CatalogStore  # noqa: E402

QUERY: dict[str, Any] = {"gpu": "H100", "min_gpus": 8, "spot": True}
# gpuhunt's provider names for ours; it has no Paperspace, so those rows are scanned under a name it skips.
GPUHUNT_PROVIDERS = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambdalabs", "paperspace": "runpod"}


def warm_ms(store: str) -> tuple[float, float, int]:
    """Median ms of a warm `offers()` on ``store``, the same with the cached frame dropped before each call (what
    every call cost before the cache), and the rows it returns."""
    rows = len(offers(**QUERY, store=store))

    def uncached() -> None:
        store_module._FRAMES.clear()
        offers(**QUERY, store=store)

    return median_ms(lambda: offers(**QUERY, store=store)), median_ms(uncached), rows


def gpuhunt_catalog(store: str) -> Any:
    """gpuhunt's in-memory catalog of the store's current rows, in its schema: one item per price (on-demand at the
    region, spot at the zone), as its published CSVs hold them."""
    from gpuhunt import AcceleratorVendor, CatalogItem
    from gpuhunt._internal.catalog import Catalog, ProviderCatalog

    from planner.hardware import gpu_table

    vendors = {gpu: AcceleratorVendor.cast(spec.vendor.lower()) for gpu, spec in gpu_table().items()}

    with CatalogStore(store) as opened:
        frame = opened.read_current()
    items: dict[str, list[Any]] = {name: [] for name in GPUHUNT_PROVIDERS.values()}
    for row in frame.to_dict("records"):
        provider = GPUHUNT_PROVIDERS[row["provider"]]
        for spot, price, location in (
            (False, row["price_usd_per_hour"], row["region"]),
            (True, row["spot_price_usd_per_hour"], row["zone"] or row["region"]),
        ):
            if price is None or math.isnan(price):
                continue
            items[provider].append(
                CatalogItem(
                    provider=provider if row["provider"] != "paperspace" else "paperspace",
                    instance_name=row["instance_type"],
                    location=location,
                    price=float(price),
                    cpu=int(row["vcpus"]),
                    memory=float(row["ram_gib"]),
                    gpu_count=max(1, int(row["gpu_count"])),
                    gpu_name=str(row["gpu"]).split("-")[0],
                    gpu_memory=float(row["gpu_memory_gib"]),
                    spot=spot,
                    disk_size=None,
                    gpu_vendor=vendors[row["gpu"]],
                )
            )
    catalog = Catalog(auto_reload=False)
    for name, provider_items in items.items():
        catalog.catalog[name] = ProviderCatalog(version="bench", items=sorted(provider_items, key=lambda i: i.price))
    catalog.loaded_at = time.monotonic()
    return catalog, sum(len(v) for v in items.values())


def paired_ms(first: Callable[[], object], second: Callable[[], object], repeat: int = 41) -> tuple[float, float]:
    """Median ms of two calls run alternately, so that the load of a shared machine falls on both alike."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for func, kept in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            func()
            kept.append((time.perf_counter() - start) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def gpuhunt_ms(store: str) -> tuple[float, float, int, int] | str:
    """Median ms of a warm `offers()` and of gpuhunt's query run alternately, gpuhunt's items and the offers it
    returns; or why it could not run."""
    if os.environ.get("GPUHUNT_PATH"):
        sys.path.append(os.environ["GPUHUNT_PATH"])
    try:
        import gpuhunt  # noqa: F401
    except ImportError:
        return "gpuhunt is not installed (.venv/bin/pip install gpuhunt, or see this script's docstring)"
    catalog, size = gpuhunt_catalog(store)

    def query() -> list[Any]:
        return list(
            catalog.query(provider=list(GPUHUNT_PROVIDERS.values()), gpu_name="H100", min_gpu_count=8, spot=True)
        )

    ours, theirs = paired_ms(lambda: offers(**QUERY, store=store), query)
    return ours, theirs, size, len(query())


def postgres_url() -> tuple[str, Any] | str:
    """A database URL for the PostgreSQL figures and the server to stop afterwards, or why there is none."""
    given = os.environ.get("GPUPLAN_BENCH_DATABASE_URL")
    if given:
        return given, None
    import postgres_server

    try:
        server = postgres_server.start_server()
    except RuntimeError as exc:
        return str(exc)
    return postgres_server.new_schema(server.url), server


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        os.environ["GPUPLAN_HOME"] = home
        sqlite = str(Path(home) / "catalog.sqlite")
        CatalogStore(sqlite).close()  # seeded from the bundled catalog
        warm, uncached, returned = warm_ms(sqlite)
        print(f"SQLite: warm offers(gpu='H100', min_gpus=8, spot=True): {warm:.2f} ms ({returned} offers)")
        print(f"  re-reading the store on each call (no cache): {uncached:.2f} ms ({uncached / warm:.1f}x)")
        hunt = gpuhunt_ms(sqlite)
        if isinstance(hunt, str):
            print(f"gpuhunt: not measured: {hunt}")
        else:
            ours, hunt_ms, items, found = hunt
            print(f"gpuhunt Catalog.query over the same rows ({items:,} items): {hunt_ms:.2f} ms ({found} items)")
            print(f"  offers() run alternately with it: {ours:.2f} ms; ratio {ours / hunt_ms:.2f}x (target <= 2x)")
        target = postgres_url()
        if isinstance(target, str):
            print(f"PostgreSQL: not measured: {target}")
            return
        url, server = target
        try:
            CatalogStore(url).close()
            pg_warm, pg_uncached, pg_returned = warm_ms(url)
            print(f"PostgreSQL: warm offers(): {pg_warm:.2f} ms ({pg_returned} offers); no cache: {pg_uncached:.2f} ms")
            on_sqlite, on_postgres = paired_ms(
                lambda: offers(**QUERY, store=sqlite), lambda: offers(**QUERY, store=url)
            )
            print(
                f"  run alternately: SQLite {on_sqlite:.2f} ms, PostgreSQL {on_postgres:.2f} ms; "
                f"ratio {on_postgres / on_sqlite:.2f}x (target <= 2x)"
            )
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
