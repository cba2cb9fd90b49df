"""The user's owned servers: what each cost and costs to run, from a TOML file, to rank beside the clouds.

The file is ``owned.toml`` beside ``prices.toml`` in the platform's config directory, or ``$GPUPLAN_OWNED_FILE``. A
file of its own, not a section of the prices file: the prices file changes what clouds charge, this one adds
offerings, and a team may share one without the other::

    [[server]]
    name = "dgx-h100"                 # how rankings name it (its instance_type)
    gpu = "H100 SXM"                  # any spelling the planner knows
    gpus = 8
    interconnect = "nvswitch"         # nvswitch, nvlink or pcie
    purchase_usd = 199000
    write_off_years = 4
    operations_usd_per_year = 39800   # colocation, support, staff share
    utilisation = 0.6                 # the share of the year it does paid work, in (0, 1]
    power_usd_per_kwh = 0.0806
    pue = 1.58
    power_kw = 7.0                    # optional: the server's wall power at training load

A bad value is one line naming its key (``owned.toml: server[2].utilisation must be ...``), never a traceback.
``data/owned_examples.toml`` holds sourced examples to copy; they are never ranked unless copied here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner import checks
from planner.catalog.user_files import read_toml, user_file
from planner.errors import InputError

OWNED_ENV = "GPUPLAN_OWNED_FILE"
OWNED_FILE = "owned.toml"
EXAMPLES_FILE = "owned_examples.toml"
# The provider, region and price basis of every owned offering: never a cloud's name.
OWNED = "owned"
# How the server's GPUs talk, as data/instance_families.csv spells it.
OWNED_INTERCONNECTS = ("nvswitch", "nvlink", "pcie")
REQUIRED = (
    "name",
    "gpu",
    "gpus",
    "interconnect",
    "purchase_usd",
    "write_off_years",
    "operations_usd_per_year",
    "utilisation",
    "power_usd_per_kwh",
    "pue",
)
# Optional: the stated wall power, and where each figure came from (key -> citation), shown with the server.
KEYS = (*REQUIRED, "power_kw", "sources")
# PUE above this is a typo rather than a facility (Uptime's survey average is about 1.6).
MOST_PUE = 3.0


@dataclass(frozen=True)
class OwnedServer:
    """One owned server as the file states it; money in USD, the GPU as its canonical id."""

    name: str
    gpu: str
    gpus: int
    interconnect: str
    purchase_usd: float
    write_off_years: float
    operations_usd_per_year: float
    utilisation: float
    power_usd_per_kwh: float
    pue: float
    power_kw: float | None = None
    sources: dict[str, str] = field(default_factory=dict)


def owned_path() -> Path:
    """``$GPUPLAN_OWNED_FILE``, else ``owned.toml`` in the platform's per-user config directory."""
    return user_file(OWNED_ENV, OWNED_FILE)


def examples_path() -> Path:
    """The bundled example servers (sourced list prices), to copy into one's own file."""
    from planner._data import data_dir

    return data_dir() / EXAMPLES_FILE


def read_servers(path: Path | None = None) -> list[OwnedServer]:
    """The servers of the owned file (none when there is no file); a bad one is an InputError naming its key."""
    path = path or owned_path()
    document = read_toml(path)
    return [] if document is None else parse_servers(document, path.name)


def parse_servers(document: dict[str, Any], name: str = OWNED_FILE) -> list[OwnedServer]:
    """The servers of a parsed owned file, each checked; the first bad value is one line naming its key."""
    unknown = sorted(set(document) - {"server"})
    if unknown:
        raise InputError(f"{name}: [[{unknown[0]}]] is not a kind of entry; known: server")
    entries = document.get("server", [])
    if not isinstance(entries, list):
        raise InputError(f"{name}: server must be a list of [[server]] tables")
    servers = [_server(number, entry, name) for number, entry in enumerate(entries, start=1)]
    seen: set[str] = set()
    for number, server in enumerate(servers, start=1):
        if server.name.lower() in seen:
            raise InputError(f"{name}: server[{number}].name {server.name!r} is given twice; each name once")
        seen.add(server.name.lower())
    return servers


def _server(number: int, entry: Any, name: str) -> OwnedServer:
    from planner.hardware import lookup

    where = f"{name}: server[{number}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be a table of keys")
    for key in entry:
        if key not in KEYS:
            hint = checks.suggestion(str(key), KEYS)
            raise InputError(f"{where}.{key} is not a key of a server{hint}; known: {', '.join(KEYS)}")
    for key in REQUIRED:
        if key not in entry:
            raise InputError(f"{where}.{key} is missing")
    for key in ("name", "gpu", "interconnect"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise InputError(f"{where}.{key} must be a name, got {entry[key]!r:.40}")
    try:
        gpu = lookup(entry["gpu"].strip(), field="gpu").spec.id
    except InputError as exc:
        raise InputError(f"{where}.gpu {exc.detail}") from None
    interconnect = entry["interconnect"].strip().lower()
    if interconnect not in OWNED_INTERCONNECTS:
        raise InputError(
            f"{where}.interconnect must be one of {', '.join(OWNED_INTERCONNECTS)}, got {entry['interconnect']!r:.40}"
        )
    sources = entry.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise InputError(f'{where}.sources must be a table of texts (key = "where the figure came from")')

    def figure(key: str, **limits: Any) -> float:
        try:
            return checks.number(key, entry[key], **limits)
        except InputError as exc:
            raise InputError(f"{where}.{key} {exc.detail}") from None

    utilisation = figure("utilisation", at_most=1.0, what="a share above 0")
    power_kw = figure("power_kw") if "power_kw" in entry else None
    gpus = entry["gpus"]
    try:
        count = checks.whole("gpus", gpus, most=64)
    except InputError as exc:
        raise InputError(f"{where}.gpus {exc.detail}") from None
    pue = figure("pue", at_most=MOST_PUE)
    if pue < 1:
        raise InputError(f"{where}.pue must be at least 1 (facility power over IT power), got {pue:g}")
    return OwnedServer(
        name=entry["name"].strip(),
        gpu=gpu,
        gpus=count,
        interconnect=interconnect,
        purchase_usd=figure("purchase_usd"),
        write_off_years=figure("write_off_years", at_most=30.0),
        operations_usd_per_year=figure("operations_usd_per_year", allow_zero=True),
        utilisation=utilisation,
        power_usd_per_kwh=figure("power_usd_per_kwh", allow_zero=True),
        pue=pue,
        power_kw=power_kw,
        sources={str(k): v for k, v in sources.items()},
    )


def example_servers() -> list[OwnedServer]:
    """The bundled example servers (``data/owned_examples.toml``)."""
    return read_servers(examples_path())
