"""Node property prediction on event streams (``task=node``): the objective and evaluation every
node-memory strategy shares.

The link-prediction loop (``NodeMemoryStrategy``) stays what it is: batches, the state each reads,
the roots it embeds, the writes it leaves. A node task adds rows to embed and a loss on the
embeddings; where those rows are computed is the strategy's business (each backend reads their
state like any other root's), what the loss is is decided here, once, for all of them.

**State labels** (``StateLabelTask``, DyGLib's dynamic node classification; TGN's and TGL's). An
event's source embedding at the event's time, before the event writes its memory (the embedding
the link loss scores), goes through DyGLib's ``MLPClassifier`` (``models.node_decoders``); the
loss is the binary cross-entropy of the event's label, summed over a rank's events and divided by
the global batch's, so the ranks' gradients add up to one process's. Evaluation scores every
validation and test event in the pass that streams the state (no pass of its own): AUC-ROC, AP.

**Node affinities** (``AffinityTask``, TGB's ``tgbn-*``). A label time ``T`` is answered at the
global batch holding the first event after ``T`` (TGB's examples: the first batch whose last
event is after ``T``), from the state all earlier batches wrote: its labelled nodes are embedded
just after ``T`` (their neighbours up to and including ``T``) and decoded (TGB's
``NodePredictor``) into affinity logits; the loss is the cross-entropy of their softmax against the
label's shares, summed over a rank's share of the rows and divided by the global batch's rows.
Evaluation: NDCG@10 per label time, averaged (``metrics.node_prediction``). A global batch's rows are
split over ranks (and Sven's micro-batches) in proportion to their events, any split scoring the
same rows.

**The model under the classifier** (``node_task.backbone``). ``frozen``: the model's weights stay
as loaded (``node_task.init_from``, a finished link-prediction run; DyGLib's and TGN's protocol:
only the classifier trains, the model in evaluation mode); ``fine_tune``: the classifier's loss
trains the model too; ``link``: the model trains by its link-prediction loss while the classifier
trains on its detached embeddings, in one run (the default without ``init_from``). Under ``frozen``
and ``fine_tune`` on affinities, a global batch without label rows takes no optimizer step (TGB
steps only on label batches); the state still streams through it.

**The floor** (``model=persistent``, ``models.persistent_forecast``): a node's last label (or
TGB's moving average), scored on exactly these rows by the same metrics.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dygsched.data.events import EventSplit, EventStream
from dygsched.data.temporal_graph import Task
from dygsched.engine import comm
from dygsched.engine.node_memory.batches import RankBatch
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import MetricValue, Missing
from dygsched.engine.timing import Region
from dygsched.errors import ConfigError
from dygsched.metrics.node_prediction import (
    NDCG_K,
    STATE_LABEL_METRICS,
    AffinityScores,
    StateLabelScores,
    affinity_metric_names,
    affinity_metrics,
    ndcg_rows,
    state_label_metrics,
)
from dygsched.models.edgebank import EdgeBank
from dygsched.models.memory_base import MemoryModel
from dygsched.models.node_decoders import AffinityDecoder, StateClassifier
from dygsched.models.persistent_forecast import PersistentForecast

PHASES = ("train", "val", "test")


class NodeTaskModel(nn.Module):
    """What the optimizer trains and checkpoints hold under ``task=node``: the memory model and the
    classifier on its embeddings."""

    def __init__(self, backbone: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head


def node_task_for(
    stream: EventStream, split: EventSplit, settings: RunConfig, batch: int, world_size: int
) -> NodePropertyTask | None:
    """The node task ``stream`` asks for (``None`` when it predicts links)."""
    if stream.task is Task.CLASSIFICATION:
        return StateLabelTask(stream, split, settings, batch, world_size)
    if stream.task is Task.AFFINITY:
        return AffinityTask(stream, split, settings, batch, world_size)
    return None


def check_node_model(model: nn.Module, task: Task) -> None:
    """The models a task trains: memory models for both; EdgeBank scores links, the persistent forecast labels."""
    if task is Task.LINK and isinstance(model, PersistentForecast):
        raise ConfigError("model=persistent forecasts node labels (task=node); link prediction's floor is model=edgebank")
    if task is not Task.LINK and isinstance(model, EdgeBank):
        raise ConfigError(
            "model=edgebank scores links; the floor of a node task (task=node) is model=persistent or moving_average"
        )
    if task is not Task.LINK and not isinstance(model, (MemoryModel, PersistentForecast)):
        raise ConfigError("task=node on an event stream trains model=tgn, jodie or apan (or model=persistent, its floor)")


class NodePropertyTask(ABC):
    """One node task: its rows, its loss and its evaluation (see the module docstring)."""

    kind: Task

    def __init__(self, stream: EventStream, split: EventSplit, settings: RunConfig, batch: int, world_size: int) -> None:
        self.stream, self.split, self.settings = stream, split, settings
        self.global_batch = batch * world_size
        block = settings.resolved_node_task  # init_from as the run folder it names
        self.mode = block.mode
        self.init_from = block.init_from
        self.dropout = block.dropout
        self.baseline: PersistentForecast | None = None
        self.head: nn.Module | None = None
        self.device = torch.device("cpu")
        self._head_regions: list[Region] = []  # the classifier's forwards this epoch (training), read when it ends
        self._scored: list[Any] = []  # this pass's scores (evaluation)

    # ---- before any rank starts -------------------------------------------------------------------
    def check(self, settings: RunConfig) -> None:
        for name, given in (
            ("eval.inductive", settings.eval.inductive != "in_phase"),
            ("eval.average", settings.eval.average != "pooled"),
        ):
            if given:
                raise ConfigError(f"{name} sets how link prediction is scored; task=node scores the stream's labels")

    # ---- the model --------------------------------------------------------------------------------
    @abstractmethod
    def build_head(self, model: MemoryModel) -> nn.Module:
        """The classifier on ``model``'s embeddings."""

    def objective(self, model: nn.Module, device: torch.device) -> nn.Module:
        """``model`` with its classifier (the persistent forecast alone); its weights from ``init_from``."""
        self.device = device
        if isinstance(model, PersistentForecast):
            self.baseline = model
            return model
        assert isinstance(model, MemoryModel)
        if self.init_from:
            from dygsched.engine.node_memory.init_from import initial_weights

            try:
                model.load_state_dict(initial_weights(self.init_from))
            except RuntimeError as exc:  # the weights do not fit (check_init_from compares the configs first)
                raise ConfigError(
                    f"node_task.init_from: its weights do not fit this model ({str(exc).splitlines()[0]})"
                ) from None
        if self.mode == "frozen":
            model.requires_grad_(False)
        self.head = self.build_head(model)
        return NodeTaskModel(model, self.head)

    def train_mode(self, model: nn.Module) -> None:
        """After ``model.train()``: a frozen model runs in evaluation mode (DyGLib), its classifier trains."""
        if self.mode == "frozen":
            model.eval()

    # ---- training steps ---------------------------------------------------------------------------
    def extra_roots(self, batch: RankBatch) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Rows this rank embeds beside the batch's own roots (vertices, query times), or ``None``."""
        return None

    def trains(self, batch: RankBatch) -> bool:
        """Whether the global batch of ``batch`` takes an optimizer step."""
        return True

    def units(self, batch: RankBatch) -> int:
        """What this rank's share of a step's loss is counted in (the worker's loss per unit)."""
        return batch.events

    def divisor(self, batch: RankBatch) -> int:
        """What the ranks' summed loss of a global batch is divided by."""
        return batch.global_events

    @abstractmethod
    def step_loss(
        self,
        batch: RankBatch,
        events: slice | torch.Tensor,
        z_sources: torch.Tensor,
        z_extra: torch.Tensor,
        link_loss: torch.Tensor,
    ) -> torch.Tensor:
        """This rank's loss sum for ``batch``: the task's loss, and the link loss under ``backbone=link``.
        In evaluation (no gradient) it records the rows' scores instead of training."""

    @abstractmethod
    def baseline_step(self, batch: RankBatch, events: slice | torch.Tensor) -> None:
        """The persistent forecast's scores of ``batch``'s rows (recorded), then its state updated
        with the whole global batch's labels."""

    def _classifier_input(self, z: torch.Tensor) -> torch.Tensor:
        return z.detach() if self.mode == "link" else z

    def _timed_head(self, z: torch.Tensor) -> torch.Tensor:
        assert self.head is not None
        self.head.train(torch.is_grad_enabled())
        if not torch.is_grad_enabled():
            return self.head(z)
        region = Region(self.device)
        out = self.head(self._classifier_input(z))
        self._head_regions.append(region.stop())  # read at the epoch's end: a step never waits for the device
        return out

    # ---- evaluation -------------------------------------------------------------------------------
    def reset(self) -> None:
        """The state is reset (each epoch, and before an evaluation replays earlier phases)."""
        if self.baseline is not None:
            self.baseline.reset(self.label_width)

    @property
    @abstractmethod
    def label_width(self) -> int:
        """A label's width (1 for a state label, the classes for an affinity)."""

    def start_pass(self, phase: str) -> None:
        """A pass over ``phase``'s events without training begins: what it scores is that phase's."""
        self._scored = []

    def scored(self) -> list[Any]:
        """What the pass has scored so far, one entry per batch in stream order (``dygsched predict`` reads it)."""
        return list(self._scored)

    @abstractmethod
    def metrics(self) -> dict[str, MetricValue]:
        """The last pass's metrics over every rank's rows (a collective)."""

    @abstractmethod
    def metric_names(self) -> frozenset[str]:
        """What ``metrics`` reports."""

    def epoch_metrics(self) -> dict[str, MetricValue]:
        """``node_head_s``: the seconds of the classifier's forward passes in the epoch's training steps."""
        seconds = sum(region.seconds for region in self._head_regions)
        self._head_regions = []
        return {"node_head_s": seconds}

    def describe(self) -> dict[str, Any]:
        start, stop = self.split.train
        return {
            "node_task": self.kind.value,
            "node_backbone": None if self.baseline is not None else self.mode,  # the floor has no model under it
            "init_from": self.init_from,
            "train_events": stop - start,
        }


class StateLabelTask(NodePropertyTask):
    """Each event's source state label (DyGLib's dynamic node classification)."""

    kind = Task.CLASSIFICATION

    def __init__(self, stream: EventStream, split: EventSplit, settings: RunConfig, batch: int, world_size: int) -> None:
        super().__init__(stream, split, settings, batch, world_size)
        assert stream.labels is not None
        self.labels = stream.labels

    def check(self, settings: RunConfig) -> None:
        super().check(settings)
        start, stop = self.split.train
        positives = int(self.labels[start:stop].sum())
        if positives == 0:
            rate = float(self.labels.double().mean())
            raise ConfigError(
                f"task=node: no training event of dataset '{self.stream.name}' has label 1 (its positive rate: {rate:.3g} "
                f"overall): the classifier would learn nothing; use a longer training split or a stream with positives"
            )

    @property
    def label_width(self) -> int:
        return 1

    def build_head(self, model: MemoryModel) -> nn.Module:
        return StateClassifier(model.embedding_dim, self.dropout)

    def step_loss(
        self,
        batch: RankBatch,
        events: slice | torch.Tensor,
        z_sources: torch.Tensor,
        z_extra: torch.Tensor,
        link_loss: torch.Tensor,
    ) -> torch.Tensor:
        logits = self._timed_head(z_sources)
        labels = self.labels[events].to(z_sources.device, non_blocking=True).to(logits.dtype)
        loss = F.binary_cross_entropy_with_logits(logits, labels, reduction="sum")
        if not torch.is_grad_enabled():
            self._scored.append(StateLabelScores(float(loss), logits.float().cpu().numpy(), self.labels[events].numpy()))
        return loss + link_loss if self.mode == "link" else loss

    def baseline_step(self, batch: RankBatch, events: slice | torch.Tensor) -> None:
        assert self.baseline is not None
        src, labels = self.stream.src[events], self.labels[events]
        forecast = self.baseline.predict(src)[:, 0].clamp(0.0, 1.0)
        loss = F.binary_cross_entropy(
            forecast.double(), labels.double(), reduction="sum"
        )  # each log clamped at -100, as DyGLib's
        self._scored.append(StateLabelScores(float(loss), forecast.numpy(), labels.numpy()))
        first = self.split.phase(batch.phase)[0]
        whole = slice(first + batch.global_start, first + batch.global_stop)  # every rank's events: the state stays one
        self.baseline.update(self.stream.src[whole], self.labels[whole].double()[:, None])

    def metrics(self) -> dict[str, MetricValue]:
        return state_label_metrics(
            StateLabelScores.cat(comm.all_gather_object(StateLabelScores.cat(self._scored or [_no_scores()])))
        )

    def metric_names(self) -> frozenset[str]:
        return STATE_LABEL_METRICS

    def describe(self) -> dict[str, Any]:
        start, stop = self.split.train
        return {**super().describe(), "train_positive_rate": float(self.labels[start:stop].double().mean())}


def _no_scores() -> StateLabelScores:
    return StateLabelScores(0.0, np.zeros(0, np.float32), np.zeros(0, np.uint8))


class AffinityTask(NodePropertyTask):
    """Nodes' affinities at label times (TGB's node property prediction)."""

    kind = Task.AFFINITY

    def __init__(self, stream: EventStream, split: EventSplit, settings: RunConfig, batch: int, world_size: int) -> None:
        super().__init__(stream, split, settings, batch, world_size)
        assert stream.affinity is not None
        self.labels = labels = stream.affinity
        # each label time's answering event: the first after it; label times after the last event are never asked
        first_after = torch.searchsorted(stream.t, labels.times, right=True)
        relative = (labels.times - stream.t[0]).to(torch.get_default_dtype())
        query = torch.nextafter(relative, torch.full_like(relative, float("inf")))  # neighbours up to and including T
        self.row_time = labels.time_of_rows()
        self.row_query = query[self.row_time]
        # (phase, global batch) -> its rows [r0, r1): label times are in order, so a batch's rows are contiguous
        self.rows_of: dict[tuple[str, int], tuple[int, int]] = {}
        self.unanswered = 0
        for k in range(labels.num_times):
            r0, r1 = int(labels.time_rows[k]), int(labels.time_rows[k + 1])
            event = int(first_after[k])
            if event >= stream.num_events:
                self.unanswered += r1 - r0
                continue
            phase = next(p for p in PHASES if split.phase(p)[0] <= event < split.phase(p)[1])
            key = (phase, (event - split.phase(phase)[0]) // self.global_batch)
            lo, _ = self.rows_of.get(key, (r0, r1))
            self.rows_of[key] = (lo, r1)

    def check(self, settings: RunConfig) -> None:
        super().check(settings)
        if not any(phase == "train" for phase, _ in self.rows_of):
            raise ConfigError(
                f"task=node: no label time of dataset '{self.stream.name}' falls in its training events: the decoder "
                "would learn nothing; use a longer training split"
            )

    @property
    def label_width(self) -> int:
        return self.labels.num_classes

    def build_head(self, model: MemoryModel) -> nn.Module:
        return AffinityDecoder(model.embedding_dim, self.labels.num_classes)

    def _rows(self, batch: RankBatch) -> tuple[int, int]:
        """This rank's (or micro-batch's) rows of its global batch: a share in proportion to its events."""
        lo, hi = self.rows_of.get((batch.phase, batch.index), (0, 0))
        count, width = hi - lo, batch.global_events
        offset = batch.start - batch.global_start
        return lo + count * offset // width, lo + count * (offset + batch.events) // width

    def _global_rows(self, batch: RankBatch) -> int:
        lo, hi = self.rows_of.get((batch.phase, batch.index), (0, 0))
        return hi - lo

    def extra_roots(self, batch: RankBatch) -> tuple[torch.Tensor, torch.Tensor] | None:
        r0, r1 = self._rows(batch)
        return self.labels.nodes[r0:r1], self.row_query[r0:r1]

    def trains(self, batch: RankBatch) -> bool:
        return self.mode == "link" or self._global_rows(batch) > 0

    def units(self, batch: RankBatch) -> int:
        if self.mode == "link":
            return batch.events
        r0, r1 = self._rows(batch)
        return r1 - r0

    def divisor(self, batch: RankBatch) -> int:
        return batch.global_events if self.mode == "link" else max(self._global_rows(batch), 1)

    def step_loss(
        self,
        batch: RankBatch,
        events: slice | torch.Tensor,
        z_sources: torch.Tensor,
        z_extra: torch.Tensor,
        link_loss: torch.Tensor,
    ) -> torch.Tensor:
        r0, r1 = self._rows(batch)
        logits = self._timed_head(z_extra)  # no row on this rank: an empty sum, still the classifier's (a zero gradient)
        target = self.labels.dense(torch.arange(r0, r1))
        shares = (target / target.sum(1, keepdim=True)).to(logits.device, non_blocking=True).to(logits.dtype)
        loss = -(shares * F.log_softmax(logits, dim=-1)).sum()  # cross-entropy against the label's shares (TGB's)
        if not torch.is_grad_enabled():
            ndcg = ndcg_rows(target.numpy(), logits.float().cpu().numpy(), NDCG_K)
            self._scored.append(AffinityScores(float(loss), ndcg, self.row_time[r0:r1].numpy()))
        if self.mode != "link":
            return loss
        return link_loss + loss * (batch.global_events / max(self._global_rows(batch), 1))

    def baseline_step(self, batch: RankBatch, events: slice | torch.Tensor) -> None:
        assert self.baseline is not None
        r0, r1 = self._rows(batch)
        if r1 > r0:
            forecast = self.baseline.predict(self.labels.nodes[r0:r1])
            ndcg = ndcg_rows(self.labels.dense(torch.arange(r0, r1)).numpy(), forecast.numpy(), NDCG_K)
            self._scored.append(AffinityScores(0.0, ndcg, self.row_time[r0:r1].numpy()))
        lo, hi = self.rows_of.get((batch.phase, batch.index), (0, 0))  # every rank's rows: the state stays one
        if hi > lo:
            self.baseline.update(self.labels.nodes[lo:hi], self.labels.dense(torch.arange(lo, hi)).double())

    def metrics(self) -> dict[str, MetricValue]:
        empty = AffinityScores(0.0, np.zeros(0), np.zeros(0, np.int64))
        scores = AffinityScores.cat(comm.all_gather_object(AffinityScores.cat(self._scored or [empty])))
        loss: MetricValue | None = None
        if self.baseline is not None:
            loss = Missing("the persistent forecast gives no probabilities for a cross-entropy")
        return affinity_metrics(scores, NDCG_K, loss)

    def metric_names(self) -> frozenset[str]:
        return affinity_metric_names(NDCG_K)

    def describe(self) -> dict[str, Any]:
        rows = {phase: sum(hi - lo for (p, _), (lo, hi) in self.rows_of.items() if p == phase) for phase in PHASES}
        return {**super().describe(), "label_rows": rows, "unanswered_label_rows": self.unanswered}
