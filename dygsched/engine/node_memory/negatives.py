"""The negatives each batch scores its events against.

Training draws one destination per event, uniformly from all nodes (TGL's rule), anew every epoch.
Evaluation draws ``eval_negatives`` per event under each sampler of ``eval.negatives``
(``dygsched/data/negative_edges.py``: random, historical, inductive), the same every epoch; TGB's
fixed negatives, where ``tgb_negatives`` gives their files, replace the drawn ones of their phase.
Draws are seeded per global batch and made from the global batch's events, so every rank count
draws the same ones; a rank takes its slice. ``negative_sampler`` and ``new_node_sampler`` build a
run's samplers from its settings; ``check_samplers`` and ``check_evaluation`` refuse impossible ones
before any rank starts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dygsched.data.event_batches import evaluated_phase, negative_destinations
from dygsched.data.events import EventSplit, EventStream
from dygsched.data.link_negatives import stored_in_cache
from dygsched.data.negative_edges import NegativeEdges, sampler_names
from dygsched.data.tgb_negatives import FixedNegatives, read_phase_negatives
from dygsched.engine.node_memory.batches import RankBatch
from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from dygsched.metrics.link_prediction import AVERAGES

INDUCTIVE_EVENTS = ("in_phase", "apart")  # eval.inductive: the new-node events scored in the phase's pass, or apart


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


def fixed_negatives_prefix(stream: EventStream, split: EventSplit, settings: RunConfig) -> str | None:
    """The files of the fixed negatives the evaluated phases score against: TGB's (``tgb_negatives``),
    or ``eval.one_vs_many``'s, generated into the cache where they are not there yet; None without either."""
    if settings.tgb_negatives:
        return settings.tgb_negatives
    if not settings.eval.one_vs_many:
        return None
    phases = {"val": split.val, "test": split.test}
    return str(stored_in_cache(stream, split.val[0], phases, settings.eval.one_vs_many, settings.seed))


def negative_sampler(
    stream: EventStream, split: EventSplit, settings: RunConfig, fixed: dict[str, FixedNegatives]
) -> NegativeSampler:
    """TGL's rule alone needs no edge history; any other sampler or pool reads the stream's."""
    edges = None if settings.eval.default_negatives else negative_edges(stream, stream, split, settings)
    return NegativeSampler(settings.seed, stream.num_nodes, int(settings.eval_negatives), fixed, edges, stream, split)


def negative_edges(pool: EventStream, stream: EventStream, split: EventSplit, settings: RunConfig) -> NegativeEdges:
    """DyGLib's samplers over ``pool``'s edges, observing up to the ends of ``stream``'s training and validation."""
    return NegativeEdges(
        pool,
        float(stream.t[split.train[1] - 1]),
        settings.eval.negative_pool,
        settings.eval.random_share,
        val_last_time=float(stream.t[split.val[1] - 1]),
    )


def new_node_sampler(stream: EventStream, split: EventSplit, settings: RunConfig, events: torch.Tensor) -> NegativeSampler:
    """The negatives of a new-node pass over ``events`` (DyGLib's samplers built on those events
    alone: random destinations among theirs, historical and inductive edges among theirs seen
    earlier); TGL's rule draws from all nodes, as in the phase's pass, seeded apart."""
    if settings.eval.default_negatives or not events.numel():
        return negative_sampler(stream, split, settings, {})
    alone = EventStream(
        f"{stream.name} (new-node events)", stream.src[events], stream.dst[events], stream.t[events], stream.num_nodes
    )
    count = int(events.numel())
    edges = negative_edges(alone, stream, split, settings)
    whole = EventSplit((0, 0), (0, count), (0, count))  # positions in ``alone``
    return NegativeSampler(settings.seed, stream.num_nodes, int(settings.eval_negatives), {}, edges, alone, whole)


def check_samplers(stream: EventStream, split: EventSplit, settings: RunConfig) -> None:
    """``eval.negatives``, ``eval.negative_pool``, ``eval.random_share`` and ``eval.hits_k``: one line each if wrong."""
    if settings.eval.hits_k < 1:
        raise ConfigError(f"eval.hits_k must be at least 1, got {settings.eval.hits_k}")
    sampler_names(settings.eval.samplers)  # an unknown sampler
    if settings.eval.default_negatives:
        return
    edges = NegativeEdges(stream, float(stream.t[split.train[1] - 1]), settings.eval.negative_pool, settings.eval.random_share)
    if "inductive" in settings.eval.samplers and edges.edges_after_training() == 0:
        raise ConfigError(
            "eval.negatives=inductive draws edges first seen after training, but every edge of this split "
            "occurs in training (or before its last time): use random or historical"
        )


def check_evaluation(stream: EventStream, split: EventSplit, settings: RunConfig) -> None:
    """What link prediction's evaluation draws and how it scores, before any rank starts: the
    samplers (``check_samplers``), ``eval.inductive`` and ``eval.average``, and TGB's or
    ``eval.one_vs_many``'s fixed negatives (generated here, once, and read back against the split)."""
    if settings.eval_negatives < 1:
        raise ConfigError(f"eval_negatives must be at least 1 negative per event, got {settings.eval_negatives}")
    check_samplers(stream, split, settings)
    if settings.eval.inductive not in INDUCTIVE_EVENTS:
        raise ConfigError(f"eval.inductive must be one of {', '.join(INDUCTIVE_EVENTS)}, got {settings.eval.inductive!r}")
    if settings.eval.average not in AVERAGES:
        raise ConfigError(f"eval.average must be one of {', '.join(AVERAGES)}, got {settings.eval.average!r}")
    if settings.eval.inductive == "apart" and (settings.tgb_negatives or settings.eval.one_vs_many):
        raise ConfigError(
            "eval.inductive=apart draws its own negatives for the new-node pass: fixed ones "
            "(tgb_negatives, eval.one_vs_many) have none for it"
        )
    if settings.tgb_negatives:
        if settings.eval_negatives != 1:
            raise ConfigError("give eval_negatives (uniform negatives) or tgb_negatives (TGB's fixed ones), not both")
        if not settings.eval.default_negatives:
            raise ConfigError(
                "tgb_negatives gives TGB's fixed negatives: leave eval.negatives and eval.negative_pool at random, all"
            )
    prefix = fixed_negatives_prefix(stream, split, settings)  # eval.one_vs_many's are generated here, once
    if prefix is not None:
        read_phase_negatives(prefix, stream, {"val": split.val, "test": split.test})  # one line if it does not fit
