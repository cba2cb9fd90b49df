"""What measurements kept out of the fit say of an estimate, in the words every face uses."""

from __future__ import annotations


def held_out_verdict(error_pct: float) -> str:
    """How far held-out runs were from the model, in words (``error_pct``: the model's median error on them in
    percent, positive where the model is faster than measured)."""
    if abs(error_pct) < 5.0:
        return f"within {max(abs(error_pct), 1.0):.0f}% of what this model gives"
    return f"{abs(error_pct):.0f}% {'slower' if error_pct > 0 else 'faster'} than this model gives"


def scale_out_verdict(ratio: float) -> str:
    """What NVIDIA's held-out MLPerf runs with short steps across many nodes found, in words (``ratio``: their median
    measured over predicted time)."""
    return f"short steps across 8+ nodes: held-out MLPerf runs like this took {ratio:.2f}x the model's time"
