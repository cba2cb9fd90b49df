"""Options: every kept offering row x node count x pricing, as indices into the cost grid, with what each costs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]
    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]


@dataclass
class Options:
    """Parallel arrays, one entry per option: its catalog row, grid cell, how many offerings it stands for (zones of
    one region), spot (1) or on demand (0), instances, price per instance-hour, expected wall-clock and cost."""

    row: IntArray
    cell: IntArray
    weight: IntArray
    spot: IntArray
    nodes: IntArray
    price: FloatArray
    wall: FloatArray
    cost: FloatArray

    def take(self, index: IntArray | BoolArray) -> Options:
        """The options at ``index`` (positions or a mask), in its order."""
        return Options(*(getattr(self, name)[index] for name in self.__dataclass_fields__))

    def __len__(self) -> int:
        return len(self.row)
