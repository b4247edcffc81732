"""The negatives each batch scores its events against.

Training draws one destination per event, uniformly from all nodes (TGL's rule), anew every epoch.
Evaluation draws ``eval_negatives`` per event under each sampler of ``eval.negatives``
(``dygsched/data/negative_edges.py``: random, historical, inductive), the same every epoch; TGB's
fixed negatives, where ``tgb_negatives`` gives their files, replace the drawn ones of their phase.
Draws are seeded per global batch and made from the global batch's events, so every rank count
draws the same ones; a rank takes its slice.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dygsched.data.event_batches import evaluated_phase, negative_destinations
from dygsched.data.events import EventSplit, EventStream
from dygsched.data.negative_edges import NegativeEdges
from dygsched.data.tgb_negatives import FixedNegatives
from dygsched.engine.node_memory.batches import RankBatch


@dataclass(frozen=True)
class Negatives:
    """A rank's negatives in blocks of one per event: ``destinations [m n]`` and, for samplers that
    corrupt whole edges (historical, inductive), ``sources [m n]`` (None: each event's own source)."""

    sources: torch.Tensor | None
    destinations: torch.Tensor


class NegativeSampler:
    """``of(batch, epoch, sampler)``: a batch's negatives under ``sampler``."""

    def __init__(
        self,
        seed: int,
        num_nodes: int,
        eval_negatives: int,
        fixed: dict[str, FixedNegatives],
        edges: NegativeEdges | None = None,
        stream: EventStream | None = None,
        split: EventSplit | None = None,
    ) -> None:
        self.seed, self.num_nodes, self.eval_negatives = seed, num_nodes, eval_negatives
        self.fixed = fixed  # TGB's, per phase
        self.edges, self.stream, self.split = edges, stream, split  # the samplers' pools (None: TGL's rule only)
        self._last: tuple[tuple[str, str, int], tuple[torch.Tensor | None, torch.Tensor]] | None = None

    def destinations(self, batch: RankBatch, epoch: int) -> torch.Tensor:
        """TGL's rule: one uniform destination per event in training; ``eval_negatives`` in evaluation."""
        return self.of(batch, epoch, "random").destinations

    def of(self, batch: RankBatch, epoch: int, sampler: str = "random") -> Negatives:
        """One negative per event in training (TGL's rule, whatever ``sampler``); ``eval_negatives``
        per event under ``sampler`` in evaluation, or TGB's fixed ones."""
        if batch.phase in self.fixed:  # TGB's, the same every epoch
            return Negatives(None, self.fixed[batch.phase].destinations[batch.start : batch.stop].t().reshape(-1))
        mine = slice(batch.start - batch.global_start, batch.stop - batch.global_start)
        if batch.phase == "train" or self.edges is None:
            training = batch.phase == "train"
            per_event = 1 if training else self.eval_negatives
            epoch = epoch if training else 0  # evaluation sees the same negatives every epoch
            drawn = negative_destinations(
                self.seed, batch.phase, epoch, batch.index, batch.global_events, self.num_nodes, per_event
            )
            return Negatives(None, drawn[:, mine].reshape(-1))
        sources, destinations = self._global(batch, sampler)
        return Negatives(None if sources is None else sources[:, mine].reshape(-1), destinations[:, mine].reshape(-1))

    def _global(self, batch: RankBatch, sampler: str) -> tuple[torch.Tensor | None, torch.Tensor]:
        """The whole global batch's draw (kept for the batch's other micro-batches)."""
        key = (batch.phase, sampler, batch.index)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        assert self.edges is not None and self.stream is not None and self.split is not None
        first = self.split.phase(evaluated_phase(batch.phase))[0]
        events = slice(first + batch.global_start, first + batch.global_stop)
        t = self.stream.t[events]
        drawn = self.edges.draw(
            sampler,
            self.seed,
            batch.phase,
            batch.index,
            self.stream.src[events],
            self.stream.dst[events],
            float(t[0]),
            float(t[-1]),
            self.eval_negatives,
        )
        self._last = (key, drawn)
        return drawn
