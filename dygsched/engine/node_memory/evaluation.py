"""The node-memory loop's evaluation: validation and test stream the state on from where it is,
and the state validation started from is kept for the checkpoint.

Validation continues from the state the epoch's training left (written step by step under weights
that were still changing), test from the end of validation (TGL's protocol); a phase whose
predecessor the state has not just absorbed is reached by streaming every earlier phase from an
empty state without training (EdgeBank and the persistent forecast, which train nothing, always
are). Each pass scores its batches under every sampler of ``eval.negatives`` and then writes the
batch's state, once (``_stream_through``).

**The evaluation's starting state.** With ``checkpoint=true``, validation keeps a copy of this
rank's rows of the state it starts from when it continues from training; at the epoch's end
(``collect_for_checkpoint``, every rank) the copies are gathered into one table in vertex order on
rank 0 (DepComm's and Sven's owners' rows by their ownership; DepCache's replicas and the one
process hold every row already), and the checkpoint keeps it (``state_dict``: ``evaluation_start``:
memory, its times, the mailbox, its times and its ring positions). ``dygsched predict`` and
``embed`` start from it (``restore_evaluation_start``), so their validation and test passes are the
run's. Resuming does not read it: every epoch's training starts from an empty state.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

import torch

from dygsched.data.event_batches import NEW_NODE_PASSES, evaluated_phase
from dygsched.data.events import EventStream
from dygsched.data.kinds import DynamicData
from dygsched.data.new_nodes import NewNodeSplit
from dygsched.engine import comm
from dygsched.engine.node_memory.backend import NodeMemory
from dygsched.engine.node_memory.batches import BatchInputs, RankBatch, Series
from dygsched.engine.node_memory.negatives import NegativeSampler
from dygsched.engine.node_memory.node_task import NodePropertyTask, node_task_for
from dygsched.engine.node_memory.state import STATE_FIELDS
from dygsched.engine.node_memory.transport import Transport
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import IterationStats, MetricValue, Missing, Strategy
from dygsched.errors import ConfigError
from dygsched.metrics.link_prediction import EvaluationScores, link_prediction_metrics, sampler_label
from dygsched.models.memory_base import MemoryModel

PHASES = ("train", "val", "test")
EVALUATION_START = "evaluation_start"  # the checkpoint's strategy state: the table validation started from


class NodeMemoryEvaluation(Strategy):
    """Validation and test of the node-memory loop (``NodeMemoryStrategy`` trains); see the module docstring."""

    batch_size: int
    settings: RunConfig
    memory: NodeMemory
    model: MemoryModel
    transport: Transport
    negatives: NegativeSampler
    new_nodes: NewNodeSplit
    new_node_events: dict[str, torch.Tensor]
    node_task: NodePropertyTask | None
    _position: str | None  # the last phase whose events the state has absorbed
    _evaluation_start: tuple[torch.Tensor, ...] | None = None  # this rank's rows as validation began
    _gathered_start: tuple[torch.Tensor, ...] | None = None  # every vertex's, on rank 0

    @abstractmethod
    def batches(self, phase: str) -> list[RankBatch]: ...

    @abstractmethod
    def inputs(self, batch: RankBatch, sampler: str = "random") -> BatchInputs: ...

    @abstractmethod
    def _step(
        self, batch: RankBatch, inputs: BatchInputs, stats: IterationStats, upcoming: Series | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, StateUpdates]: ...

    @abstractmethod
    def _reset_state(self) -> None: ...

    @property
    def _keeps_start(self) -> bool:
        return bool(self.settings.checkpoint)

    def evaluate(self, phase: str) -> dict[str, MetricValue]:
        if phase not in ("val", "test"):
            raise ValueError(phase)
        previous = PHASES[PHASES.index(phase) - 1]
        if phase == "val":  # the state validation starts from, kept for the checkpoint (module docstring)
            self._evaluation_start = self.memory.table.snapshot() if self._position == "train" and self._keeps_start else None
        if self._position != previous:  # bring the state to the end of the phase before
            self._reset_state()
            self._position = None
            for earlier in PHASES[: PHASES.index(phase)]:
                self._stream_through(earlier)
        new_node_pass = NEW_NODE_PASSES[phase]
        before = self.memory.table.snapshot() if new_node_pass in self.new_node_events else None
        scores = self._stream_through(phase)  # task=node: the same pass scores its rows (node_task.py)
        metrics = self.node_task.metrics() if self.node_task is not None else self._metrics(scores)
        if before is not None:
            metrics.update(self._new_node_pass(phase, before))
        return metrics

    def _new_node_pass(self, phase: str, before: tuple[torch.Tensor, ...]) -> dict[str, MetricValue]:
        """``eval.inductive=apart``, DyGLib's new-node evaluation: the phase's events with a new
        endpoint streamed alone, in their own batches, from the state before the phase (its memory
        absorbing only them), against negatives drawn from those events alone; its ``*_inductive``
        metrics replace the phase pass's. The state is then put back to the end of the phase."""
        new_node_pass = NEW_NODE_PASSES[phase]
        if not self.new_node_events[new_node_pass].numel():
            return {}  # the phase pass already says no event has a new endpoint
        after = self.memory.table.snapshot()
        self.memory.table.restore(before)
        found = self._metrics(self._stream_through(new_node_pass))
        self.memory.table.restore(after)
        self._position = phase
        return {name: value for name, value in found.items() if name.split("[")[0].endswith("_inductive")}

    def _stream_through(self, phase: str) -> dict[str, EvaluationScores]:
        """Every batch of ``phase`` without training: its scores under each sampler of
        ``eval.negatives`` (training's phase: TGL's rule), and its state writes, once."""
        samplers = self.settings.eval.samplers if evaluated_phase(phase) in ("val", "test") else ("random",)
        if self.node_task is not None:
            self.node_task.start_pass(phase)
        self.model.eval()
        self.transport.counting = False
        losses = dict.fromkeys(samplers, 0.0)
        positives: dict[str, list[torch.Tensor]] = {name: [] for name in samplers}
        negatives: dict[str, list[torch.Tensor]] = {name: [] for name in samplers}
        inductive: list[torch.Tensor] = []
        batch_of: list[torch.Tensor] = []  # each event's global batch (eval.average=per_batch)
        with torch.no_grad():
            for batch in self.batches(phase):
                stats = IterationStats(batch.index)
                for sampler in samplers:  # negatives never change the state: each sampler scores the same state
                    self.transport.new_step()  # evaluation's exchanges are not reported
                    inputs = self.inputs(batch, sampler)
                    loss_sum, positive, negative, updates = self._step(batch, inputs, stats)
                    losses[sampler] += float(loss_sum)
                    positives[sampler].append(positive.cpu())
                    if phase in self.negatives.fixed:  # places an event has no negative for: left out of every metric
                        negative = negative.masked_fill(
                            ~self.negatives.fixed[phase].present[batch.start : batch.stop].to(negative.device), float("nan")
                        )
                    negatives[sampler].append(negative.cpu())
                self.memory.aggregate(updates, stats)
                inductive.append(self.new_nodes.inductive(inputs.src, inputs.dst))
                batch_of.append(torch.full((batch.events,), batch.index, dtype=torch.int64))
        self._position = phase
        self.transport.counting = True
        self.model.train()
        new, batches = torch.cat(inductive).numpy(), torch.cat(batch_of).numpy()
        return {
            name: EvaluationScores(
                losses[name], torch.cat(positives[name]).numpy(), torch.cat(negatives[name]).numpy(), new, batches
            )
            for name in samplers
        }

    def evaluation_metrics(self, data: DynamicData, settings: RunConfig) -> frozenset[str]:
        assert isinstance(data, EventStream)
        split = data.split(settings.split.train, settings.split.val, settings.split.by)
        node_task = node_task_for(data, split, settings, self.batch_size, 1)
        if node_task is not None:  # task=node (node_task.py)
            return node_task.metric_names()
        fixed = bool(settings.tgb_negatives) or settings.eval.one_vs_many > 1
        return settings.link_metric_names(ranking=settings.eval_negatives > 1 or fixed)

    def _metrics(self, mine: dict[str, EvaluationScores]) -> dict[str, MetricValue]:
        """Each sampler's metrics; with any rule but TGL's alone, every name says its sampler: ``ap[historical]``."""
        metrics: dict[str, MetricValue] = {}
        for sampler, scores_mine in mine.items():
            scores = EvaluationScores.cat(comm.all_gather_object(scores_mine))
            found = link_prediction_metrics(
                scores,
                with_mrr=scores.negative.shape[1] > 1,
                hits_k=self.settings.eval.hits_k,
                average=self.settings.eval.average,
            )
            fixed = self.negatives.fixed.get(self._position or "")
            if fixed is not None and fixed.uneven:
                found["loss"] = Missing("TGB's file gives some events fewer negatives: their loss would count stand-ins")
            suffix = (
                "" if self.settings.eval.default_negatives else f"[{sampler_label(sampler, self.settings.eval.negative_pool)}]"
            )
            metrics.update({f"{name}{suffix}": value for name, value in found.items()})
        return metrics

    # ---- the checkpoint ---------------------------------------------------------------------------
    def collect_for_checkpoint(self) -> None:
        kept, self._evaluation_start = self._evaluation_start, None  # kept on every rank alike: the same phases and settings
        self._gathered_start = self.memory.full_state(kept) if kept is not None else None

    def state_dict(self) -> dict[str, Any]:
        if self._gathered_start is None:
            return {}
        return {EVALUATION_START: dict(zip(STATE_FIELDS, self._gathered_start, strict=True))}

    def restore_evaluation_start(self, state: Mapping[str, Any]) -> bool:
        """Put the table a checkpoint's ``state_dict`` kept back (one process, every vertex's row) as
        the state the run's validation started from; False when the checkpoint kept none."""
        saved = state.get(EVALUATION_START)
        if not saved:
            return False
        table = self.memory.table
        current = table.snapshot()
        if set(saved) != set(STATE_FIELDS) or any(
            tuple(saved[name].shape) != tuple(now.shape) for name, now in zip(STATE_FIELDS, current, strict=True)
        ):
            raise ConfigError("the checkpoint's node memory does not fit the table its config.yaml builds")
        table.restore(tuple(saved[name] for name in STATE_FIELDS))
        self._position = "train"
        return True
