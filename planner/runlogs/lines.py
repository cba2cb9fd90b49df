"""What every log reader shares: numbered lines from a file, one-line errors, tolerant numbers, a bounded sample."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from planner.errors import InputError

# The field every reader's error names: the CLI shows it as the LOG argument.
FIELD = "log"
# Cells tools write where a value is not available (nvidia-smi, dcgmi, CSV exports).
MISSING = frozenset({"", "n/a", "[n/a]", "[not supported]", "not supported", "nan", "none", "null", "-"})
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def bad_line(name: str, number: int, what: str) -> InputError:
    """The one line for a malformed log: the file, the line number and what is wrong."""
    return InputError(f"{name} line {number}: {what}", field=FIELD)


@dataclass(frozen=True)
class LogSource:
    """A log to read: its name for messages and a way to open it as text, as often as sniffing and reading need."""

    name: str
    open: Callable[[], IO[str]]

    @classmethod
    def from_path(cls, path: Path | str) -> LogSource:
        where = Path(path)
        if not where.exists():
            raise InputError(f"{where} does not exist", field=FIELD)
        if where.is_dir():
            raise InputError(f"{where} is a directory; give the log files in it", field=FIELD)
        return cls(where.name, lambda: where.open(encoding="utf-8", errors="replace", newline=""))

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> LogSource:
        """An uploaded file (the app keeps uploads in memory)."""
        return cls(name, lambda: io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=""))

    def head(self, size: int = 65536) -> str:
        """The first ``size`` characters, for sniffing the format."""
        with self.open() as handle:
            return handle.read(size)


def numbered_lines(source: LogSource) -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its end) of a log, one at a time."""
    with source.open() as handle:
        yield from _numbered(handle)


def _numbered(handle: IO[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(handle, start=1):
        # tqdm progress bars redraw with carriage returns: what a terminal shows is the last part.
        yield number, line.rstrip("\r\n").rsplit("\r", 1)[-1]


def number_in(cell: str) -> float | None:
    """The number in a cell such as ``97 %``, ``612.34 W`` or ``1.2e3``; None for a missing value.

    Raises ValueError for text that holds no number, which the caller turns into its file and line.
    """
    try:
        # The common case, a bare number, at C speed; units and missing markers take the slow path.
        value = float(cell)
    except ValueError:
        text = cell.strip()
        if text.lower() in MISSING:
            return None
        found = _NUMBER.match(text)
        # A unit may follow after a space ("97 %"); anything glued to the number ("5O") is not a number.
        if found is None or not (found.end() == len(text) or text[found.end()].isspace()):
            raise ValueError(f"{text[:30]!r} is not a number") from None
        value = float(found.group())
    return value if math.isfinite(value) else None


class BoundedSample:
    """An evenly spaced subsample of a stream of values, never more than ``size`` of them.

    When full, every second kept value is dropped and only every second new value is kept from then on, so a
    million readings of a long run cost what ``size`` do and still span the whole run in order.
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.values: list[float] = []
        self.stride = 1
        self.seen = 0

    def add(self, value: float) -> None:
        if self.seen % self.stride == 0:
            self.values.append(value)
            if len(self.values) > self.size:
                self.values = self.values[::2]
                self.stride *= 2
        self.seen += 1

    def steady(self, warmup_share: float = 0.1) -> float | None:
        """The median after the first ``warmup_share`` of the readings (compilation, caches, data-loader start)."""
        kept = self.values[int(len(self.values) * warmup_share) :] if len(self.values) > 2 else self.values
        if not kept:
            return None
        ordered = sorted(kept)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
