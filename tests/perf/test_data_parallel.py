"""Data parallelism for every workload family, the user's global batch, and what an estimate says about itself."""

from __future__ import annotations

import perflab
import pytest

from planner.hardware import resolve_gpu
from planner.perf.ceilings import matmul_ceilings, matmul_derate, power_bound
from planner.perf.model import estimate
from planner.perf.params import default_params


@pytest.mark.parametrize("workload", ["resnet50", "bert-large", "bert-base"])
@pytest.mark.parametrize("gpu", ["A100-80GB", "H100-SXM", "B200"])
@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_one_nvswitch_node_scales_to_at_least_70_percent(workload: str, gpu: str, gpus: int) -> None:
    one = estimate(workload, gpu, 1, "bf16")
    many = estimate(workload, gpu, gpus, "bf16")
    assert one.throughput is not None and many.throughput is not None
    assert many.throughput >= 0.7 * gpus * one.throughput
    # Never faster than perfect scaling, and every GPU works on the job.
    assert many.throughput <= gpus * one.throughput * 1.0001
    assert many.parallelism["data"] * many.parallelism["tensor"] * many.parallelism["pipeline"] == gpus


def test_a_cnn_across_nodes_pays_for_the_network() -> None:
    fast = estimate("resnet50", "A100-80GB", 32, "fp16", network_gbps=400)
    slow = estimate("resnet50", "A100-80GB", 32, "fp16", network_gbps=25)
    assert fast.parallelism["data"] == 32 and fast.nodes == 4
    assert fast.throughput is not None and slow.throughput is not None
    assert slow.throughput < fast.throughput
    assert slow.network_gbps == 25.0


@pytest.mark.parametrize(
    ("workload", "gpus", "batch"), [("resnet50", 8, 512), ("bert-large", 8, 256), ("mpt-7b", 16, 64)]
)
def test_the_users_global_batch_is_kept(workload: str, gpus: int, batch: int) -> None:
    result = estimate(workload, "H100-SXM", gpus, "bf16", global_batch=batch)
    assert result.parallelism["global_batch"] == batch
    assert not any("global batch" in line and "changed" in line for line in result.assumptions)


def test_a_global_batch_that_fits_runs_in_one_pass() -> None:
    # Lambda's BERT-Base fine-tuning runs 320 sequences per H100 in one pass; accumulating eight passes of 40 would
    # pay the per-layer launch cost eight times (the estimate was 20% slow before).
    whole = estimate("bert-base", "H100-SXM", 1, "fp16", seq_len=384, global_batch=320, mode="finetune")
    assert whole.parallelism["micro_batch"] == 320
    # On 16 GB the same job must accumulate: the micro-batch is the largest that fits, a divisor of the batch.
    small = estimate("bert-large", "V100-16GB", 1, "fp16", seq_len=384, global_batch=256, mode="finetune")
    assert small.fits_in_memory and small.parallelism["micro_batch"] < 256
    assert 256 % small.parallelism["micro_batch"] == 0


def test_one_gpu_keeps_no_headroom_for_collectives_it_does_not_run() -> None:
    # Lambda ran 96 BERT-Base sequences (SQuAD, 384 tokens, FP16) in one pass on one 24 GB RTX 4090 and 3090, and 16
    # BERT-Large sequences in TF32. With NCCL's workspaces and headroom reserved on one GPU too, the model halved both.
    for gpu in ("RTX-4090", "RTX-3090"):
        base = estimate("bert-base", gpu, 1, "fp16", seq_len=384, global_batch=96, mode="finetune")
        large = estimate("bert-large", gpu, 1, "tf32", seq_len=384, global_batch=16, mode="finetune")
        assert base.parallelism["micro_batch"] == 96 and large.parallelism["micro_batch"] == 16
    # Two GPUs run an all-reduce: the same per-GPU batch must leave NCCL its room.
    two = estimate("bert-base", "RTX-4090", 2, "fp16", seq_len=384, global_batch=192, mode="finetune")
    one = estimate("bert-base", "RTX-4090", 1, "fp16", seq_len=384, global_batch=96, mode="finetune")
    assert two.parallelism["micro_batch"] < one.parallelism["micro_batch"]
    # A model that does not fit on one GPU says what it lost, without NCCL.
    alone = estimate("llama-2-70b", "A100-80GB", 1)
    assert alone.why_not_fits and "NCCL" not in alone.why_not_fits
    pair = estimate("llama-2-70b", "A100-80GB", 2)
    assert pair.why_not_fits and "NCCL" in pair.why_not_fits


def test_published_resnet50_batches_that_ran_fit_in_one_pass() -> None:
    # timm's benchmark trained 256 ResNet-50 images in FP32 (TF32 convolutions) and FP16 on one 24 GB RTX 3090 and 4090
    # (data/timm_runs.csv), and Lambda 496 in TF32 on one 48 GB card. At 50 MB per image the model halved the first
    # and the last.
    for row in perflab.load_timm_checks():
        result = estimate("resnet50", row["gpu"], 1, row["precision"], global_batch=int(row["global_batch"]))
        assert result.parallelism["micro_batch"] == int(row["global_batch"]), (row["gpu"], row["precision"])
    for gpu in ("RTX-6000-Ada", "RTX-A6000", "Quadro-RTX-8000"):
        precision = "fp32" if gpu == "Quadro-RTX-8000" else "tf32"
        assert estimate("resnet50", gpu, 1, precision, global_batch=496).parallelism["micro_batch"] == 496
    # The memory still binds: 512 images in FP32 do not fit in one pass on 24 GB.
    assert estimate("resnet50", "RTX-4090", 1, "tf32", global_batch=512).parallelism["micro_batch"] < 512


def test_a_global_batch_that_must_change_is_said() -> None:
    result = estimate("resnet50", "H100-SXM", 8, "bf16", global_batch=4)
    assert result.parallelism["global_batch"] == 8
    assert any("global batch 4 changed to 8" in line for line in result.assumptions)
    odd = estimate("resnet50", "H100-SXM", 8, "bf16", global_batch=100)
    assert odd.parallelism["global_batch"] == 96
    assert any("changed to 96" in line for line in odd.assumptions)


def test_uncalibrated_gpus_get_a_wider_band_and_a_note() -> None:
    assert "L4" not in default_params().to_dict()["calibrated_gpus"]
    known = estimate("bert-large", "A100-80GB", 1, "bf16")
    unknown = estimate("bert-large", "L4", 1, "bf16")
    assert known.gpu_calibrated and known.calibration_note is None
    assert not unknown.gpu_calibrated and unknown.calibration_note
    assert unknown.calibration_note in unknown.assumptions

    def width(result: object) -> float:
        return (result.throughput_high - result.throughput_low) / result.throughput  # type: ignore[attr-defined]

    assert width(unknown) > width(known)


def test_a_gpu_measured_only_on_llms_is_not_calibrated_for_bert_or_cnns() -> None:
    # NVIDIA's B200 rows in the calibration data are all LLM pre-training runs (MLPerf BERT on B200 ran 25-29% slower
    # than the model predicts): a BERT or ResNet-50 estimate there is an extrapolation and says so.
    assert default_params().to_dict()["calibrated_kinds"]["B200"] == ["decoder"]
    # (Its open LLM rows are FP8 runs: a BF16 one is an unmeasured precision there, with a band of its own.)
    llm = estimate("llama-3-8b", "B200", 8, "fp8")
    assert llm.gpu_calibrated and llm.calibration_note is None
    for workload in ("bert-large", "resnet50"):
        extrapolated = estimate(workload, "B200", 8, "bf16")
        measured = estimate(workload, "H100-SXM", 8, "bf16")
        assert not extrapolated.gpu_calibrated and measured.gpu_calibrated
        assert extrapolated.calibration_note and "decoder (LLM) models only" in extrapolated.calibration_note
        assert extrapolated.calibration_note in extrapolated.assumptions
        for side in ("throughput_low", "throughput_high"):

            def spread(result: object, side: str = side) -> float:
                return abs(getattr(result, side) / result.throughput - 1.0)  # type: ignore[attr-defined]

            widen = default_params().to_dict()["uncalibrated_band_factor"]
            assert spread(extrapolated) == pytest.approx(widen * spread(measured), rel=1e-6)


def test_the_bundled_calibration_record_matches_the_benchmarks() -> None:
    # Which GPUs and kinds of model the bundled parameters count as measured is what data/benchmarks.csv holds:
    # a benchmark added without a refit (scripts/fit_perf.py) fails here.
    import perflab

    kinds: dict[str, set[str]] = {}
    for row in perflab.load_benchmarks():
        kinds.setdefault(row.gpu.id, set()).add(row.family)
    params = default_params().to_dict()
    assert params["calibrated_gpus"] == sorted(kinds)
    assert params["calibrated_kinds"] == {gpu: sorted(found) for gpu, found in sorted(kinds.items())}


def test_measured_ceilings_scale_the_peak_relative_to_the_a100() -> None:
    # T4: 24 of 65 TFLOP/s sustained at 70 W. The A100 SXM (86.9% of its peak) is the reference; the H100 SXM
    # sustains 80.3%, the RTX 3090 108% (GeForce boost clocks).
    assert matmul_derate(resolve_gpu("T4"), "fp16") < 0.5
    assert matmul_derate(resolve_gpu("A100-80GB"), "bf16") == 1.0
    assert matmul_derate(resolve_gpu("A100-80GB"), "tf32") == 1.0
    assert matmul_derate(resolve_gpu("H100-SXM"), "bf16") == pytest.approx((794.5 / 989) / (271.2 / 312), rel=1e-3)
    assert matmul_derate(resolve_gpu("RTX-3090"), "fp16") > 1.2
    # TF32 runs at the clocks the FP16 ceiling shows; a GPU with neither a measurement nor a power-limited peer is
    # unscaled (the RTX 4000 Ada's bound, 130 W at the L4's rate, is above its peak).
    assert matmul_derate(resolve_gpu("RTX-3090"), "tf32") == matmul_derate(resolve_gpu("RTX-3090"), "fp16")
    assert matmul_derate(resolve_gpu("RTX-4000-Ada"), "bf16") == 1.0
    assert matmul_derate(resolve_gpu("GB300"), "bf16") == 1.0


def test_fp32_runs_at_the_measured_sgemm_rate_relative_to_the_a100s() -> None:
    # CUDA-core FP32: the A100 SXM reaches 19.18 of 19.5 TFLOP/s, the 70 W T4 4.3 of 8.1, the RTX 3090 24.8 of 35.6
    # (its doubled FP32 lanes share issue slots with integer work). Relative to the A100's own FP32 share.
    a100_share = 19.18 / 19.5
    assert matmul_derate(resolve_gpu("A100-80GB"), "fp32") == 1.0
    assert matmul_derate(resolve_gpu("T4"), "fp32") == pytest.approx((4.30 / 8.1) / a100_share)
    assert matmul_derate(resolve_gpu("RTX-3090"), "fp32") == pytest.approx((24.79 / 35.6) / a100_share)
    # A GPU without TF32 runs "TF32" as FP32 on the CUDA cores, at that ceiling; one without an FP32 measurement
    # keeps the A100's share.
    assert matmul_derate(resolve_gpu("T4"), "tf32") == matmul_derate(resolve_gpu("T4"), "fp32")
    assert matmul_derate(resolve_gpu("V100-16GB"), "fp32") == 1.0
    # The estimate is slower by as much, and says why.
    t4, a100 = estimate("resnet50", "T4", 1, "fp32"), estimate("resnet50", "A100-80GB", 1, "fp32")
    assert t4.throughput is not None and a100.throughput is not None
    assert t4.throughput < 0.24 * a100.throughput  # 0.26 at the A100's share
    assert any("T4 sustains 53% of its datasheet fp32 peak" in line for line in t4.assumptions)


def test_a_gpu_without_a_measured_ceiling_is_bounded_by_its_board_power() -> None:
    # The RTX 6000 Ada is the L40S's AD102 die held to 300 W instead of 350 W: at the best TFLOP/s per watt measured
    # on a power-limited Ada card (the L4: 56.9 TFLOP/s at 72 W) it sustains 237 TFLOP/s, not the reference share of
    # its 364 TFLOP/s peak (317).
    ada = resolve_gpu("RTX-6000-Ada")
    bound = power_bound(ada)
    assert bound is not None and bound.peer == "L4"
    assert bound.tflops == pytest.approx(300 * 56.9 / 72)
    assert matmul_derate(ada, "bf16") * (271.2 / 312) * ada.peak_tflops("bf16") == pytest.approx(bound.tflops)
    assert matmul_derate(ada, "tf32") == matmul_derate(ada, "bf16")
    # A 150 W A10 would take the RTX A6000's rate (GA102 on GDDR6 at 300 W), not the HBM A100's; GeForce cards and
    # the A10G reach their FP32-accumulate rate, so their TFLOP/s per watt is not a power limit and is never the peer.
    # Its own measurement (56 TFLOP/s) is below that bound (62) and is what the model uses.
    a10 = power_bound(resolve_gpu("A10"))
    assert a10 is not None and a10.peer == "RTX-A6000"
    assert a10.tflops == pytest.approx(150 * 123.3 / 300)
    assert matmul_derate(resolve_gpu("A10"), "bf16") * 125 * (271.2 / 312) == pytest.approx(56.0)
    # Each power-limited measurement predicted from its peers alone lands within 25% (bench/ceilings.py).
    for gpu, copies in (
        ("L4", ()),
        ("L40S", ()),
        ("H100-PCIe", ()),
        ("B200", ()),
        ("H100-SXM", ("H200",)),
        ("A10", ()),
    ):
        held_out = power_bound(resolve_gpu(gpu), exclude=frozenset({gpu, *copies}))
        assert held_out is not None
        assert 0.8 < held_out.tflops / matmul_ceilings()[(gpu, "bf16")] < 1.25
    # The estimate says where the slower compute comes from.
    notes = " ".join(estimate("bert-large", "RTX-6000-Ada", 1, "fp16").assumptions)
    assert "no measured ceiling: bounded by its 300 W board power" in notes and "L4" in notes


def test_the_same_silicon_sustains_the_same_matmul_rate() -> None:
    # A variant that differs only in memory or host (V100 32 GB, AWS's Graviton-hosted T4G) shares its twin's
    # measured ceiling: without it the T4G ran BERT 65% faster than the T4, and the V100 32 GB 6% faster than the
    # 16 GB card at the same micro-batch. A lower-clocked, lower-power variant (V100 PCIe, 250 W) sustains at most its
    # twin's rate: its board power bounds it at the SXM2 card's TFLOP/s per watt.
    for variant, twin in (("V100-32GB", "V100-16GB"), ("T4G", "T4")):
        assert matmul_derate(resolve_gpu(variant), "fp16") == matmul_derate(resolve_gpu(twin), "fp16")
    sxm = resolve_gpu("V100-16GB")
    for pcie in ("V100-PCIe-16GB", "V100-PCIe-32GB"):
        spec = resolve_gpu(pcie)
        assert matmul_derate(spec, "fp16") * spec.peak_tflops("fp16") <= matmul_derate(sxm, "fp16") * sxm.peak_tflops(
            "fp16"
        )
    t4, t4g = estimate("bert-large", "T4", 1, "fp16"), estimate("bert-large", "T4G", 1, "fp16")
    assert t4.throughput == pytest.approx(t4g.throughput)


@pytest.mark.parametrize("workload", ["resnet50", "bert-large"])
def test_tuned_stack_for_cnns_and_bert_stays_physical(workload: str) -> None:
    typical = estimate(workload, "A100-80GB", 8, "fp16")
    tuned = estimate(workload, "A100-80GB", 8, "fp16", stack="tuned")
    assert tuned.throughput is not None and typical.throughput is not None and tuned.mfu is not None
    assert tuned.throughput > typical.throughput
    # No MFU above the measured matmul ceiling of an A100 (271 of 312 TFLOP/s).
    assert tuned.mfu < 271.2 / 312


def test_rank_gets_multi_gpu_cnn_throughput() -> None:
    import pandas as pd
    from factories import make_offer

    from planner.api import rank

    catalog = pd.DataFrame([make_offer()])
    result = rank("resnet50", catalog=catalog, precision="bf16", max_nodes=2)
    table = result.table[result.table["pricing"] == "on-demand"].set_index("nodes")["time_to_solution_hours"]
    one_gpu = estimate("resnet50", "H100-SXM", 1, "bf16").time_to_solution_hours
    assert one_gpu is not None
    # One 8-GPU instance runs the 90 epochs in about an eighth of one GPU's time (plus rank's start-up overhead;
    # before data parallelism for CNNs it took one GPU's time); two instances in less again.
    eight = estimate("resnet50", "H100-SXM", 8, "bf16").time_to_solution_hours
    assert eight is not None and eight < one_gpu / 7.5
    assert table[1] < one_gpu / 5
    assert table[2] < table[1]


def test_typical_attention_on_hopper_is_slower_than_its_peak_says() -> None:
    # FlashAttention-2 reaches ~35% of an H100's peak against 50-73% of an A100's: the longer the sequence (the more
    # of the step is attention), the less the H100 gains over the A100 on the typical stack; the tuned stack keeps it.
    def gain(seq_len: int, stack: str) -> float:
        h100 = estimate("llama-3-8b", "H100-SXM", 8, "bf16", seq_len=seq_len, stack=stack)
        a100 = estimate("llama-3-8b", "A100-80GB", 8, "bf16", seq_len=seq_len, stack=stack)
        assert h100.throughput and a100.throughput
        return h100.throughput / a100.throughput

    assert gain(16384, "typical") < gain(2048, "typical")
    typical = estimate("llama-3-8b", "H100-SXM", 8, "bf16")
    assert any("FlashAttention-2" in note for note in typical.assumptions)
    for other in (estimate("llama-3-8b", "H100-SXM", 8, "bf16", stack="tuned"), estimate("llama-3-8b", "A100-80GB", 8)):
        assert not any("FlashAttention-2" in note for note in other.assumptions)


def test_fp16_transformer_recipes_all_reduce_fp16_gradients() -> None:
    # NVIDIA's BERT scripts train an FP16 copy of the model (apex O2) and all-reduce its FP16 gradients; BF16 recipes
    # reduce FP32 ones. Lambda's BERT-Large on two RTX 4090s: one GPU step to two costs 0.10 s in FP16 and 0.22 s in
    # TF32 (28 and 16 sequences per GPU): the same 6.3-6.7 GB/s for 680 MB and 1.36 GB of gradients.
    def rate(precision: str, gpus: int) -> float:
        result = estimate(
            "bert-large", "RTX-4090", gpus, precision, seq_len=384, global_batch=28 * gpus, mode="finetune"
        )
        assert result.throughput is not None
        return result.throughput

    # The 4090 runs FP16 and BF16 matmuls at one rate: one GPU is the same, two differ only in what they reduce.
    assert rate("fp16", 1) == pytest.approx(rate("bf16", 1))
    assert rate("fp16", 2) > rate("bf16", 2) * 1.02
    # A CNN's autocast keeps FP32 gradients in either precision.
    assert estimate("resnet50", "RTX-4090", 2, "fp16").throughput == pytest.approx(
        estimate("resnet50", "RTX-4090", 2, "bf16").throughput
    )
