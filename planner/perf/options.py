"""The user's own evidence about speed, which every estimate of a job takes the same way."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from planner import checks
from planner.errors import InputError


@dataclass(frozen=True)
class ModelOptions:
    """The user's own evidence about speed, passed to the estimator for every configuration.

    ``measured`` throughput (in the workload's unit) on ``measured_on`` ("GPU" or "GPU:COUNT") rescales the model
    through its ratios; ``efficiency`` (model FLOPs utilisation, 0-1) replaces the fitted one.
    """

    measured: float | None = None
    measured_on: str | None = None
    efficiency: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "measured", checks.optional_number("measured", self.measured))
        if self.efficiency is not None:
            what = "a fraction in (0, 1] (e.g. 0.3 for 30% MFU)"
            object.__setattr__(self, "efficiency", checks.fraction("efficiency", self.efficiency, what=what))
        if (self.measured is None) != (self.measured_on is None):
            raise InputError(
                "and measured_on go together (e.g. measured 1000 on A100:1)",
                field="measured",
                related=("measured_on",),
            )
        if self.measured is not None and self.efficiency is not None:
            raise InputError(
                "cannot be given with measured and measured_on; give one or the other",
                field="efficiency",
                related=("measured", "measured_on"),
            )

    def as_kwargs(self) -> dict[str, Any]:
        """The options that are set, as keyword arguments of the estimator."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


# The names of the user's evidence, stated once: the faces' flags and form fields, and the façade's keyword options.
EVIDENCE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ModelOptions))
