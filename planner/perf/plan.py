"""How a training job is laid out on its GPUs: tensor, pipeline, data and context parallelism, sharding and batches."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """How the job is laid out on the GPUs."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    sharded: bool = False
    recompute: bool = False
    micro_batch: int = 1
    global_batch: int = 1
    # Context parallelism splits every sequence over ``cp`` GPUs (ring attention); interleaved 1F1B gives each
    # pipeline rank ``vp`` virtual stages, dividing the pipeline bubble by ``vp``.
    cp: int = 1
    vp: int = 1
    # ZeRO-1/2 ("distributed optimizer"): optimizer state and gradients sharded over the gradient group, weights
    # replicated; moves what a gradient all-reduce moves (reduce-scatter, then all-gather of updated weights).
    zero1: bool = False

    @property
    def gradient_group(self) -> int:
        """Ranks that hold the same weights and reduce gradients together: data x context parallel."""
        return self.dp * self.cp

    @property
    def communicates(self) -> bool:
        """Whether the layout runs collectives (NCCL): more than one GPU."""
        return self.tp * self.pp * self.gradient_group > 1

    def batched(self, micro_batch: int, global_batch: int) -> Plan:
        """This layout with another micro-batch and global batch. The layout search tries thousands of these per
        ranking; positional construction costs a third of ``dataclasses.replace``."""
        return Plan(
            self.tp,
            self.pp,
            self.dp,
            self.sharded,
            self.recompute,
            micro_batch,
            global_batch,
            self.cp,
            self.vp,
            self.zero1,
        )


def stage_layers(layers: int, pp: int, vp: int = 1) -> int:
    """Layers on the busiest pipeline rank, which sets the step. Megatron-Core splits the layers into ``pp x vp``
    chunks; where they do not divide (Llama 3.1 405B's 126 layers over 8 ranks of 8 virtual stages) the chunks hold
    whole layers and the fullest ones pace the pipeline: ``ceil(layers / (pp vp))`` a chunk, ``vp`` chunks a rank.
    NVIDIA's recipes put the embedding and the loss in the lighter first and last chunks (``account_for_embedding``
    and ``account_for_loss_in_pipeline_split``), so they do not add to the busiest rank."""
    if pp <= 1:
        return layers
    return math.ceil(layers / (pp * vp)) * vp
