"""Link prediction with snapshot models: the objective and the evaluation every snapshot strategy shares.

A group's last snapshot ``t`` carries ``links``, the distinct pairs that link in snapshot ``t + 1``
(``dygsched.data.link_targets``). The model's output after ``t`` is each node's embedding
(``TemporalGraph.embedding_dim`` wide); ``LinkDecoder`` (a two-layer MLP on the pair) scores a pair.

**Training.** Each positive pair ``(u, v)`` is scored against ``link.negatives`` pairs ``(u, v')``
with ``v'`` uniform over all nodes (TGL's rule, which the event models train with), drawn anew
each epoch from a generator seeded by (seed, epoch, target snapshot): every strategy and every
rank count draws the same ones, so the losses compare step for step. The epoch's draws for every
training snapshot are made at once in ``start_epoch`` and moved to the device in one copy. The
group's loss is the event models' per event: ``(sum of BCE over the positives and the negatives) / P``
for the ``P`` positives; ``owned`` (a node partition's rows) scores the pairs whose source the rank
owns, still divided by every pair, so the ranks' shares add up to the group's loss.

**Evaluation** (``LinkEvaluation``), the same protocol as the event streams': every positive of an
evaluated snapshot against ``eval_negatives`` negatives under each sampler of ``eval.negatives``
(random, historical, inductive: ``dygsched.data.negative_edges``, over the history of the link
targets, a snapshot being one batch), seeded by (seed, phase, sampler, target snapshot) and the same
every epoch; AP and AUC, and with several negatives TGB's MRR and hits@k
(``dygsched.metrics.link_prediction``). A positive with an endpoint that no edge up to the last
training target touched counts as inductive. The scores stay on the device until ``metrics``.
Ranking is vectorised: a snapshot's positives and all their negatives are scored in a few decoder
calls (``score_in_blocks``: at most ``SCORED_AT_ONCE`` pairs each, so memory stays bounded), and
the ranks are array operations (``dygsched.metrics.link_prediction.ranks``), no loop per positive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dygsched.data.event_batches import negative_destinations
from dygsched.data.groups import Split
from dygsched.data.link_negatives import stored_in_cache
from dygsched.data.link_targets import link_events, links_of
from dygsched.data.negative_edges import NegativeEdges
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.data.tgb_negatives import FixedNegatives, read_phase_negatives
from dygsched.engine import comm
from dygsched.engine.objective import GroupObjective, PhaseEvaluation
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import MetricValue
from dygsched.metrics.link_prediction import EvaluationScores, link_prediction_metrics, sampler_label
from dygsched.models.dgnn import DGNN
from dygsched.models.link_decoder import LinkDecoder

SCORED_AT_ONCE = 1 << 20  # evaluation's pairs per decoder call: 256 MiB of a 64-wide hidden layer in float32


@dataclass(frozen=True)
class LinkProtocol:
    """Which negatives each positive pair is scored against, in training and in evaluation."""

    seed: int
    num_nodes: int
    embedding_dim: int
    train_negatives: int
    eval_negatives: int
    samplers: tuple[str, ...]
    negative_pool: str
    default_negatives: bool  # TGL's rule alone: metric names carry no sampler
    hits_k: int
    average: str
    edges: NegativeEdges | None  # the link history the samplers draw from (None: uniform destinations only)
    seen: torch.Tensor  # [N] bool: nodes that an edge up to the last training target touched
    training_pairs: dict[int, int]  # target snapshot -> its pair count, for every snapshot a training window reads
    # eval.one_vs_many: each evaluated phase's stored negatives, and each target snapshot's rows in them
    fixed: dict[str, FixedNegatives]
    fixed_rows: dict[int, tuple[int, int]]

    @classmethod
    def build(cls, graph: TemporalGraph, split: Split, settings: RunConfig) -> LinkProtocol:
        train_stop = split.train[-1].stop  # snapshots 0 .. train_stop - 1 are what training reads
        train_last = graph.snapshots[train_stop - 1].target_index
        val_last = graph.snapshots[split.val[-1].stop - 1].target_index
        edges = None
        if not settings.eval.default_negatives:
            edges = NegativeEdges(
                link_events(graph), train_last, settings.eval.negative_pool, settings.eval.random_share, val_last_time=val_last
            )
        fixed, fixed_rows = stored_negatives(graph, split, settings)
        seen = torch.zeros(graph.num_nodes, dtype=torch.bool)
        for snapshot in graph.snapshots[:train_stop]:
            seen[snapshot.edge_index.reshape(-1)] = True
            seen[links_of(snapshot).reshape(-1)] = True
        return cls(
            seed=settings.seed,
            num_nodes=graph.num_nodes,
            embedding_dim=graph.embedding_dim,
            train_negatives=settings.link.negatives,
            eval_negatives=settings.eval_negatives,
            samplers=settings.eval.samplers,
            negative_pool=settings.eval.negative_pool,
            default_negatives=settings.eval.default_negatives,
            hits_k=settings.eval.hits_k,
            average=settings.eval.average,
            edges=edges,
            seen=seen,
            training_pairs={s.target_index: links_of(s).shape[1] for s in graph.snapshots[:train_stop]},
            fixed=fixed,
            fixed_rows=fixed_rows,
        )

    def training_negatives(self, epoch: int) -> dict[int, torch.Tensor]:
        """Each training target snapshot's negative destinations for ``epoch``, ``[k, P]`` (host)."""
        return {
            t: negative_destinations(self.seed, "train", epoch, t, count, self.num_nodes, self.train_negatives)
            for t, count in self.training_pairs.items()
        }

    def evaluation_negatives(self, phase: str, sampler: str, last: Snapshot) -> tuple[torch.Tensor | None, torch.Tensor]:
        """The negatives of ``last``'s pairs in ``phase`` under ``sampler``: sources (None: each pair's
        own source) and destinations, each ``[m, P]`` (host); the stored ones where ``eval.one_vs_many``
        asks for them (a place a positive has no negative for holds its own destination: see ``present``)."""
        if phase in self.fixed:
            start, stop = self.fixed_rows[last.target_index]
            return None, self.fixed[phase].destinations[start:stop].t()
        pairs = links_of(last).cpu()
        count, t = int(pairs.shape[1]), last.target_index
        if self.edges is None:
            return None, negative_destinations(self.seed, phase, 0, t, count, self.num_nodes, self.eval_negatives)
        return self.edges.draw(sampler, self.seed, phase, t, pairs[0], pairs[1], t, t, self.eval_negatives)


def evaluated_ranges(graph: TemporalGraph, split: Split) -> tuple[np.ndarray, dict[str, tuple[int, int]], int]:
    """Where each snapshot's positives start in ``link_events(graph)`` (``offsets``, one more than
    snapshots), each evaluated phase's range of positives there, and where training's end."""
    offsets = np.concatenate([[0], np.cumsum([links_of(s).shape[1] for s in graph.snapshots])]).astype(np.int64)
    phases = {
        phase: (int(offsets[groups[0].stop - 1]), int(offsets[groups[-1].stop]))
        for phase, groups in (("val", split.val), ("test", split.test))
    }
    return offsets, phases, int(offsets[split.train[-1].stop])


def negatives_prefix(graph: TemporalGraph, split: Split, settings: RunConfig) -> str | None:
    """The stored negatives' files of this run: ``tgb_negatives``'s, or ``eval.one_vs_many``'s, generated
    into the cache first where they are not there yet (``dygsched.data.link_negatives``); None without either."""
    if settings.tgb_negatives:
        return settings.tgb_negatives
    if not settings.eval.one_vs_many:
        return None
    _, phases, train_stop = evaluated_ranges(graph, split)
    return str(stored_in_cache(link_events(graph), train_stop, phases, settings.eval.one_vs_many, settings.seed))


def stored_negatives(
    graph: TemporalGraph, split: Split, settings: RunConfig
) -> tuple[dict[str, FixedNegatives], dict[int, tuple[int, int]]]:
    """The stored negatives of the validation and test positives (``negatives_prefix``), and each
    evaluated target snapshot's rows in its phase's."""
    prefix = negatives_prefix(graph, split, settings)
    if prefix is None:
        return {}, {}
    offsets, phases, _ = evaluated_ranges(graph, split)
    fixed = read_phase_negatives(prefix, link_events(graph), phases)
    rows = {}
    for phase, groups in (("val", split.val), ("test", split.test)):
        first = phases[phase][0]
        for group in groups:
            position = group.stop - 1
            rows[graph.snapshots[position].target_index] = (int(offsets[position]) - first, int(offsets[position + 1]) - first)
    return fixed, rows


def pair_losses(positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    """The summed binary cross-entropy of positive logits against 1 and negative ones against 0."""
    return F.binary_cross_entropy_with_logits(positive, torch.ones_like(positive), reduction="sum") + (
        F.binary_cross_entropy_with_logits(negative, torch.zeros_like(negative), reduction="sum")
    )


class LinkObjective(GroupObjective):
    """Link prediction on a group's last snapshot (see the module docstring); ``decoder`` is trained with the model."""

    def __init__(self, model: DGNN, protocol: LinkProtocol) -> None:
        super().__init__(model, Task.LINK)
        self.protocol = protocol
        self.decoder = LinkDecoder(protocol.embedding_dim)
        self._drawn: dict[int, torch.Tensor] = {}  # this epoch's training negatives, on the host ...
        self._negatives: dict[int, torch.Tensor] = {}  # ... and on the device
        self._epoch: int | None = None

    def start_epoch(self, epoch: int) -> None:
        if epoch == self._epoch:
            return
        drawn = self.protocol.training_negatives(epoch)
        device = self.decoder.lin_out.weight.device
        flat = torch.cat([d.reshape(-1) for d in drawn.values()]) if drawn else torch.zeros(0, dtype=torch.int64)
        if device.type == "cuda":
            flat = flat.pin_memory().to(device, non_blocking=True)  # the epoch's draws cross once
        pieces = flat.split([d.numel() for d in drawn.values()])
        self._drawn = drawn
        self._negatives = {t: piece.view(d.shape) for (t, d), piece in zip(drawn.items(), pieces)}
        self._epoch = epoch

    def negatives_of(self, last: Snapshot) -> tuple[torch.Tensor, torch.Tensor]:
        """This epoch's training negatives of ``last``'s pairs: destinations ``[k, P]`` on the host and on the device."""
        if self._epoch is None:
            self.start_epoch(0)  # an objective used outside an epoch's loop (tests, tools): epoch 0's draws
        if last.target_index not in self._negatives:
            raise ValueError(f"snapshot {last.target_index} is not a training target of this run")
        return self._drawn[last.target_index], self._negatives[last.target_index]

    def score(self, z: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """The decoder's logits for the pairs ``src[i] -> dst[i]`` of the embedding rows ``z``
        (``LinkDecoder.pairs``: ``src`` may be one source per column of a ``[m, P]`` ``dst``)."""
        return self.decoder.pairs(z, src, dst)

    def score_in_blocks(self, z: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """``score`` of ``[m, P]`` pairs (``src``: ``[m, P]``, or ``[P]``, a source per column),
        ``SCORED_AT_ONCE`` pairs (whole columns: a positive's negatives)
        at a time, so that ranking thousands of positives against a thousand negatives each holds one
        block's hidden layer, not all of them (REDDIT's busiest day: 11,070 positives, 2.8 GB at once)."""
        columns = max(1, SCORED_AT_ONCE // max(1, dst.shape[0]))
        if dst.shape[1] <= columns:
            return self.score(z, src, dst)
        sources = src.split(columns, src.dim() - 1)  # [P]: each column's source; [m, P]: one per pair
        return torch.cat([self.score(z, s, d) for s, d in zip(sources, dst.split(columns, 1))], dim=1)

    def pair_loss(
        self, z: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, negative_dst: torch.Tensor, count: int, scale: float
    ) -> torch.Tensor:
        """``scale`` times the summed loss of the pairs ``src -> dst`` (rows of ``z``) and of their
        negatives ``src -> negative_dst`` (``[k, pairs]``), divided by the group's ``count`` pairs."""
        positive = self.score(z, src, dst)
        negative = self.score(z, src, negative_dst)  # each pair's source against its k negatives
        return pair_losses(positive, negative) * (scale / count) if count else z.sum() * 0.0

    def loss_from_predictions(
        self, predictions: torch.Tensor, last: Snapshot, scale: float = 1.0, owned: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``scale`` times the group's link loss (summed over its pairs and their negatives, divided by
        its pair count); ``owned``: only the pairs whose source is owned, divided by every pair."""
        pairs = links_of(last)
        _, negatives = self.negatives_of(last)
        src, dst = pairs[0], pairs[1]
        if owned is not None:
            keep = owned[src]
            src, dst, negatives = src[keep], dst[keep], negatives[:, keep]
        return self.pair_loss(predictions, src, dst, negatives, int(pairs.shape[1]), scale)

    def phase_evaluation(self, phase: str) -> PhaseEvaluation:
        return LinkEvaluation(self, phase)


class LinkEvaluation(PhaseEvaluation):
    """Every evaluated snapshot's positives and negatives, scored; the metrics over all of them."""

    def __init__(self, objective: LinkObjective, phase: str) -> None:
        self.objective, self.phase = objective, phase
        self.parts: dict[str, list[dict[str, Any]]] = {sampler: [] for sampler in objective.protocol.samplers}

    @torch.no_grad()
    def add(self, predictions: torch.Tensor, last: Snapshot) -> None:
        protocol, objective = self.objective.protocol, self.objective
        pairs = links_of(last)
        src, dst = pairs[0], pairs[1]
        positive = objective.score(predictions, src, dst)
        inductive = ~(protocol.seen[pairs[0].cpu()] & protocol.seen[pairs[1].cpu()])
        for sampler in protocol.samplers:
            negative_src, negative_dst = protocol.evaluation_negatives(self.phase, sampler, last)
            negative_dst = negative_dst.to(predictions.device)
            sources = src if negative_src is None else negative_src.to(predictions.device)  # [P]: each column's own source
            negative = objective.score_in_blocks(predictions, sources, negative_dst)
            if self.phase in protocol.fixed:  # places a positive has no negative for: left out of every metric
                start, stop = protocol.fixed_rows[last.target_index]
                absent = ~protocol.fixed[self.phase].present[start:stop].t().to(negative.device)
                negative = negative.masked_fill(absent, float("nan"))
            self.parts[sampler].append(
                {
                    "loss": pair_losses(positive, negative[~negative.isnan()]),  # an absent negative is not scored
                    "positive": positive,
                    "negative": negative.t(),
                    "inductive": inductive,
                    "batch": last.target_index,
                }
            )

    def metrics(self, shared: bool = False) -> dict[str, MetricValue]:
        protocol = self.objective.protocol
        metrics: dict[str, MetricValue] = {}
        for sampler, parts in self.parts.items():
            mine = [scores(part) for part in parts]  # read from the device once, at the phase's end
            gathered = [mine] if shared else comm.all_gather_object(mine)
            everything = [part for rank_parts in gathered for part in rank_parts]
            if not everything:
                raise ValueError(f"no {self.phase} snapshot was evaluated")
            found = link_prediction_metrics(
                EvaluationScores.cat(everything),
                with_mrr=protocol.eval_negatives > 1 or bool(protocol.fixed),
                hits_k=protocol.hits_k,
                average=protocol.average,
            )
            suffix = "" if protocol.default_negatives else f"[{sampler_label(sampler, protocol.negative_pool)}]"
            metrics.update({f"{name}{suffix}": value for name, value in found.items()})
        return metrics


def scores(part: dict[str, Any]) -> EvaluationScores:
    """One snapshot's scores as host arrays."""
    positive = part["positive"].double().cpu().numpy()
    return EvaluationScores(
        float(part["loss"]),
        positive,
        part["negative"].double().cpu().numpy(),
        part["inductive"].numpy(),
        np.full(positive.size, part["batch"], dtype=np.int64),
    )
