"""The model against published large-scale runs it was never fitted on (data/external_checks.csv).

    .venv/bin/python bench/external.py [--params FILE]

Each row is a training run reported by its authors (Megatron-LM on Selene, Llama 3.1 405B at Meta): other software
stacks, 32 to 16,384 GPUs, tensor and pipeline parallelism at scale, none of it in data/benchmarks.csv. The reported
TFLOP/s per GPU become tokens/s per GPU with the authors' own FLOP counts, then are compared with:

- "layout": the model on the authors' layout (tensor, pipeline, data parallel, global batch, recomputation), with the
  fastest micro-batch of 1, 2, 4 or 8 that fits memory (recomputation added only if nothing fits without it);
- "estimate": ``planner.estimate`` on the same GPUs, choosing its own layout, as a user gets it. This one answers a
  different question: the search avoids full recomputation where memory allows and assumes FlashAttention, so it is
  expected to beat a 2021 stack that recomputed every layer (that alone is 4/3 of the work).

Prints each row and the median absolute percentage error of both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.perf import model
from planner.perf.calibration import ExternalCheck, layout_prediction, load_external_checks


def estimate_prediction(check: ExternalCheck) -> float:
    row = check.row
    result = model.estimate(
        check.workload, row["gpu"], int(row["gpus"]), "bf16", network_gbps=float(row["network_gbps"])
    )
    return result.throughput_per_gpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--params", type=Path, help="perf_params.json to evaluate instead of the bundled one")
    args = parser.parse_args()
    if args.params:
        model.set_perf_params(json.loads(args.params.read_text(encoding="utf-8")))
    layout_errors, estimate_errors = [], []
    print(f"{'run':18s} {'GPU':10s} {'GPUs':>6s} {'published':>10s} {'layout':>15s} {'estimate':>15s}  tokens/s/GPU")
    for check in load_external_checks():
        row = check.row
        on_layout, estimated = layout_prediction(check), estimate_prediction(check)
        err_layout = (on_layout / check.measured_per_gpu - 1) * 100
        err_estimate = (estimated / check.measured_per_gpu - 1) * 100
        layout_errors.append(abs(err_layout))
        estimate_errors.append(abs(err_estimate))
        print(
            f"{row['model']:18s} {row['gpu']:10s} {int(row['gpus']):6d} {check.measured_per_gpu:10.0f} "
            f"{on_layout:8.0f} {err_layout:+5.0f}% {estimated:8.0f} {err_estimate:+5.0f}%"
        )
    summary = {
        "external_rows": len(layout_errors),
        "layout_median_ape": round(statistics.median(layout_errors), 1),
        "estimate_median_ape": round(statistics.median(estimate_errors), 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
