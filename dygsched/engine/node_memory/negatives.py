"""The negative destinations each batch scores its events against.

Training draws one per event, uniformly from all nodes (TGL's rule), anew every epoch;
evaluation draws ``eval_negatives`` per event, the same every epoch; TGB's fixed negatives, where
``tgb_negatives`` gives their files, replace the drawn ones of their phase. Draws are seeded per
global batch (``negative_destinations``), so every rank count draws the same ones.
"""

from __future__ import annotations

import torch

from dygsched.data.event_batches import negative_destinations
from dygsched.data.tgb_negatives import FixedNegatives
from dygsched.engine.node_memory.batches import RankBatch


class NegativeSampler:
    """``destinations(batch, epoch)``: a batch's negatives, in blocks of one per event."""

    def __init__(self, seed: int, num_nodes: int, eval_negatives: int, fixed: dict[str, FixedNegatives]) -> None:
        self.seed, self.num_nodes, self.eval_negatives = seed, num_nodes, eval_negatives
        self.fixed = fixed  # TGB's, per phase

    def destinations(self, batch: RankBatch, epoch: int) -> torch.Tensor:
        """One negative per event in training; ``eval_negatives`` per event in evaluation, in blocks of one per event."""
        training = batch.phase == "train"
        if batch.phase in self.fixed:  # TGB's, the same every epoch
            return self.fixed[batch.phase].destinations[batch.start : batch.stop].t().reshape(-1)
        epoch = epoch if training else 0  # evaluation sees the same negatives every epoch
        per_event = 1 if training else self.eval_negatives
        drawn = negative_destinations(self.seed, batch.phase, epoch, batch.index, batch.global_events, self.num_nodes, per_event)
        return drawn[:, batch.start - batch.global_start : batch.stop - batch.global_start].reshape(-1)
