"""Rebuild ``data/benchmarks.csv`` from the published measurements and fit ``data/perf_params.json``.

The measurements are the reference folder's and ``data/published_runs.csv`` (NVIDIA's published NeMo / Megatron-Core
runs on H100 and B200, BF16 and FP8, transcribed with their page).

    .venv/bin/python scripts/fit_perf.py [--reference ../shared/reference/benchmarks] [--no-fit]

The reference folder holds measurements exactly as published (Lambda deeplearning-benchmark, MosaicML llm-foundry,
vTrain). This script normalises them into the project's schema (canonical GPU ids, per-GPU and total throughput in
images/s, sequences/s or tokens/s, the parallel layout each run used), records why a row is not used, then fits the
few coefficients of the model by weighted least squares on log errors (numpy + scipy).
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import re
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import perflab  # noqa: E402

from planner.hardware import lookup  # noqa: E402
from planner.perf.links import nvlink_domain  # noqa: E402
from planner.perf.workloads import WORKLOADS  # noqa: E402

# MPT shapes (llm-foundry yamls): name -> (layers, hidden, heads).
MPT_SHAPES = {
    "mpt-125m": (12, 768, 12),
    "mpt-350m": (24, 1024, 16),
    "mpt-760m": (24, 1536, 12),
    "mpt-1b": (24, 2048, 16),
    "mpt-3b": (32, 2560, 20),
    "mpt-7b": (32, 4096, 32),
    "mpt-13b": (40, 5120, 40),
    "mpt-30b": (48, 7168, 56),
    "mpt-70b": (80, 8192, 64),
}
LAMBDA_WORKLOADS = {"resnet50": "resnet50", "bert-base": "bert-base", "bert-large": "bert-large"}

# Lambda's BERT rows ran NVIDIA DeepLearningExamples' run_squad.py, which reports training_sequences_per_second as
# train_batch_size x max_steps x GPUs / training time, however many steps ran. Lambda's v1 configs ask for 2 epochs
# and max_steps 100; the loop runs until step max_steps + 1 or the end of the epochs, whichever comes first, over
# SQuAD v1.1's 88,641 training features (sequence 384, stride 128; the runs' own logs print the count). With 320
# sequences per GPU on 8 GPUs an epoch is 35 steps: 70 ran, and the reported rate is 1.44x what was trained (8 GPUs
# then trained faster per GPU than one: the super-linear BERT-Base rows). Every row becomes sequences trained / time.
SQUAD_TRAIN_FEATURES = 88_641  # DLE log "training_features : 88641" (lambdal/deeplearning-benchmark results, v1)
LAMBDA_SQUAD_EPOCHS = 2  # pytorch/scripts/config_v1/*.sh: num_train_epochs 2.0
LAMBDA_SQUAD_MAX_STEPS = 100  # pytorch/scripts/config_v1/*.sh: max_steps 100


def squad_trained_share(gpus: int, batch_per_gpu: int) -> float:
    """Sequences run_squad.py trained over the sequences its reported rate assumes (batch x max_steps x GPUs)."""
    # A DistributedSampler pads every rank to the same share; each epoch's last batch is the remainder.
    per_rank = math.ceil(SQUAD_TRAIN_FEATURES / gpus)
    steps_per_epoch = math.ceil(per_rank / batch_per_gpu)
    trained = steps = 0
    for _epoch in range(LAMBDA_SQUAD_EPOCHS):
        for step in range(steps_per_epoch):
            if steps > LAMBDA_SQUAD_MAX_STEPS:  # the script's break: global_step > max_steps
                break
            trained += min(batch_per_gpu, per_rank - step * batch_per_gpu)
            steps += 1
    return trained / (batch_per_gpu * LAMBDA_SQUAD_MAX_STEPS)


def _canonical_gpu(label: str) -> tuple[str, str]:
    """Canonical id for a reference GPU label, and a note when the label was incomplete."""
    if label.startswith("A100 (SXM"):
        return "A100-40GB", "A100 variant not stated by vTrain: assumed SXM4 40GB"
    if label.startswith("V100-16GB"):
        return "V100-16GB", "Lambda Cloud V100: SXM2 16GB assumed"
    return lookup(label).spec.id, ""


def _precision(text: str, gpu_id: str) -> str:
    if "fp8" in text:
        return "fp8"
    if "bf16" in text:
        return "bf16"
    if text.startswith("fp32"):
        # NGC containers run "fp32" as TF32 on Ampere and newer.
        return "tf32" if lookup(gpu_id).spec.supports("tf32") else "fp32"
    return "fp16"


def _interconnect(text: str, gpus: int, gpu_id: str) -> str:
    """The link a reference row's GPUs all-reduce over. A row that names NVLink only to say it is absent or unstated
    ("PCIe Gen5 (no NVLink bridge stated)", "PCIe Gen4 (NVLink bridge not stated)") is a PCIe box: Lambda's RTX A6000
    pair scales like its PCIe neighbours (about 4 GB/s of all-reduce bandwidth implied by BERT-Large, not the 56 GB/s
    each way of an A6000 NVLink bridge). Lambda Cloud's multi-V100 instances state none; their SXM2 boards are assumed
    NVLink-connected."""
    lowered = text.lower()
    denied = "no nvlink" in lowered or "not stated" in lowered
    if "nvswitch" in lowered or ("nvlink" in lowered and not denied) or gpu_id.startswith("V100-16GB"):
        return "nvswitch"
    return "pcie" if gpus > 1 else ""


def _grab(pattern: str, text: str, default: str = "") -> str:
    found = re.search(pattern, text)
    return found.group(1) if found else default


def _lambda_row(row: dict[str, str]) -> dict[str, Any] | None:
    workload = next((ours for key, ours in LAMBDA_WORKLOADS.items() if row["workload"].startswith(key)), None)
    gpu_id, gpu_note = _canonical_gpu(row["gpu"])
    gpus = int(row["num_gpus"])
    out: dict[str, Any] = {
        "gpu": gpu_id,
        "gpus": gpus,
        "nodes": 1,
        "gpus_per_node": gpus,
        "interconnect": _interconnect(row["interconnect"], gpus, gpu_id),
        "precision": _precision(row["precision"], gpu_id),
        "data_parallel": gpus,
        "sharded": "false",
        "recompute": "false",
        "micro_batch": int(row["batch_per_gpu"]),
        "global_batch": int(row["batch_per_gpu"]) * gpus,
        "notes": "; ".join(
            n
            for n in ("PyTorch DDP, NVIDIA DLE scripts, NGC 22.09", _grab(r'label "([^"]+)"', row["notes"]), gpu_note)
            if n
        ),
    }
    unit = "images/s" if row["throughput_unit"] == "images/s" else "sequences/s"
    if "squad" in row["workload"].lower():
        share = squad_trained_share(gpus, int(row["batch_per_gpu"]))
        out["rate_correction"] = share
        if abs(share - 1.0) > 0.02:
            out["notes"] += (
                f"; reported rate x{share:.3f}: run_squad.py divides max_steps x batch by the time, but the run"
                f" stopped after {LAMBDA_SQUAD_EPOCHS} epochs"
            )
    if workload is None:
        out.update(workload=row["workload"].split(" ")[0], family="other", throughput_unit=row["throughput_unit"])
        out["excluded_reason"] = "no matching workload in the model (only ResNet-50 and BERT are modelled)"
        return out
    preset = WORKLOADS[workload]
    out.update(
        workload=workload,
        family=preset.kind,
        params=preset.params,
        layers=preset.layers or "",
        hidden=preset.hidden or "",
        heads=preset.heads or "",
        vocab=preset.vocab or "",
        seq_len=int(row["seq_len_or_image_size"]) if preset.kind != "cnn" else "",
        mode="finetune" if "fine-tune" in row["workload"] else "pretrain",
        throughput_unit=unit,
    )
    return out


def _mosaic_row(row: dict[str, str]) -> dict[str, Any]:
    name = row["workload"].split(" ")[0]
    layers, hidden, heads = MPT_SHAPES[name]
    notes = row["notes"]
    gpu_id, _ = _canonical_gpu(row["gpu"])
    gpus = int(row["num_gpus"])
    micro = int(_grab(r"micro-batch=(\d+)", notes, row["batch_per_gpu"]))
    global_seq = int(_grab(r"global batch=(\d+) seq", notes, str(micro * gpus)))
    network = _grab(r"(\d+) Gbps", row["interconnect"])
    return {
        "workload": name,
        "family": "decoder",
        "params": float(row["model_params"]),
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "vocab": 50368,
        "seq_len": int(row["seq_len_or_image_size"]),
        "mode": "pretrain",
        "precision": _precision(row["precision"], gpu_id),
        "gpu": gpu_id,
        "gpus": gpus,
        "nodes": int(float(row["num_nodes"])),
        "gpus_per_node": 8,
        "interconnect": "nvswitch",
        # The H100 sections do not state the fabric; MosaicML's H100 clusters used 3200 Gbps InfiniBand.
        "network_gbps": float(network) if network else 3200.0,
        "data_parallel": gpus,
        # SHARD_GRAD_OP (ZeRO-2) moves about what DDP moves; FULL_SHARD re-gathers weights every micro-batch.
        "sharded": "true" if "FULL_SHARD" in notes else "false",
        "recompute": "true" if "activation checkpointing=True" in notes else "false",
        "micro_batch": micro,
        "global_batch": global_seq,
        "throughput_unit": "tokens/s",
        "per_gpu_given": True,
        "mfu_reported": float(row["mfu_if_given"]) / 100 if row["mfu_if_given"] else "",
        "notes": "Composer + PyTorch FSDP, FlashAttention; " + _grab(r'section "([^"]+)"', notes),
    }


def _vtrain_row(row: dict[str, str]) -> dict[str, Any]:
    notes = row["notes"]
    hidden = int(_grab(r"hidden (\d+)", row["workload"]))
    layers = int(_grab(r"(\d+) layers", row["workload"]))
    heads = int(_grab(r"(\d+) heads", row["workload"]))
    seq = int(row["seq_len_or_image_size"])
    vocab = 50257  # GPT-2 tokenizer used by Megatron-DeepSpeed examples
    gpu_id, gpu_note = _canonical_gpu(row["gpu"])
    global_batch = int(_grab(r"global batch (\d+)", notes))
    return {
        "workload": f"gpt-l{layers}-h{hidden}",
        "family": "decoder",
        "params": 12.0 * layers * hidden * hidden + vocab * hidden + seq * hidden,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "vocab": vocab,
        "seq_len": seq,
        "mode": "pretrain",
        "precision": "fp16",
        "gpu": gpu_id,
        "gpus": int(row["num_gpus"]),
        "nodes": 1,
        "gpus_per_node": int(row["num_gpus"]),
        "interconnect": "nvswitch",
        "tensor_parallel": int(_grab(r"TP=(\d+)", notes)),
        "pipeline_parallel": int(_grab(r"PP=(\d+)", notes)),
        "data_parallel": int(_grab(r"DP=(\d+)", notes)),
        "sharded": "false",
        "recompute": "true" if "activation checkpointing" in notes else "false",
        "micro_batch": int(_grab(r"micro-batch (\d+)", notes)),
        "global_batch": global_batch,
        "throughput_unit": "tokens/s",
        "iteration_ms": float(row["throughput"]),
        "notes": "Megatron-DeepSpeed; " + gpu_note,
    }


def _published_row(row: dict[str, str], index: int) -> dict[str, Any]:
    """A run from data/published_runs.csv (sources outside the reference folder, transcribed with their page)."""
    gpus = int(row["gpus"])
    tp, pp, cp = int(row["tensor_parallel"]), int(row["pipeline_parallel"]), int(row["context_parallel"])
    per_gpu = perflab.measured_per_gpu(row)
    return {
        "source": row["source"],
        "source_date": row["source_date"],
        "source_row": index,
        "workload": row["model"],
        "family": "decoder",
        "params": float(row["params"]),
        "layers": int(row["layers"]),
        "hidden": int(row["hidden"]),
        "heads": int(row["heads"]),
        "vocab": int(row["vocab"]),
        "seq_len": int(row["seq_len"]),
        "mode": "pretrain",
        "stack": "tuned",
        "precision": row["precision"],
        "gpu": lookup(row["gpu"]).spec.id,
        "gpus": gpus,
        "nodes": max(1, gpus // 8),
        "gpus_per_node": min(nvlink_domain(lookup(row["gpu"]).spec), gpus),
        "interconnect": "nvswitch",
        "network_gbps": float(row["network_gbps"]),
        "tensor_parallel": tp,
        "pipeline_parallel": pp,
        "data_parallel": gpus // (tp * pp * cp),
        "context_parallel": cp,
        "virtual_pipeline": int(row["virtual_pipeline"]),
        "sharded": row["sharded"],
        "recompute": row["recompute"],
        "micro_batch": int(row["micro_batch"]),
        "global_batch": int(row["global_batch"]),
        "throughput_total": round(per_gpu * gpus, 3),
        "throughput_per_gpu": round(per_gpu, 3),
        "throughput_unit": "tokens/s",
        "use": "true",
        "excluded_reason": "",
        "notes": "Megatron-Core / NeMo (Transformer Engine, FlashAttention); " + row["notes"],
    }


def build_rows(reference: Path) -> list[dict[str, Any]]:
    """Every reference measurement in the project's schema, with use=false and the reason where excluded."""
    out: list[dict[str, Any]] = []
    with (reference / "measurements.csv").open(newline="", encoding="utf-8") as handle:
        for index, row in enumerate(csv.DictReader(handle), start=2):
            source = row["source"]
            if source.startswith("lambdal"):
                built = _lambda_row(row)
            elif source.startswith("mosaicml"):
                built = _mosaic_row(row)
            elif source.startswith("VIA-Research"):
                built = _vtrain_row(row)
            else:
                continue
            if built is None:
                continue
            value = float(row["throughput"])
            gpus = int(built["gpus"])
            if "iteration_ms" in built:
                total = built["global_batch"] * built["seq_len"] / (built.pop("iteration_ms") / 1000.0)
            elif built.pop("per_gpu_given", False):
                total = value * gpus
            else:
                total = value
            total *= built.pop("rate_correction", 1.0)
            reason = built.pop("excluded_reason", "")
            if "implausible" in row["notes"].lower():
                reason = "flagged implausible in the source notes: " + _grab(r"QUALITY: ([^;]+)", row["notes"], "")
            built.update(
                source=source,
                source_date=row["source_date"],
                source_row=index,
                throughput_total=round(total, 3),
                throughput_per_gpu=round(total / gpus, 3),
                use="false" if reason else "true",
                excluded_reason=reason,
            )
            built.setdefault("tensor_parallel", 1)
            built.setdefault("pipeline_parallel", 1)
            out.append(built)
    with (ROOT / "data" / "published_runs.csv").open(newline="", encoding="utf-8") as handle:
        for index, row in enumerate(csv.DictReader(handle), start=2):
            out.append(_published_row(row, index))
    return out


def build_sealed_rows(built: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split ``built`` into the rows the fit may read and the sealed set's (``scripts/seal.py``), adding the sealed
    published runs: those are normalised here and written to ``data/sealed/benchmarks.csv``, never fitted."""
    sealed_dir = ROOT / "data" / "sealed"
    with (sealed_dir / "sources.csv").open(newline="", encoding="utf-8") as handle:
        names = {row["source"] for row in csv.DictReader(handle) if row["file"] == "measurements.csv"}
    sealed = [row for row in built if row["source"] in names]
    with (sealed_dir / "published_runs.csv").open(newline="", encoding="utf-8") as handle:
        for index, row in enumerate(csv.DictReader(handle), start=2):
            sealed.append(_published_row(row, index))
    return [row for row in built if row["source"] not in names], sealed


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=perflab.COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({column: row.get(column, "") for column in perflab.COLUMNS})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference" / "benchmarks")
    parser.add_argument("--no-fit", action="store_true", help="Only rebuild data/benchmarks.csv.")
    args = parser.parse_args()
    if not (args.reference / "measurements.csv").is_file():
        parser.error(f"--reference {args.reference}: no measurements.csv there")
    built, sealed = build_sealed_rows(build_rows(args.reference))
    write_rows(built, ROOT / "data" / "benchmarks.csv")
    write_rows(sealed, ROOT / "data" / "sealed" / "benchmarks.csv")
    used = [r for r in built if r["use"] == "true"]
    print(f"data/benchmarks.csv: {len(built)} rows, {len(used)} used for calibration", file=sys.stderr)
    if args.no_fit:
        return
    rows = perflab.load_benchmarks(ROOT / "data" / "benchmarks.csv")
    params = perflab.fit(rows, perflab.PRIORS)
    perflab.solve_tuned_cnn(params)
    perflab.solve_tuned_encoder(params)
    # The TF32/FP32 shares on the open tables, the CNN floor (its pin runs TF32), then the shares again.
    perflab.solve_precision_shares(params)
    perflab.solve_typical_cnn(params)
    perflab.solve_precision_shares(params)
    # The band comes from estimate()'s held-out errors (what users get): per side, the wider of leave-one-source-out
    # (another software stack) and leave-one-GPU-out. The widening for a GPU without calibration data is how much
    # wider the leave-one-GPU-out errors of transformers run than their band.
    start = perflab.fold_params(params, params)
    by_gpu = perflab.cross_validate_both(rows, perflab.PRIORS, lambda row: row.gpu.id, start).through
    by_source = perflab.cross_validate_both(rows, perflab.PRIORS, lambda row: row.source_name, start).through
    jobs = perflab.fastest_layout_per_job(rows)
    held_gpu = {i: by_gpu[i] for i in jobs if i in by_gpu}
    held_source = {i: by_source[i] for i in jobs if i in by_source}
    params["band"] = {}
    for family in ("cnn", "encoder", "decoder", "transformer"):
        gpu_out = perflab.band_from_errors(rows, held_gpu, family)
        source_out = perflab.band_from_errors(rows, held_source, family)
        params["band"][family] = [max(a, b) for a, b in zip(gpu_out, source_out, strict=True)]
    gpu_out = perflab.band_from_errors(rows, held_gpu, "transformer")
    widen = max(b / a for a, b in zip(params["band"]["transformer"], gpu_out, strict=True))
    params["uncalibrated_band_factor"] = round(min(2.5, max(1.2, widen)), 2)
    # What the held-out Lambda round-2 runs say of the GPUs the fit has not measured (each estimate there says it).
    params["held_out_checks"] = perflab.held_out_checks(params)
    params["scale_out_checks"] = perflab.scale_out_checks(params)
    perflab.solve_scale_band(params)
    params["fitted_on"] = {
        "rows": len(rows),
        "sources": sorted({row.source_name for row in rows}),
        "fitted_at": datetime.now(UTC).strftime("%Y-%m-%d"),
        "in_sample_median_ape": round(
            statistics.median(
                perflab.ape(p, r.throughput_total)
                for p, r in zip(perflab.predict_with(params, rows), rows, strict=True)
            ),
            2,
        ),
    }
    for section in ("transformer", "cnn", "comm"):
        params[section] = {
            k: (float(f"{v:.5g}") if isinstance(v, float) and math.isfinite(v) else v)
            for k, v in params[section].items()
        }
    (ROOT / "data" / "perf_params.json").write_text(
        json.dumps(copy.deepcopy(params), indent=2) + "\n", encoding="utf-8"
    )
    print(json.dumps({k: params[k] for k in ("transformer", "cnn", "comm", "band", "fitted_on")}, indent=1))


if __name__ == "__main__":
    main()
