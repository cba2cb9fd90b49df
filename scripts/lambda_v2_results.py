"""Extract Lambda's second benchmark round (ResNet-50, BERT-Base and BERT-Large SQuAD on H100, H200, GH200 and
B200) into ``data/lambda_v2_runs.csv``.

    .venv/bin/python scripts/lambda_v2_results.py --repo DIR

DIR is a checkout (or bare mirror) of ``lambdal/deeplearning-benchmark``. Its ``pytorch/pytorch-train-throughput-
v2-fp16.csv`` and ``-fp32.csv`` hold Lambda's published figures per host (NVIDIA DeepLearningExamples scripts in NGC
PyTorch containers of 2024-2025, ResNet-50 on synthetic images); ``pytorch/results_v2/<host>/<task>/*.txt`` are the
runs' own logs, read here for the batch per GPU, the container build and the date. Runs of one kind (the same GPU,
GPU count and batch: Lambda lists 39 one-GPU H100 SXM runs, one per host entry) are replicates: each kind becomes one
row, their median. BERT rates are corrected as the first round's (``fit_perf.squad_trained_share``: ``run_squad.py``
divides max_steps x batch by the time however many steps ran). "FP32" runs as TF32 on these GPUs, as NGC's PyTorch
does by default.

The rows are kept out of the fit: ``bench/external.py`` predicts them through ``estimate``.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from fit_perf import squad_trained_share  # noqa: E402
from snapshot import git  # noqa: E402

# Lambda's GPU labels in its host names -> this project's GPU ids. Lambda names one GH200 host "80GB"; every GH200
# it ran is the 96 GB module (the other hosts' names and speed, within 0.1%).
GPUS = {
    "H100_80GB_SXM5": "H100-SXM",
    "H100_80GB_PCIe": "H100-PCIe",
    "H200_140GB_SXM": "H200",
    "GH200_80GB": "GH200",
    "GH200_96GB": "GH200",
    "B200_192GB": "B200",
}
HOST = re.compile(r"(\d+)x(" + "|".join(GPUS) + r")")
# csv column -> (workload, log folder stem, sequence length)
TASKS = {
    "resnet50": ("resnet50", "PyTorch_resnet50", 0),
    "bert_base_squad": ("bert-base", "PyTorch_bert_base_squad", 384),
    "bert_large_squad": ("bert-large", "PyTorch_bert_large_squad", 384),
}
SEQ_LEN = {workload: seq for workload, _stem, seq in TASKS.values()}
PRECISIONS = {"fp16": ("fp16", {"resnet50": "AMP"}), "fp32": ("tf32", {})}
COLUMNS = (
    "source",
    "source_date",
    "workload",
    "mode",
    "seq_len",
    "precision",
    "gpu",
    "gpus",
    "network_gbps",
    "micro_batch",
    "global_batch",
    "throughput_total",
    "throughput_unit",
    "notes",
    "excluded_reason",
)


def _log(repo: Path, host: str, folder: str) -> tuple[int, str, str] | None:
    """(batch per GPU, container build, date YYYY-MM-DD) from the first log of a host's task, or None."""
    listing = git(repo, "ls-tree", "--name-only", "HEAD", f"pytorch/results_v2/{host}/{folder}/").split()
    logs = sorted(name for name in listing if name.endswith(".txt"))
    if not logs:
        return None
    text = git(repo, "show", f"HEAD:{logs[0]}")
    batch = re.search(r"train_batch_size : (\d+)", text) or re.search(r"batch_size : (\d+)", text)
    build = re.search(r"Container nvidia build =\s+(\d+)", text)
    day, month, year = re.search(r"/(\d\d)-(\d\d)-(\d{4})_", logs[0]).groups()  # type: ignore[union-attr]
    if batch is None:
        return None
    return int(batch.group(1)), build.group(1) if build else "", f"{year}-{month}-{day}"


def build_rows(repo: Path) -> list[dict[str, object]]:
    groups: dict[tuple[str, str, str, str, int, int], list[tuple[float, str, str, str]]] = defaultdict(list)
    for tag, (precision, suffixes) in PRECISIONS.items():
        path = f"pytorch/pytorch-train-throughput-v2-{tag}.csv"
        for row in csv.DictReader(git(repo, "show", f"HEAD:{path}").splitlines()):
            host = row[""]
            found = HOST.search(host)
            if found is None or host.endswith("_bk"):  # "_bk": a backup copy of another host's folder
                continue
            gpus, gpu = int(found.group(1)), GPUS[found.group(2)]
            for column, (workload, stem, _seq) in TASKS.items():
                value = float(row[column] or 0)
                if value <= 0:
                    continue
                folder = f"{stem}_{suffixes.get(workload, tag.upper())}"
                logged = _log(repo, host, folder)
                if logged is None:
                    continue
                batch, build, day = logged
                if workload != "resnet50":
                    value *= squad_trained_share(gpus, batch)
                groups[(workload, tag, precision, gpu, gpus, batch)].append((value, build, day, host))
    out: list[dict[str, object]] = []
    for (workload, tag, precision, gpu, gpus, batch), runs in sorted(groups.items()):
        builds = sorted({run[1] for run in runs if run[1]})
        seq_len = SEQ_LEN[workload]
        out.append(
            {
                "source": f"lambdal/deeplearning-benchmark:pytorch/pytorch-train-throughput-v2-{tag}.csv",
                "source_date": max(run[2] for run in runs),
                "workload": workload,
                "mode": "finetune" if seq_len else "pretrain",
                "seq_len": seq_len or "",
                "precision": precision,
                "gpu": gpu,
                "gpus": gpus,
                "network_gbps": "",
                "micro_batch": batch,
                "global_batch": batch * gpus,
                "throughput_total": round(statistics.median(run[0] for run in runs), 1),
                "throughput_unit": "images/s" if workload == "resnet50" else "sequences/s",
                "notes": (
                    f"Lambda benchmark round 2, NVIDIA DLE scripts, NGC PyTorch container build "
                    f"{'/'.join(builds) or 'not logged'}"
                    + ("; synthetic ImageNet" if workload == "resnet50" else "; rate corrected to sequences trained")
                    + (f"; median of {len(runs)} hosts" if len(runs) > 1 else "")
                ),
                "excluded_reason": "",
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="lambdal/deeplearning-benchmark checkout or mirror")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "lambda_v2_runs.csv")
    args = parser.parse_args()
    rows = build_rows(args.repo)
    with args.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
