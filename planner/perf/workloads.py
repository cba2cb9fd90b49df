"""Training workloads: named presets (ResNet-50, BERT, decoder LLMs) and custom transformers.

A workload says what one unit of work costs (FLOPs, bytes moved, memory) and how much work a run is
(90 ImageNet epochs, 20 tokens per parameter ...). The performance model turns that into time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner import checks
from planner.errors import InputError

# The largest global batch taken, in samples per step: over 12x the largest published training batches (Llama 3 405B's
# 16M tokens are 2,048 sequences; ResNet-50 records use up to 81,920 images per step).
MAX_GLOBAL_BATCH = 2**20

KINDS = ("cnn", "encoder", "decoder")
MODES = ("pretrain", "finetune", "lora")
STACKS = ("typical", "tuned")
# Activation checkpointing (recomputation) as the user's training script sets it: "auto" lets the layout search
# recompute only when memory needs it; "on" is a script that always checkpoints (llm-foundry's
# ``activation_checkpointing: true``, Megatron's ``--recompute-granularity full``); "off" never recomputes.
RECOMPUTE = ("auto", "on", "off")
RECOMPUTE_HELP = (
    "auto: recompute activations only when memory needs it (the default). on: your script always checkpoints "
    "activations (llm-foundry activation_checkpointing: true, Megatron --recompute-granularity full, DeepSpeed "
    "--checkpoint-activations). off: never."
)
STACK_HELP = (
    "typical: PyTorch FSDP/DDP, DeepSpeed or Composer, what most teams run. tuned: NVIDIA's Megatron-Core/NeMo "
    "recipes (fused kernels, CUDA graphs, overlapped communication); for CNNs, NVIDIA's DALI/channels-last/fused "
    "batch-norm recipes (DeepLearningExamples, MLPerf)."
)
UNITS = {"images": "images/s", "sequences": "sequences/s", "tokens": "tokens/s"}
# LoRA's adapters train a small share of the model: rank 8-64 adapters on a 7-70B model 0.03-2.4% (PEFT's
# "trainable%"). Half the model is no longer a low-rank adapter; a larger share is refused as a likely percent.
LORA_SHARE_MAX = 0.5

# ImageNet-1k training set size (Russakovsky et al. 2015).
IMAGENET_IMAGES = 1_281_167
# Chinchilla-style compute-optimal budget (Hoffmann et al. 2022): about 20 training tokens per parameter.
TOKENS_PER_PARAM = 20.0
# Default fine-tuning budget when the user gives none: 50k examples of 2k tokens.
FINETUNE_TOKENS = 1e8


@dataclass(frozen=True)
class Workload:
    """One training job's model and amount of work.

    ``params`` is the total parameter count; for transformers ``layers``/``hidden``/``heads``/``vocab``/``seq_len``
    give the shape. ``work`` is the amount of work in ``work_unit`` (images, sequences or tokens); ``None`` means the
    preset's default for the training mode. ``flops_per_sample`` (forward+backward) is set for CNNs, where it does not
    follow from the shape.
    """

    name: str
    kind: str
    params: float
    layers: int = 0
    hidden: int = 0
    heads: int = 0
    vocab: int = 0
    seq_len: int = 0
    work: float | None = None
    work_unit: str = "tokens"
    mode: str = "pretrain"
    batch_per_gpu: int | None = None
    global_batch: int | None = None
    flops_per_sample: float | None = None
    activation_bytes_per_sample: float | None = None
    description: str = ""
    # The training software: "typical" (PyTorch FSDP/DDP, DeepSpeed, Composer: what most teams run) or "tuned"
    # (NVIDIA's Megatron-Core/NeMo recipes: Transformer Engine fused kernels, CUDA graphs, overlapped communication).
    stack: str = "typical"
    # Activation checkpointing as the training script sets it (RECOMPUTE): a fixed setting costs a forward pass
    # even where memory would not need it, which the layout search must not optimise away.
    recompute: str = "auto"
    # Evaluation passes over the run and the samples (images or sequences) each evaluates, on the training GPUs: a
    # forward pass per sample (MLPerf's logs: 0.4% of ResNet-50's time-to-train, 5-8% of BERT's, 11% of LoRA's).
    evaluations: float = 0.0
    eval_samples: float = 0.0
    # LoRA: the share of the parameters the adapters train (PEFT's "trainable%" over 100); None: the model's default
    # (perf_params memory.lora_trainable_fraction, 1%). Only what trains carries gradients, optimizer state and
    # checkpoints.
    trainable_share: float | None = None
    # The real tokens of one sample when they are fewer than ``seq_len``: given as ``tokens_per_sequence`` (mean real
    # tokens a sample) or ``padding_share`` (the share of ``seq_len`` padding would fill). Padded (the default), each
    # sample fills a sequence of ``seq_len`` and the padding is computed on; ``packed`` samples are concatenated into
    # sequences of ``seq_len`` (NeMo's and Hugging Face's packed fine-tuning, NVIDIA's packed BERT): every token is
    # real, and attention runs per sample (variable-length kernels). Either way, work and throughput count real
    # samples and tokens; memory holds sequences of ``seq_len``.
    packed: bool = False
    tokens_per_sequence: float | None = None
    padding_share: float | None = None

    def __post_init__(self) -> None:
        for name in ("mode", "stack", "recompute"):
            # Any case, as precisions and GPU names are read ("LoRA", "Tuned").
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, value.strip().lower())
        checks.choice("kind", self.kind, KINDS)
        checks.choice("mode", self.mode, MODES)
        checks.choice("work_unit", self.work_unit, tuple(UNITS))
        checks.choice("stack", self.stack, STACKS)
        if isinstance(self.recompute, bool):
            # A library caller's True/False reads as the script's fixed setting.
            object.__setattr__(self, "recompute", "on" if self.recompute else "off")
        checks.choice("recompute", self.recompute, RECOMPUTE)
        object.__setattr__(self, "params", checks.number("params", self.params, what="a positive parameter count"))
        if self.kind != "cnn":
            for name in ("layers", "hidden", "seq_len"):
                object.__setattr__(self, name, checks.whole(name, getattr(self, name)))
            # 0 heads or vocabulary means "not given" for a custom transformer.
            for name in ("heads", "vocab"):
                object.__setattr__(self, name, checks.whole(name, getattr(self, name), least=0))
            if self.heads and self.hidden % self.heads:
                raise InputError(
                    f"({self.hidden}) must be divisible by heads ({self.heads})", field="hidden", related=("heads",)
                )
        object.__setattr__(self, "work", checks.optional_number("work", self.work))
        object.__setattr__(self, "batch_per_gpu", checks.optional_whole("batch_per_gpu", self.batch_per_gpu))
        # Past this no layout runs differently, and the step search grows with the batch (1e9 took minutes).
        object.__setattr__(
            self, "global_batch", checks.optional_whole("global_batch", self.global_batch, most=MAX_GLOBAL_BATCH)
        )
        if self.batch_per_gpu and self.global_batch and self.global_batch < self.batch_per_gpu:
            raise InputError(
                f"({self.global_batch}) must be at least batch_per_gpu ({self.batch_per_gpu})",
                field="global_batch",
                related=("batch_per_gpu",),
            )
        for name in ("evaluations", "eval_samples"):
            object.__setattr__(self, name, checks.number(name, getattr(self, name), allow_zero=True))
        if bool(self.evaluations) != bool(self.eval_samples):
            given, missing = ("evaluations", "eval_samples") if self.evaluations else ("eval_samples", "evaluations")
            raise InputError(
                f"must be given, above zero, with {given}: how many evaluation passes, and how many samples each "
                "evaluates (both 0 for none)",
                field=missing,
                related=(given,),
            )
        if self.trainable_share is not None:
            if self.mode != "lora":
                raise InputError(f"applies to lora only ({self.mode} trains every parameter)", field="trainable_share")
            what = f"a share of the parameters above 0 and at most {LORA_SHARE_MAX:g} (0.01 is 1%)"
            share = checks.number("trainable_share", self.trainable_share, what=what)
            if share > LORA_SHARE_MAX:
                raise InputError(f"must be {what}, got {share:g}", field="trainable_share")
            object.__setattr__(self, "trainable_share", share)
        self._check_real_tokens()
        if self.mode != "pretrain" and self.kind == "cnn":
            raise InputError(f"{self.mode} applies to transformer workloads only; use pretrain", field="mode")
        if self.recompute != "auto" and self.kind == "cnn":
            raise InputError(
                f"{self.recompute} applies to transformer workloads only (a CNN keeps its activations); use auto",
                field="recompute",
            )

    def _check_real_tokens(self) -> None:
        if not isinstance(self.packed, bool):
            raise InputError(f"must be true or false, got {self.packed!r:.40}", field="packed")
        given = [name for name in ("tokens_per_sequence", "padding_share") if getattr(self, name) is not None]
        if given and self.kind == "cnn":
            raise InputError(f"applies to transformer workloads only ({self.name} trains on images)", field=given[0])
        if len(given) > 1:
            raise InputError(
                "gives the real tokens a second time; give tokens_per_sequence or padding_share",
                field="padding_share",
                related=("tokens_per_sequence",),
            )
        if self.packed and not given:
            raise InputError(
                "needs the real tokens a sample: tokens_per_sequence (e.g. 180) or padding_share (e.g. 0.65)",
                field="packed",
                related=("tokens_per_sequence", "padding_share"),
            )
        if self.tokens_per_sequence is not None:
            what = f"real tokens a sample, above 0 and at most seq_len ({self.seq_len})"
            tokens = checks.number("tokens_per_sequence", self.tokens_per_sequence, what=what)
            if tokens > self.seq_len:
                raise InputError(f"must be {what}, got {tokens:g}", field="tokens_per_sequence", related=("seq_len",))
            object.__setattr__(self, "tokens_per_sequence", tokens)
        if self.padding_share is not None:
            what = "the share of seq_len that is padding, at least 0 and below 1 (0.6 is 60%)"
            share = checks.number("padding_share", self.padding_share, what=what, allow_zero=True)
            if share >= 1.0:
                raise InputError(f"must be {what}, got {share:g}", field="padding_share")
            object.__setattr__(self, "padding_share", share)

    @property
    def real_tokens_per_sample(self) -> float:
        """Real tokens in one sample: ``tokens_per_sequence``, ``seq_len`` less the padding share, or ``seq_len``."""
        if self.tokens_per_sequence is not None:
            return self.tokens_per_sequence
        return self.seq_len * (1.0 - (self.padding_share or 0.0))

    @property
    def attention_span(self) -> float:
        """Keys each token attends to: the whole sequence, or in a packed one its own sample's (variable-length
        fused attention: the cost is the sum of the samples' squared lengths, not seq_len squared). Eager attention
        (typical BERT scripts) computes the whole masked seq_len x seq_len matrix whatever the mask."""
        if self.packed and not self.eager_attention:
            return self.real_tokens_per_sample
        return float(self.seq_len)

    def packing_text(self) -> str:
        """The real tokens in words, for the assumptions ("" where every token is real)."""
        if self.tokens_per_sequence is None and self.padding_share is None:
            return ""
        real = self.real_tokens_per_sample
        if self.packed:
            return (
                f"packed sequences: {self.seq_len / real:.3g} samples of {real:.4g} real tokens a sequence of "
                f"{self.seq_len}, attention per sample; work and throughput count real samples and tokens"
            )
        return (
            f"padded sequences: {real:.4g} real tokens a sample padded to {self.seq_len}, the padding computed on; "
            "work and throughput count real samples and tokens (packed=True packs them)"
        )

    @property
    def software_text(self) -> str:
        """The software the estimate assumes, as one assumptions line."""
        checkpointing = {
            "on": "; activation checkpointing on (every layer's activations recomputed in backward, as the script "
            "sets it)",
            "off": "; activation checkpointing off (as the script sets it)",
        }.get(self.recompute, "")
        return self._stack_text() + (checkpointing if self.is_transformer else "")

    def _stack_text(self) -> str:
        if not self.is_transformer:
            if self.stack == "tuned":
                return (
                    "software: NVIDIA-tuned CNN recipe (DALI input pipeline, channels-last, fused batch norm, CUDA "
                    "graphs), as in MLPerf; the typical stack is plain PyTorch DDP"
                )
            return (
                "software: PyTorch DDP with NVIDIA DeepLearningExamples-class scripts, as Lambda ran them (NVIDIA's "
                "own channels-last AMP runs of those scripts were 1.4-1.6x faster in FP16; its MLPerf recipe faster "
                "still: stack tuned)"
            )
        if self.stack == "tuned" and self.kind == "encoder":
            return (
                "software: NVIDIA's MLPerf BERT recipe (fused attention and element-wise kernels, fused LAMB, "
                "CUDA graphs; set on its MLPerf runs on H100, H200 and B200, packed sequences: give the real tokens "
                "per sequence as seq_len); the typical stack is PyTorch DDP with BERT-class scripts"
            )
        if self.stack == "tuned":
            return (
                "software: NVIDIA-tuned Megatron-Core/NeMo recipe (fused kernels, CUDA graphs); the typical stack is "
                "PyTorch FSDP/DeepSpeed"
            )
        if self.kind == "encoder":
            return (
                "software: PyTorch DDP with BERT-class scripts (DeepLearningExamples, Hugging Face): eager attention "
                "writes each head's seq x seq scores to GPU memory, so long sequences cost more than their FLOPs "
                "(NVIDIA's MLPerf recipe fuses them and is faster: stack tuned)"
            )
        return (
            "software: a typical PyTorch FSDP/DDP or DeepSpeed stack (NVIDIA's tuned Megatron-Core/NeMo recipes run "
            "faster: stack tuned)"
        )

    @property
    def throughput_unit(self) -> str:
        """images/s, sequences/s or tokens/s."""
        return UNITS[self.work_unit]

    @property
    def is_transformer(self) -> bool:
        return self.kind != "cnn"

    @property
    def eager_attention(self) -> bool:
        """Typical BERT-class scripts: attention materialises each head's seq x seq scores in GPU memory (the
        decoder sources run FlashAttention; NVIDIA's tuned BERT fuses it)."""
        return self.kind == "encoder" and self.stack != "tuned" and bool(self.heads)

    @property
    def tokens_per_sample(self) -> int:
        """Tokens in one sequence (1 for a CNN image)."""
        return self.seq_len if self.is_transformer else 1

    @property
    def samples_per_unit(self) -> float:
        """How many samples (images or sequences of ``seq_len``, as the step runs them) one unit of work is. A unit
        counts real tokens or samples: a packed sequence holds ``seq_len`` real tokens, several samples; a padded one
        one sample of ``real_tokens_per_sample``."""
        if not self.is_transformer:
            return 1.0
        if self.work_unit == "tokens":
            return 1.0 / (self.seq_len if self.packed else self.real_tokens_per_sample)
        return self.real_tokens_per_sample / self.seq_len if self.packed else 1.0

    def total_work(self) -> float:
        """The amount of work in ``work_unit``: the given one, else the default for this preset and mode."""
        if self.work is not None:
            return self.work
        if self.work_unit == "tokens":
            return TOKENS_PER_PARAM * self.params if self.mode == "pretrain" else FINETUNE_TOKENS
        if self.kind == "cnn":
            return 90.0 * IMAGENET_IMAGES
        # BERT pre-training: 1M steps of 256 sequences (Devlin et al. 2019).
        return 256e6 if self.mode == "pretrain" else 88_000 * 2.0

    def eval_work(self) -> float:
        """The evaluation passes' samples in ``work_unit`` (0 without evaluations)."""
        per_sample = self.real_tokens_per_sample if self.work_unit == "tokens" else 1.0
        return self.evaluations * self.eval_samples * per_sample

    def batch_text(self) -> str:
        """The batch the user gave, in words, for a ranking's assumptions ("" when the layout search chooses it)."""
        parts = []
        if self.global_batch:
            parts.append(
                f"global batch {self.global_batch} samples per step, as given (where an offering's data-parallel "
                "GPUs do not divide it: a whole number per GPU, at least one)"
            )
        if self.batch_per_gpu:
            parts.append(f"micro-batch {self.batch_per_gpu} samples per GPU, as given (smaller where memory needs it)")
        return "batch: " + "; ".join(parts) if parts else ""

    def eval_text(self) -> str:
        """The evaluation schedule in words, for the assumptions list ("" without evaluations)."""
        if not self.evaluations:
            return ""
        return (
            f"evaluation: {self.evaluations:g} passes of {self.eval_samples:g} samples over the run, each sample a "
            "forward pass on the training GPUs, in the time to solution"
        )

    def default_work_text(self) -> str:
        """The amount of work in words, for the assumptions list."""
        work = self.total_work()
        if self.work is not None:
            return f"{work:.4g} {self.work_unit} (given)"
        if self.work_unit == "tokens":
            if self.mode == "pretrain":
                return f"{work:.4g} tokens ({TOKENS_PER_PARAM:g} tokens per parameter, Chinchilla-optimal)"
            return f"{work:.4g} tokens (default {self.mode} budget)"
        if self.kind == "cnn":
            return f"{work:.4g} images (90 epochs of ImageNet-1k)"
        if self.mode == "pretrain":
            return f"{work:.4g} sequences (1M steps x 256, BERT pre-training)"
        return f"{work:.4g} sequences (2 epochs of SQuAD v1.1's 88k sequences, default {self.mode} budget)"


def transformer_params(layers: int, hidden: int, vocab: int) -> float:
    """Parameters of a GPT-style decoder: 12 L h^2 (attention + 4h MLP) plus the embedding."""
    return 12.0 * layers * hidden * hidden + vocab * hidden


def _decoder(
    name: str, params: float, layers: int, hidden: int, heads: int, vocab: int, seq: int, text: str
) -> Workload:
    return Workload(
        name=name,
        kind="decoder",
        params=params,
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        seq_len=seq,
        work_unit="tokens",
        description=text,
    )


# Shapes from each model's paper or model card.
WORKLOADS: dict[str, Workload] = {
    "resnet50": Workload(
        name="resnet50",
        kind="cnn",
        params=25.6e6,
        work_unit="images",
        # 4.1 G multiply-adds forward per 224x224 image (v1.5; He et al. 2016 count multiply-adds as FLOPs): 8.2
        # GFLOPs, x3 for forward+backward.
        flops_per_sample=3 * 8.2e9,
        # Activations kept for backward at half precision: about 45 MB per image, twice that in FP32/TF32. Batches
        # that ran bound it from above: timm's benchmark trains 256 images in FP32 on the 24 GB RTX 3090 and 4090
        # (data/timm_runs.csv), at most 46 MB at half precision after estimate()'s reserve; Lambda's 496 in TF32 on
        # 48 GB cards, at most 49. The 2022 post's 11 GB cards ran 192 in FP16 and 96 in FP32; if, as the 2025 post
        # says of its method, the batch was lowered by 32 until it fit, 224 in FP16 did not: at least 44.5 MB.
        activation_bytes_per_sample=45e6,
        description="ResNet-50 v1.5 on ImageNet-1k, 224x224",
    ),
    "bert-large": Workload(
        name="bert-large",
        kind="encoder",
        params=340e6,
        layers=24,
        hidden=1024,
        heads=16,
        vocab=30522,
        seq_len=128,
        work_unit="sequences",
        description="BERT-Large (24 layers, hidden 1024)",
    ),
    "bert-base": Workload(
        name="bert-base",
        kind="encoder",
        params=110e6,
        layers=12,
        hidden=768,
        heads=12,
        vocab=30522,
        seq_len=128,
        work_unit="sequences",
        description="BERT-Base (12 layers, hidden 768)",
    ),
    "llama-2-7b": _decoder("llama-2-7b", 6.74e9, 32, 4096, 32, 32000, 4096, "Llama 2 7B"),
    "llama-2-13b": _decoder("llama-2-13b", 13.0e9, 40, 5120, 40, 32000, 4096, "Llama 2 13B"),
    "llama-2-70b": _decoder("llama-2-70b", 69.0e9, 80, 8192, 64, 32000, 4096, "Llama 2 70B"),
    "llama-3-8b": _decoder("llama-3-8b", 8.03e9, 32, 4096, 32, 128256, 8192, "Llama 3 8B"),
    "llama-3-70b": _decoder("llama-3-70b", 70.6e9, 80, 8192, 64, 128256, 8192, "Llama 3 70B"),
    "llama-3.1-405b": _decoder("llama-3.1-405b", 405e9, 126, 16384, 128, 128256, 8192, "Llama 3.1 405B"),
    "gpt3-175b": _decoder("gpt3-175b", 175e9, 96, 12288, 96, 50257, 2048, "GPT-3 175B"),
    "mistral-7b": _decoder("mistral-7b", 7.24e9, 32, 4096, 32, 32000, 8192, "Mistral 7B"),
    "mpt-7b": _decoder("mpt-7b", 6.7e9, 32, 4096, 32, 50432, 2048, "MosaicML MPT-7B"),
}

# A generic decoder built from --params/--layers/--hidden/--seq-len.
CUSTOM = "transformer"


def workload_names() -> list[str]:
    """Preset names plus the generic ``transformer``."""
    return [*WORKLOADS, CUSTOM]


# The one alias table for the amount of work: a keyword -> the work units it may name (None: any unit).
WORK_ALIASES: dict[str, tuple[str, ...] | None] = {
    "work": None,
    "tokens": ("tokens",),
    "images": ("images",),
    "sequences": ("sequences",),
    "samples": ("images", "sequences"),
}
# The fields a user may set on a preset (the rest describe the preset itself).
USER_FIELDS = (
    "params",
    "layers",
    "hidden",
    "heads",
    "vocab",
    "seq_len",
    "mode",
    "stack",
    "recompute",
    "batch_per_gpu",
    "global_batch",
    "evaluations",
    "eval_samples",
    "trainable_share",
    "packed",
    "tokens_per_sequence",
    "padding_share",
)


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(workload fields and work aliases, everything else) from one bag of keyword arguments."""
    names = set(USER_FIELDS) | set(WORK_ALIASES)
    fields = {k: v for k, v in options.items() if k in names}
    rest = {k: v for k, v in options.items() if k not in names}
    return fields, rest


def resolve_workload(name_or_workload: str | Workload, **fields: Any) -> Workload:
    """The one way from what a user gave to a Workload: a preset name (case-insensitive), ``transformer`` or a
    Workload, with ``fields`` (None values ignored) applied.

    The amount of work may be given as ``work`` or under the name of the workload's unit (``tokens``, ``images``,
    ``sequences``; ``samples`` for images or sequences); a unit that does not match the workload is an error, never
    silently read as another unit. ``transformer`` builds a custom decoder and needs ``layers`` and ``hidden``;
    ``params`` defaults to ``12 L h^2 + V h``.
    """
    given = {key: value for key, value in fields.items() if value is not None}
    aliases = [key for key in WORK_ALIASES if key in given]
    if len(aliases) > 1:
        raise InputError(
            f"gives the amount of work a second time; give only {aliases[0]}", field=aliases[1], related=(aliases[0],)
        )
    alias = aliases[0] if aliases else None
    work = given.pop(alias) if alias else None
    # Only what a user may set: the rest (name, kind, unit, FLOPs per sample ...) describes the preset itself.
    unknown = set(given) - set(USER_FIELDS)
    if unknown:
        first = sorted(unknown)[0]
        raise checks.unknown(first, "workload option", first, [*USER_FIELDS, *WORK_ALIASES])
    if "heads" in given:
        checks.whole("heads", given["heads"])
    built = _build(name_or_workload, given)
    if alias is not None:
        units = WORK_ALIASES[alias]
        if units is not None and built.work_unit not in units:
            raise InputError(
                f"does not apply to {built.name}, which counts its work in {built.work_unit}; give "
                f"{built.work_unit}= (or work=)",
                field=alias,
            )
        built = dataclasses.replace(built, work=checks.number(alias, work))
    return built


def get_workload(name_or_workload: str | Workload, **overrides: Any) -> Workload:
    """``resolve_workload`` under its earlier name."""
    return resolve_workload(name_or_workload, **overrides)


def _build(name_or_workload: str | Workload, given: dict[str, Any]) -> Workload:
    if isinstance(name_or_workload, Workload):
        return dataclasses.replace(name_or_workload, **given) if given else name_or_workload
    if not isinstance(name_or_workload, str):
        raise InputError(
            f"must be a preset name or a Workload, got {type(name_or_workload).__name__}", field="workload"
        )
    key = name_or_workload.strip().lower()
    if key == CUSTOM:
        missing = [name for name in ("layers", "hidden") if name not in given]
        if missing:
            raise InputError(
                f"transformer needs {' and '.join(missing)} (and optionally params, heads)",
                field="workload",
                related=("layers", "hidden", "params", "heads"),
            )
        layers, hidden = checks.whole("layers", given["layers"]), checks.whole("hidden", given["hidden"])
        given.setdefault("vocab", 32000)
        given.setdefault("seq_len", 2048)
        given.setdefault("heads", max(1, hidden // 128) if hidden % 128 == 0 else 0)
        given.setdefault("params", transformer_params(layers, hidden, checks.whole("vocab", given["vocab"])))
        given.setdefault("name", CUSTOM)
        given.setdefault("kind", "decoder")
        given.setdefault("work_unit", "tokens")
        return Workload(**given)
    preset = WORKLOADS.get(key)
    if preset is None:
        raise checks.unknown("workload", "workload", name_or_workload, workload_names(), shown=20)
    if preset.kind == "cnn":
        shaped = sorted({"layers", "hidden", "heads", "vocab", "seq_len", "params"} & set(given))
        if shaped:
            raise InputError(f"does not apply to the CNN workload {preset.name}; drop it", field=shaped[0])
    elif ("layers" in given or "hidden" in given) and "params" not in given:
        layers = checks.whole("layers", given.get("layers", preset.layers))
        hidden = checks.whole("hidden", given.get("hidden", preset.hidden))
        given["params"] = transformer_params(layers, hidden, checks.whole("vocab", given.get("vocab", preset.vocab)))
    return dataclasses.replace(preset, **given) if given else preset
