"""A catalog snapshot as files, to share one catalog between machines (issue 38).

``export_snapshot`` writes each provider's current offerings as ``<provider>.csv`` (the schema's columns), its
commitment prices as ``<provider>.commitments.csv`` and a ``manifest.json`` in the bundled catalog's layout, plus each
file's row count and SHA-256. ``pull_snapshot`` reads such a folder or URL, checks every sum and count, validates
every row as a refresh does, and makes all providers current in one transaction: a reader sees the old catalog or the
pulled one, and a failed pull changes nothing. An export without commitment files (schema 3) keeps the current ones.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from planner.catalog.commitments import COMMITMENT_COLUMNS
from planner.catalog.schema import COLUMN_NAMES, SCHEMA_VERSION
from planner.catalog.store import CatalogStore, NewSnapshot, WriteResult
from planner.errors import CatalogError

MANIFEST = "manifest.json"
PULL_TIMEOUT_S = 60
# A manifest names files beside it, never a path elsewhere.
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# Plain HTTP carries no integrity the manifest's sums could rest on, except on the machine itself.
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def export_snapshot(store: CatalogStore, folder: Path) -> dict[str, Any]:
    """Write the store's current snapshot of every provider into ``folder``; returns the manifest written (last,
    so that a folder with a manifest is complete)."""
    folder.mkdir(parents=True, exist_ok=True)
    providers: dict[str, Any] = {}
    for info in store.current_snapshots():
        # By snapshot id: a snapshot never changes, so a refresh meanwhile cannot mix two into one file.
        rows = store.snapshot_rows(info.id)
        data = _csv_bytes(rows)
        name = f"{info.provider}.csv"
        _write_atomic(folder / name, data)
        prices = store.snapshot_commitments(info.id)
        prices_data = _csv_bytes(prices, COMMITMENT_COLUMNS)
        prices_name = f"{info.provider}.commitments.csv"
        _write_atomic(folder / prices_name, prices_data)
        providers[info.provider] = {
            "file": name,
            "source": info.source,
            "as_of": info.as_of,
            "kind": info.kind,
            "rows": len(rows),
            "sha256": hashlib.sha256(data).hexdigest(),
            "commitments": {
                "file": prices_name,
                "rows": len(prices),
                "sha256": hashlib.sha256(prices_data).hexdigest(),
            },
        }
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "providers": providers,
    }
    _write_atomic(folder / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    return manifest


def pull_snapshot(store: CatalogStore, source: str) -> list[WriteResult]:
    """Check and store the snapshot exported at ``source`` (a folder, or an https:// URL of one)."""
    read = _reader(source)
    manifest = _manifest(read(MANIFEST), source)
    snapshots = []
    for provider, entry in manifest["providers"].items():
        rows = _checked_rows(read, source, entry, provider)
        prices = entry.get("commitments") if isinstance(entry, dict) else None
        commitments = None if prices is None else _checked_rows(read, source, prices, f"{provider}.commitments")
        kind = _field(entry, "kind", str, provider)
        if kind not in ("bundled", "live"):
            raise CatalogError(f"{source}: manifest providers.{provider}.kind must be bundled or live, got {kind!r}")
        snapshots.append(
            NewSnapshot(
                provider,
                rows,
                source=f"{_field(entry, 'source', str, provider)} (pulled from {source})",
                as_of=_field(entry, "as_of", str, provider),
                kind=kind,
                commitments=commitments,
            )
        )
    if not snapshots:
        raise CatalogError(f"{source}: the manifest lists no provider; nothing pulled")
    return store.write_snapshots(snapshots)


def _checked_rows(read: Callable[[str], bytes], source: str, entry: Any, where: str) -> list[dict[str, str]]:
    """The rows of the file a manifest entry names (``where``: its place under ``providers``), its sum and count
    checked."""
    name = _field(entry, "file", str, where)
    if not _FILE_NAME.fullmatch(name):
        raise CatalogError(f"{source}: manifest providers.{where}.file {name!r} is not a file name")
    data = read(name)
    digest = hashlib.sha256(data).hexdigest()
    expected = _field(entry, "sha256", str, where)
    if digest != expected.lower():
        raise CatalogError(
            f"{source}: {name} has SHA-256 {digest[:16]}..., the manifest says {expected[:16]}...; nothing pulled"
        )
    try:
        rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise CatalogError(f"{source}: {name} is not a UTF-8 CSV file ({exc}); nothing pulled") from None
    if len(rows) != _field(entry, "rows", int, where):
        raise CatalogError(f"{source}: {name} has {len(rows)} rows, the manifest says {entry['rows']}")
    return rows


def _manifest(data: bytes, source: str) -> dict[str, Any]:
    """The parsed manifest, its schema version no newer than ours."""
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{source}: {MANIFEST} is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("providers"), dict):
        raise CatalogError(f"{source}: {MANIFEST} has no providers table")
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise CatalogError(
            f"{source}: {MANIFEST} schema_version {version!r} is not one this gpu-planner reads (<= {SCHEMA_VERSION})"
        )
    return manifest


def _field(entry: Any, name: str, kind: type, provider: str) -> Any:
    value = entry.get(name) if isinstance(entry, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CatalogError(f"manifest providers.{provider}.{name} must be a {kind.__name__}, got {value!r:.60}")
    return value


def _reader(source: str) -> Callable[[str], bytes]:
    """A function reading one file of the snapshot at ``source`` by name."""
    parts = urlsplit(source)
    if parts.scheme in ("http", "https"):
        if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
            raise CatalogError(f"{source}: pull over https:// (plain http is accepted only from this machine)")
        base = source.rstrip("/")
        return lambda name: _download(f"{base}/{name}")
    folder = Path(source).expanduser()
    if not folder.is_dir():
        raise CatalogError(f"{source} is neither a folder nor an https:// URL of an exported catalog")

    def read(name: str) -> bytes:
        try:
            return (folder / name).read_bytes()
        except OSError as exc:
            raise CatalogError(f"cannot read {folder / name}: {exc.strerror or exc}; nothing pulled") from None

    return read


def _download(url: str) -> bytes:
    """The body of ``url``; anything but a 200 is a CatalogError (the standard library: no extra needed to pull)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=PULL_TIMEOUT_S) as answer:
            return bytes(answer.read())
    except urllib.error.HTTPError as exc:
        raise CatalogError(f"{url}: HTTP {exc.code} {exc.reason}; nothing pulled") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CatalogError(f"{url}: {reason}; nothing pulled") from None


def _csv_bytes(rows: list[tuple[Any, ...]], columns: tuple[str, ...] = COLUMN_NAMES) -> bytes:
    """The rows as CSV with the ``columns`` header; a missing value is an empty field, as in the bundled files."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(["" if value is None else value for value in row] for row in rows)
    return out.getvalue().encode("utf-8")


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a reader of the folder never sees half a file)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
