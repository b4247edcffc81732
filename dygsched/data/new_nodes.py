"""Transductive and inductive link prediction on an event stream: DyGLib's new-node split.

DyGLib (Yu et al., NeurIPS'23), after TGN, hides some nodes from training to test models on
nodes they have never seen: ``fraction x N`` nodes (``N``: every node of the stream) are drawn
at random from the nodes of the validation and test events, and every training event that
touches one of them is dropped. The *new* nodes are then every node without a kept training
event (the hidden ones and those that first appear after training). Evaluation reports all
validation and test events (transductive) and, apart, the events with at least one new endpoint
(inductive).

Here the dropped events are gone from training entirely (steps, memory writes and the
neighbours training samples); validation and test read the whole stream, as DyGLib's evaluation
does with its full neighbour sampler. The draw is seeded apart from the run's seed
(``NEW_NODE_SEED``, DyGLib's 2020), so every seed and every strategy evaluates the same split.

``split.new_nodes_draw`` says how the hidden nodes are drawn: ``ours`` (the default) takes
``round(fraction x N)`` of them with numpy's generator; ``dyglib`` takes ``int(fraction x N)`` with
Python's ``random`` seeded 2020, over the set of the later events' node ids as the stream's file
numbers them (its ``node_ids``), in the order Python's ``set`` iterates them, which is DyGLib's own
draw wherever the file's ids are DyGLib's (CollegeMsg's are: 1 to 1,899). The two draws hide
different nodes; docs/measurements.md measures what that moves.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import torch

from dygsched.data.events import EventSplit, EventStream
from dygsched.errors import ConfigError

NEW_NODE_SEED = 2020
NEW_NODE_DRAWS = ("ours", "dyglib")  # split.new_nodes_draw


@dataclass(frozen=True)
class NewNodeSplit:
    """``train_events``: the stream indices training reads (increasing); ``hidden``: the nodes
    drawn out of training; ``new``: a bool per node, True where no kept training event touches it."""

    train_events: torch.Tensor
    hidden: torch.Tensor
    new: torch.Tensor

    @property
    def drops_events(self) -> bool:
        return bool(self.hidden.numel())

    def inductive(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """True for each event with at least one new endpoint."""
        return self.new[src] | self.new[dst]


def new_node_split(stream: EventStream, split: EventSplit, fraction: float, draw: str = "ours") -> NewNodeSplit:
    """Hide ``fraction`` of the nodes, drawn among those of the validation and test events, from
    training (``fraction = 0``: none; the new nodes are then those that first appear after training);
    ``draw``: how they are drawn (see the module docstring)."""
    if not 0.0 <= fraction < 1.0:
        raise ConfigError(f"split.new_nodes must be in [0, 1), got {fraction}")
    if draw not in NEW_NODE_DRAWS:
        raise ConfigError(f"split.new_nodes_draw must be one of {', '.join(NEW_NODE_DRAWS)}, got {draw!r}")
    train_start, train_stop = split.train
    later = torch.unique(torch.cat([stream.src[train_stop:], stream.dst[train_stop:]]))
    count = int(round(fraction * stream.num_nodes)) if draw == "ours" else int(fraction * stream.num_nodes)
    if count > later.numel():
        raise ConfigError(
            f"split.new_nodes={fraction} hides {count} nodes, but the validation and test events touch only {later.numel()}"
        )
    hidden = _drawn(stream, train_stop, later, count) if draw == "dyglib" else _ours(later, count)
    is_hidden = torch.zeros(stream.num_nodes, dtype=torch.bool)
    is_hidden[hidden] = True
    src, dst = stream.src[train_start:train_stop], stream.dst[train_start:train_stop]
    kept = ~(is_hidden[src] | is_hidden[dst])
    if not bool(kept.any()):
        raise ConfigError(f"split.new_nodes={fraction} leaves no training event")
    new = torch.ones(stream.num_nodes, dtype=torch.bool)
    new[src[kept]] = False
    new[dst[kept]] = False
    train_events = torch.arange(train_start, train_stop)[kept]
    return NewNodeSplit(train_events, hidden, new)


def _ours(later: torch.Tensor, count: int) -> torch.Tensor:
    generator = np.random.default_rng(NEW_NODE_SEED)
    return later[torch.from_numpy(np.sort(generator.choice(later.numel(), size=count, replace=False)))]


def _drawn(stream: EventStream, train_stop: int, later: torch.Tensor, count: int) -> torch.Tensor:
    """DyGLib's draw: Python's ``random`` seeded 2020 samples ``count`` ids from the set of the later
    events' source ids joined with their destination ids (the file's numbering), as a tuple in the
    set's own order; the ids are mapped back to the stream's nodes."""
    file_ids = stream.node_ids if stream.node_ids is not None else torch.arange(stream.num_nodes)
    sources, destinations = file_ids[stream.src[train_stop:]].tolist(), file_ids[stream.dst[train_stop:]].tolist()
    population = tuple(set(sources).union(set(destinations)))
    chosen = torch.tensor(sorted(random.Random(NEW_NODE_SEED).sample(population, count)), dtype=torch.int64)
    node_of = {int(file_id): node for node, file_id in enumerate(file_ids.tolist())}
    hidden = torch.tensor(sorted(node_of[int(i)] for i in chosen.tolist()), dtype=torch.int64)
    assert bool(torch.isin(hidden, later).all())
    return hidden
