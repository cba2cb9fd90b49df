"""The model against published large-scale runs it was never fitted on (data/external_checks.csv).

    .venv/bin/python bench/external.py [--params FILE]

Each row is a training run reported by its authors (Megatron-LM on Selene, Llama 3.1 405B at Meta): other software
stacks, 32 to 16,384 GPUs, tensor and pipeline parallelism at scale, none of it in data/benchmarks.csv (NVIDIA's own
published NeMo runs are calibration data, in data/published_runs.csv). Reported TFLOP/s per GPU become tokens/s per
GPU with the authors' own FLOP counts, then are compared with:

- "layout": the model on the authors' layout (tensor, pipeline, data parallel, global batch, recomputation), with the
  fastest micro-batch of 1, 2, 4 or 8 that fits memory (recomputation added only if nothing fits without it); n/a for
  layouts the model does not describe (context parallelism, interleaved pipeline stages);
- "estimate": ``planner.estimate`` on the same GPUs, choosing its own layout, as a user gets it, told the run's
  activation checkpointing (``recompute="on"`` where the publication recomputed every layer, as Megatron-LM 2021 did).
  It still assumes FlashAttention and fused layer norms, so it is expected to beat a 2021 stack that materialised
  attention scores.

Prints each row and the median absolute percentage error of both. Then NVIDIA's DeepLearningExamples BERT-Large and
ResNet-50 tables (data/dle_runs.csv: the scripts Lambda's rows ran, a second BERT and CNN source the fit never sees)
through ``estimate`` with what a user types, and timm's ResNet-50 benchmark on the RTX 3090 and 4090
(data/timm_runs.csv: one author's 2022 and 2025 posts, a second CNN source on GeForce cards). Last, NVIDIA's own
published NeMo runs (calibration data for the tuned stack, data/published_runs.csv) through
``estimate --stack tuned``, each publication refitted without it (needs numpy and scipy, the development
dependencies).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import perflab
from perflab import estimate_prediction, layout_prediction, load_external_checks

from planner._data import data_dir
from planner.perf.params import PerfParams, default_params


def _median(values: list[float]) -> float | None:
    kept = [v for v in values if not math.isnan(v)]
    return round(statistics.median(kept), 1) if kept else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--params", type=Path, help="perf_params.json to evaluate instead of the bundled one")
    args = parser.parse_args()
    fitted = (
        PerfParams.from_dict(json.loads(args.params.read_text(encoding="utf-8"))) if args.params else default_params()
    )
    by_source: dict[str, tuple[list[float], list[float]]] = {}
    columns = ("published", "layout", "estimate")
    print(f"{'run':16s} {'GPU':9s} {'prec':4s} {'GPUs':>5s} {columns[0]:>9s} {columns[1]:>14s} {columns[2]:>14s}")
    for check in load_external_checks():
        row = check.row
        on_layout, estimated = layout_prediction(check, fitted), estimate_prediction(check, fitted)
        err_layout = (on_layout / check.measured_per_gpu - 1) * 100
        err_estimate = (estimated / check.measured_per_gpu - 1) * 100
        layout_errors, estimate_errors = by_source.setdefault(row["source"].split(",")[0].split(" (")[0], ([], []))
        layout_errors.append(abs(err_layout))
        estimate_errors.append(abs(err_estimate))
        layout_text = f"{on_layout:7.0f} {err_layout:+5.0f}%" if not math.isnan(on_layout) else f"{'n/a':>14s}"
        print(
            f"{row['model']:16s} {row['gpu']:9s} {row['precision']:4s} {int(row['gpus']):5d} "
            f"{check.measured_per_gpu:9.0f} {layout_text} {estimated:7.0f} {err_estimate:+5.0f}%"
        )
    print("median absolute error by source: on the published layout | estimate's own layout")
    summary: dict[str, object] = {}
    for source, (layout_errors, estimate_errors) in by_source.items():
        layout, estimate = _median(layout_errors), _median(estimate_errors)
        print(
            f"  {source:60s} {layout if layout is not None else 'n/a':>6} | {estimate:>6} ({len(estimate_errors)} runs)"
        )
        summary[source] = {"layout_median_ape": layout, "estimate_median_ape": estimate, "runs": len(estimate_errors)}
    summary["dle_estimate"] = _dle(fitted)
    summary["timm_estimate"] = _timm(fitted)
    summary["lambda_v2_estimate"] = _lambda_v2(fitted)
    summary["nvidia_tuned_estimate_held_out"] = _nvidia_held_out()
    print(json.dumps(summary))


def _signed_medians(groups: dict[str, list[float]], width: int) -> dict[str, object]:
    """Each group's median signed error, printed one per line, and returned by name."""
    medians: dict[str, object] = {}
    for name, values in sorted(groups.items()):
        medians[name] = median = _median(values)
        print(f"  {name:{width}s} median signed error {median:+.1f}% ({len(values)} runs)")
    return medians


def _dle(fitted: PerfParams) -> dict[str, object]:
    """NVIDIA's DeepLearningExamples BERT-Large and ResNet-50 tables (never fitted) through ``estimate``."""
    print("NVIDIA DeepLearningExamples (data/dle_runs.csv, not fitted) through `estimate`, typical stack; the tuned")
    print("one beside AMP ResNet-50, whose channels-last recipe sits between the two (sequences/s or images/s):")
    groups: dict[str, list[float]] = {}
    skipped = 0
    for row in perflab.load_dle_checks():
        if row["excluded_reason"]:
            skipped += 1
            continue
        measured = float(row["throughput_total"])
        predicted = perflab.table_prediction(row, "typical", fitted)
        error = (predicted / measured - 1) * 100
        if row["workload"] == "resnet50":
            script = "ResNet-50"
        else:
            script = "BERT pre-training ph. 1" if row["mode"] == "pretrain" else "BERT SQuAD fine-tuning"
        groups.setdefault(f"{script}, {row['precision']}", []).append(error)
        tuned = ""
        if row["workload"] == "resnet50" and row["precision"] == "fp16":
            tuned_error = (perflab.table_prediction(row, "tuned", fitted) / measured - 1) * 100
            groups.setdefault("ResNet-50, fp16, tuned stack", []).append(tuned_error)
            tuned = f"  tuned {tuned_error:+6.1f}%"
        print(
            f"  {script:23s} {row['gpu']:9s} {row['precision']:4s} {int(row['gpus']):4d} GPUs "
            f"{measured:9.1f} {predicted:9.1f} {error:+6.1f}%{tuned}"
        )
    errors = [e for name, values in groups.items() if "tuned" not in name for e in values]
    result: dict[str, object] = {"runs": len(errors), "median_ape": _median([abs(e) for e in errors])}
    result.update(_signed_medians(groups, 36))
    print(
        f"  all {len(errors)} runs: median |error| {result['median_ape']}%; "
        f"{skipped} LDDL-binned BERT phase-2 runs left out"
    )
    return result


def _timm(fitted: PerfParams) -> dict[str, object]:
    """timm's ResNet-50 training benchmark on GeForce cards (never fitted) through ``estimate``, typical stack."""
    print("timm benchmark.py, ResNet-50 training at batch 256 (data/timm_runs.csv, not fitted) through `estimate`:")
    errors: dict[str, list[float]] = {}
    for row in perflab.load_timm_checks():
        measured = float(row["throughput_total"])
        predicted = perflab.table_prediction(row, "typical", fitted)
        error = (predicted / measured - 1) * 100
        errors.setdefault(row["gpu"], []).append(error)
        print(
            f"  {row['source_date']:10s} {row['gpu']:9s} {row['precision']:4s} "
            f"{measured:9.1f} {predicted:9.1f} {error:+6.1f}%"
        )
    every = [e for values in errors.values() for e in values]
    result: dict[str, object] = {"runs": len(every), "median_ape": _median([abs(e) for e in every])}
    for gpu, values in sorted(errors.items()):
        result[gpu] = _median(values)
        print(f"  {gpu:9s} median signed error {result[gpu]:+.1f}% ({len(values)} runs)")
    print(f"  all {len(every)} runs: median |error| {result['median_ape']}%")
    return result


def _lambda_v2(fitted: PerfParams) -> dict[str, object]:
    """Lambda's second round (H100, H200, GH200, B200; never fitted, one row sets the typical CNN floor) through
    ``estimate``, with each GPU's speed relative to an H100 SXM on the same job, measured and predicted."""
    print("Lambda round 2 (data/lambda_v2_runs.csv, not fitted: NGC containers of 2024-2025, DLE scripts) through")
    print("`estimate`, typical stack; ratio = this GPU over an H100 SXM, same job and GPU count, measured | predicted:")
    rows = perflab.load_lambda_v2_checks()
    # One estimate per row: its throughput and its band (a configuration that does not fit has neither).
    estimates = {id(row): perflab.table_estimate(row, "typical", fitted) for row in rows}
    predicted = {id(row): estimates[id(row)].throughput or math.nan for row in rows}
    h100 = {(row["workload"], row["precision"], row["gpus"]): row for row in rows if row["gpu"] == "H100-SXM"}
    errors: dict[str, list[float]] = {}
    ratio_errors: list[float] = []
    inside = total = 0
    for row in rows:
        measured = float(row["throughput_total"])
        error = (predicted[id(row)] / measured - 1) * 100
        calibrating = perflab.lambda_v2_key(row) in perflab.LAMBDA_V2_CALIBRATION
        family = "ResNet-50" if row["workload"] == "resnet50" else "BERT"
        ratio_text = ""
        base = h100.get((row["workload"], row["precision"], row["gpus"]))
        if base is not None and base is not row:
            measured_ratio = measured / float(base["throughput_total"])
            predicted_ratio = predicted[id(row)] / predicted[id(base)]
            ratio_text = f"  x{measured_ratio:4.2f} | x{predicted_ratio:4.2f}"
            if not calibrating:
                ratio_errors.append(abs(predicted_ratio / measured_ratio - 1) * 100)
        if not calibrating:
            errors.setdefault(f"{family} {row['gpu']}", []).append(error)
            result = estimates[id(row)]
            if result.throughput_low is not None and result.throughput_high is not None:
                total += 1
                inside += result.throughput_low <= measured <= result.throughput_high
        print(
            f"  {row['workload']:10s} {row['precision']:4s} {row['gpu']:9s} {int(row['gpus']):2d} GPUs "
            f"{measured:8.1f} {predicted[id(row)]:8.1f} {error:+6.1f}%{ratio_text}"
            + ("  (sets the typical CNN floor)" if calibrating else "")
        )
    every = [e for values in errors.values() for e in values]
    result_summary: dict[str, object] = {
        "runs": len(every),
        "median_ape": _median([abs(e) for e in every]),
        "ratio_vs_h100_median_ape": _median(ratio_errors),
        "band_coverage_pct": round(100 * inside / total, 1) if total else None,
    }
    result_summary.update(_signed_medians(errors, 22))
    print(
        f"  all {len(every)} held-out runs: median |error| {result_summary['median_ape']}%; ratio to an H100 "
        f"median |error| {result_summary['ratio_vs_h100_median_ape']}% ({len(ratio_errors)} pairs); "
        f"low..high band holds {result_summary['band_coverage_pct']}%"
    )
    return result_summary


def _nvidia_held_out() -> dict[str, object]:
    """NVIDIA's published runs (calibration data) through ``estimate --stack tuned``, each publication held out."""
    rows = perflab.load_benchmarks()
    runs = perflab.load_external_checks(data_dir() / "published_runs.csv", stack="tuned")
    print("NVIDIA's runs through `estimate --stack tuned` (its own layout), each publication refitted without it:")
    errors: list[float] = []
    result: dict[str, object] = {}
    for source in sorted({run.row["source"].split(":")[0] for run in runs}):
        held_out = PerfParams.from_dict(perflab.fit([r for r in rows if r.source_name != source], perflab.PRIORS))
        mine = [
            (estimate_prediction(run, held_out) / run.measured_per_gpu - 1) * 100
            for run in runs
            if run.row["source"].startswith(source)
        ]
        errors.extend(abs(e) for e in mine)
        result[source] = _median([abs(e) for e in mine])
        signed = statistics.median(mine)
        print(f"  {source:32s} median |error| {result[source]}% (signed {signed:+.1f}%, {len(mine)} runs)")
    result["all"] = _median(errors)
    print(f"  all {len(errors)} runs: median |error| {result['all']}%")
    return result


if __name__ == "__main__":
    main()
