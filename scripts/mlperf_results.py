"""Extract MLPerf Training time-to-train of 8-GPU systems into ``data/mlperf_training.csv``, and of NVIDIA's scale-out
systems (64 to 3,584 GPUs) into ``data/mlperf_scale_out.csv``.

    .venv/bin/python scripts/mlperf_results.py --results DIR [DIR ...]

Each DIR is a checkout of an ``mlcommons/training_results_vX.Y`` repository (Apache-2.0). For the systems listed in
``SYSTEMS`` (NVIDIA's own, and Dell's XE9680 with 8 H100s, 8 H200s or 8 B200s, which ran NVIDIA's implementation: the
H100 BERT run in the round of the B200 preview, and a B200 and an H200 of one submitter in v5.0) it reads every
``result_N.txt`` (MLLOG lines), takes the time from ``run_start`` to ``run_stop`` and the samples trained until
convergence (ResNet-50: epochs x 1,281,167 images; BERT: the sample count of the last evaluation; Llama-2-70B LoRA:
``samples_count`` at ``run_stop``), and writes MLPerf's score (the mean after dropping the fastest and slowest run)
with the mean samples to converge. Evaluations run inside run_start..run_stop: it also writes how many each run made
(``eval_accuracy`` events, mean over the runs) and how many samples each evaluates (``eval_samples``), and the
system's MLPerf category (``status``: available or preview, from ``<submitter>/systems/<system>.json``).
The implementations also log their training rate between evaluations (``tracked_stats`` ``throughput``, samples per
second over a training block: NVIDIA's BERT, MXNet ResNet-50 and NeMo LoRA code): ``train_samples_per_s`` is the
median over each run's blocks, the median over the runs, blank where a run logs none. It is the steady state the
time-to-train is made of, apart from convergence, evaluations and start-up.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from snapshot import git  # noqa: E402

IMAGENET_TRAIN = 1_281_167
# (round, results folder under <submitter>/results, benchmark) -> (GPU id, GPUs, sequence length, round date);
# the submitter is NVIDIA unless the folder names it ("Dell/XE9680x8H100-SXM-80GB").
SYSTEMS: dict[tuple[str, str, str], tuple[str, int, int, str]] = {
    ("v4.0", "eos_ngc24.04_mxnet", "resnet"): ("H100-SXM", 8, 0, "2024-06-12"),
    ("v4.0", "h200_ngc24.04_mxnet", "resnet"): ("H200", 8, 0, "2024-06-12"),
    ("v4.0", "eos_ngc23.04_pytorch", "bert"): ("H100-SXM", 8, 512, "2024-06-12"),
    ("v4.0", "h200_ngc23.09_pytorch", "bert"): ("H200", 8, 512, "2024-06-12"),
    ("v4.0", "eos_ngc24.04_nemo", "llama2_70b_lora"): ("H100-SXM", 8, 8192, "2024-06-12"),
    ("v4.0", "h200_ngc24.04_nemo", "llama2_70b_lora"): ("H200", 8, 8192, "2024-06-12"),
    ("v4.1", "b200_preview_pytorch", "bert"): ("B200", 8, 512, "2024-11-13"),
    ("v4.1", "b200_preview_nemo", "llama2_70b_lora"): ("B200", 8, 8192, "2024-11-13"),
    ("v4.1", "h200_ngc24.09_nemo", "llama2_70b_lora"): ("H200", 8, 8192, "2024-11-13"),
    ("v4.1", "eos_ngc24.09_nemo", "llama2_70b_lora"): ("H100-SXM", 8, 8192, "2024-11-13"),
    # v4.1 has no NVIDIA H100 or H200 BERT run beside the B200 preview: Dell's, on NGC 24.09.
    ("v4.1", "Dell/XE9680x8H100-SXM-80GB", "bert"): ("H100-SXM", 8, 512, "2024-11-13"),
    ("v4.1", "Dell/XE9680x8H200-SXM-141GB", "bert"): ("H200", 8, 512, "2024-11-13"),
    ("v4.1", "Dell/XE9680x8H100-SXM-80GB", "llama2_70b_lora"): ("H100-SXM", 8, 8192, "2024-11-13"),
    ("v4.1", "Dell/XE9680x8H200-SXM-141GB", "llama2_70b_lora"): ("H200", 8, 8192, "2024-11-13"),
    # v5.0: B200 out of preview (DGX B200 "Nyx", NGC 25.04) and 8 GPUs of a GB200 NVL72 rack ("Tyche").
    ("v5.0", "nyx_n1_ngc25.04_pytorch", "bert"): ("B200", 8, 512, "2025-06-04"),
    ("v5.0", "nyx_n1_ngc25.04_nemo", "llama2_70b_lora"): ("B200", 8, 8192, "2025-06-04"),
    ("v5.0", "tyche_ngpu8_ngc25.04_nemo", "llama2_70b_lora"): ("GB200", 8, 8192, "2025-06-04"),
    ("v5.0", "tyche_ngpu8_ngc25.04_pytorch", "bert"): ("GB200", 8, 512, "2025-06-04"),
    # v5.0 has no 8-GPU H100 run of BERT or LoRA: Dell's B200 (NGC 25.04) and H200 (NGC 24.09) XE9680s.
    ("v5.0", "Dell/1xXE9680Lx8B200-SXM-180GB", "bert"): ("B200", 8, 512, "2025-06-04"),
    ("v5.0", "Dell/1xXE9680Lx8B200-SXM-180GB", "llama2_70b_lora"): ("B200", 8, 8192, "2025-06-04"),
    ("v5.0", "Dell/XE9680x8H200-SXM-141GB", "bert"): ("H200", 8, 512, "2025-06-04"),
    ("v5.0", "Dell/XE9680x8H200-SXM-141GB", "llama2_70b_lora"): ("H200", 8, 8192, "2025-06-04"),
}
# NVIDIA's multi-node runs of the same three benchmarks and implementations (DGX H100 "Eos", CoreWeave's HGX H100
# cloud, GB200 NVL72 racks "Tyche"): held out like the 8-GPU rows, printed apart from the targets (bench/mlperf.py).
# v4.1 re-lists v4.0's BERT scale-out results unchanged; only its new LoRA runs are taken.
SCALE_OUT: dict[tuple[str, str, str], tuple[str, int, int, str]] = {
    ("v4.0", "eos_n8_ngc24.04_mxnet", "resnet"): ("H100-SXM", 64, 0, "2024-06-12"),
    ("v4.0", "eos_n316_ngc24.04_mxnet", "resnet"): ("H100-SXM", 2528, 0, "2024-06-12"),
    ("v4.0", "coreweave_hgxh100_n448_ngc23.04_mxnet", "resnet"): ("H100-SXM", 3584, 0, "2024-06-12"),
    ("v4.0", "eos_n8_ngc23.04_pytorch", "bert"): ("H100-SXM", 64, 512, "2024-06-12"),
    ("v4.0", "eos_n434_ngc23.09_pytorch", "bert"): ("H100-SXM", 3472, 512, "2024-06-12"),
    ("v4.0", "eos_n8_ngc24.04_nemo", "llama2_70b_lora"): ("H100-SXM", 64, 8192, "2024-06-12"),
    ("v4.0", "eos_n128_ngc24.04_nemo", "llama2_70b_lora"): ("H100-SXM", 1024, 8192, "2024-06-12"),
    ("v4.1", "eos_n8_ngc24.09_nemo", "llama2_70b_lora"): ("H100-SXM", 64, 8192, "2024-11-13"),
    ("v4.1", "eos_n128_ngc24.09_nemo", "llama2_70b_lora"): ("H100-SXM", 1024, 8192, "2024-11-13"),
    ("v5.0", "tyche_ngpu64_ngc25.04_pytorch", "bert"): ("GB200", 64, 512, "2025-06-04"),
    ("v5.0", "tyche_ngpu512_ngc25.04_pytorch", "bert"): ("GB200", 512, 512, "2025-06-04"),
    ("v5.0", "tyche_ngpu72_ngc25.04_nemo", "llama2_70b_lora"): ("GB200", 72, 8192, "2025-06-04"),
    ("v5.0", "tyche_ngpu144_ngc25.04_nemo", "llama2_70b_lora"): ("GB200", 144, 8192, "2025-06-04"),
    ("v5.0", "tyche_ngpu512_ngc25.04_nemo", "llama2_70b_lora"): ("GB200", 512, 8192, "2025-06-04"),
}
COLUMNS = (
    "round",
    "benchmark",
    "gpu",
    "gpus",
    "submitter",
    "system",
    "submission_platform",
    "status",
    "global_batch",
    "seq_len",
    "runs",
    "time_to_train_minutes",
    "samples_to_converge",
    "evaluations",
    "eval_samples",
    "train_samples_per_s",
    "source",
    "source_date",
)


def _events(text: str) -> list[dict[str, object]]:
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in text.splitlines() if ":::MLLOG " in line]


def _run(events: list[dict[str, object]], benchmark: str) -> tuple[float, float, dict[str, object], int, float | None]:
    """Minutes from run_start to run_stop, samples trained, the logged constants, the evaluations and the median
    logged training rate (samples/s; None where the run logs none) of one run."""
    keyed: dict[str, dict[str, object]] = {}
    last_eval = 0.0
    epochs = 0.0
    evaluations = 0
    rates: list[float] = []
    for event in events:
        key = str(event["key"])
        keyed.setdefault(key, event)
        meta = event.get("metadata") or {}
        assert isinstance(meta, dict)
        value = event.get("value")
        if key == "tracked_stats" and isinstance(value, dict) and "throughput" in value:
            rates.append(float(value["throughput"]))
        if key == "run_stop":
            keyed["run_stop"] = event
        if key == "eval_accuracy":
            evaluations += 1
            last_eval = float(meta.get("samples_count") or meta.get("epoch_num") or last_eval)
        if key == "epoch_stop":
            epochs = max(epochs, float(meta.get("epoch_num", 0)))
    start, stop = float(keyed["run_start"]["time_ms"]), float(keyed["run_stop"]["time_ms"])  # type: ignore[arg-type]
    stop_meta = keyed["run_stop"].get("metadata") or {}
    assert isinstance(stop_meta, dict)
    if benchmark == "resnet":
        samples = float(stop_meta.get("epoch", epochs)) * IMAGENET_TRAIN
    elif benchmark == "llama2_70b_lora":
        samples = float(stop_meta.get("samples_count", last_eval))
    else:
        samples = last_eval
    constants: dict[str, object] = {
        k: keyed[k].get("value") for k in ("global_batch_size", "submission_platform", "eval_samples") if k in keyed
    }
    return (stop - start) / 60000.0, samples, constants, evaluations, statistics.median(rates) if rates else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, nargs="+", required=True)
    args = parser.parse_args()
    for systems, name in ((SYSTEMS, "mlperf_training.csv"), (SCALE_OUT, "mlperf_scale_out.csv")):
        _write(_rows(args.results, systems), ROOT / "data" / name)


def _rows(repos: list[Path], systems: dict[tuple[str, str, str], tuple[str, int, int, str]]) -> list[dict[str, object]]:
    """One row per system of ``systems`` found in ``repos``: MLPerf's score, samples to converge, evaluations."""
    rows: list[dict[str, object]] = []
    for repo in repos:
        tag = "v" + repo.resolve().as_posix().split("training_results_v")[-1].split("/")[0]
        for (round_, folder, benchmark), (gpu, gpus, seq, date) in systems.items():
            if round_ != tag:
                continue
            submitter, system = folder.split("/") if "/" in folder else ("NVIDIA", folder)
            prefix = f"{submitter}/results/{system}/{benchmark}/"
            names = sorted(n for n in git(repo, "ls-tree", "--name-only", "HEAD", prefix).split() if "result_" in n)
            runs = [_run(_events(git(repo, "show", f"HEAD:{name}")), benchmark) for name in names]
            minutes = sorted(r[0] for r in runs)
            # MLPerf's score: drop the fastest and the slowest run, average the rest.
            score = statistics.fmean(minutes[1:-1] if len(minutes) > 2 else minutes)
            constants = runs[0][2]
            rates = [r[4] for r in runs if r[4] is not None]
            # MLPerf's availability category, from the system's description: "available" (buyable at submission) or
            # "preview" (hardware or software to be available within 180 days).
            system_json = json.loads(git(repo, "show", f"HEAD:{submitter}/systems/{system}.json"))
            rows.append(
                {
                    "round": round_,
                    "benchmark": benchmark,
                    "gpu": gpu,
                    "gpus": gpus,
                    "submitter": submitter,
                    "system": system,
                    "submission_platform": constants.get("submission_platform", ""),
                    # v4.0 writes "onprem", later rounds "available on-premise"/"available cloud" or "preview".
                    "status": "preview" if "preview" in str(system_json["status"]).lower() else "available",
                    "global_batch": constants.get("global_batch_size", ""),
                    "seq_len": seq or "",
                    "runs": len(runs),
                    "time_to_train_minutes": round(score, 3),
                    "samples_to_converge": round(statistics.fmean(r[1] for r in runs)),
                    "evaluations": round(statistics.fmean(r[3] for r in runs), 1),
                    "eval_samples": constants.get("eval_samples", ""),
                    "train_samples_per_s": _four_figures(statistics.median(rates)) if rates else "",
                    "source": f"mlcommons/training_results_{round_}:{prefix} (result_*.txt, MLLOG run_start..run_stop)",
                    "source_date": date,
                }
            )
    return rows


def _four_figures(value: float) -> str:
    """``value`` to four significant figures, without an exponent (57290, 12.55)."""
    rounded = float(f"{value:.4g}")
    return str(int(rounded)) if rounded >= 1000 else f"{rounded:g}"


def _write(rows: list[dict[str, object]], out: Path) -> None:
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{out.relative_to(ROOT)}: {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
