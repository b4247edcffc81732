"""Evaluation's negative edges as DyGLib defines them (Yu et al. 2023, after Poursafaei et al. 2022).

``eval.negatives`` names the samplers; each is one rule for the negatives of a validation or test
batch whose events span the times ``[t0, t1]``:

* ``random``: the event's own source with a uniformly random destination: from all nodes
  (``eval.negative_pool=all``, TGL's rule, ``negative_destinations``) or from the stream's distinct
  destinations (``destinations``, DyGLib's ``random``, harder on a bipartite stream, where a node of
  the wrong side is an easy negative).
* ``historical``: whole edges ``(u', v')`` drawn without replacement from the edges that occur
  before ``t0`` and not within ``[t0, t1]`` (in the whole stream, not only the batch's events).
* ``inductive``: the same, restricted to edges not observed before the phase: for validation,
  none of their occurrences at or before the last training event's time; for test, at or before the
  last validation event's time (DyGLib's ``last_observed_time``: the training data's last time for
  its validation sampler, the validation data's for its test sampler). One occurrence before
  ``t0``, none within ``[t0, t1]``.

Where a pool holds fewer edges than the batch needs, every pool edge is taken and the remainder is
random: a uniform source among the stream's distinct sources and a uniform destination among its
distinct destinations, redrawn while the pair is one of the batch's positive edges (DyGLib's
collision check). ``eval.random_share`` (default 0, DyGLib's and Poursafaei et al.'s code) draws
that share of every batch at random even when the pool is large: 0.5 is TGB's half-historical,
half-random mix. The draws are seeded by (seed, phase, sampler, global batch) and made from the
global batch's events, so every rank count draws the same negatives; each rank takes its slice.

Departures from DyGLib, all on the random remainder: pairs are drawn with replacement (DyGLib draws
without replacement from the full product of sources and destinations, which it materialises), and
a collision is redrawn a bounded number of times (a batch whose edges cover every pair keeps one).
"""

from __future__ import annotations

import numpy as np
import torch

from dygsched.data.event_batches import NEW_NODE_PASSES, PHASE_CODES, negative_destinations
from dygsched.data.events import EventStream
from dygsched.errors import ConfigError

SAMPLERS = ("random", "historical", "inductive")
POOLS = ("all", "destinations")
SAMPLER_CODES = {name: code for code, name in enumerate(SAMPLERS)}
REDRAWS = 8  # rounds of redrawing random pairs that collide with a positive edge of the batch


def sampler_names(value: object) -> tuple[str, ...]:
    """``eval.negatives`` as a tuple of sampler names: a name, ``a,b`` or a list; unknown names refused."""
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]
    names = tuple(str(item).strip() for item in items if str(item).strip())
    unknown = [name for name in names if name not in SAMPLERS]
    if unknown or not names:
        raise ConfigError(f"eval.negatives must name samplers among {', '.join(SAMPLERS)}, got {value!r}")
    if len(set(names)) != len(names):
        raise ConfigError(f"eval.negatives names a sampler twice: {value!r}")
    return names


class NegativeEdges:
    """A stream's edge history and the seeded draws of each sampler (see the module docstring)."""

    def __init__(
        self,
        stream: EventStream,
        train_last_time: float,
        pool: str = "all",
        random_share: float = 0.0,
        val_last_time: float | None = None,
    ) -> None:
        if pool not in POOLS:
            raise ConfigError(f"eval.negative_pool must be one of {', '.join(POOLS)}, got {pool!r}")
        if not 0.0 <= random_share <= 1.0:
            raise ConfigError(f"eval.random_share must be in [0, 1], got {random_share}")
        self.num_nodes, self.pool, self.random_share = stream.num_nodes, pool, random_share
        src, dst = stream.src.numpy().astype(np.int64), stream.dst.numpy().astype(np.int64)
        self.t = stream.t.double().numpy()
        self.event_keys = src * self.num_nodes + dst
        keys, first_event = np.unique(self.event_keys, return_index=True)
        order = np.argsort(first_event, kind="stable")  # distinct edges in order of first occurrence
        self.keys_by_first, self.first_time = keys[order], self.t[first_event[order]]
        self.train_last_time = float(train_last_time)
        # what each phase's inductive pool counts as observed: validation, training; test, training and
        # validation (DyGLib's test sampler takes the validation data's last time); None: training's
        self.observed_until = {
            "train": self.train_last_time,
            "val": self.train_last_time,
            "test": self.train_last_time if val_last_time is None else float(val_last_time),
        }
        for phase, new_node_pass in NEW_NODE_PASSES.items():  # a new-node pass observes what its phase does
            self.observed_until[new_node_pass] = self.observed_until[phase]
        self.sources, self.destinations = np.unique(src), np.unique(dst)

    # ---- the pools ---------------------------------------------------------------------------------
    def edges_after_training(self) -> int:
        """How many distinct edges are first seen after training (the inductive sampler's candidates)."""
        return int((self.first_time > self.train_last_time).sum())

    def window_edges(self, t0: float, t1: float) -> np.ndarray:
        """The distinct edges of every event with a time in ``[t0, t1]`` (sorted keys)."""
        a, b = np.searchsorted(self.t, t0, side="left"), np.searchsorted(self.t, t1, side="right")
        return np.unique(self.event_keys[a:b])

    def pool_of(self, sampler: str, t0: float, t1: float, phase: str = "val") -> np.ndarray:
        """The sorted edge keys ``u * num_nodes + v`` ``sampler`` draws from for a ``phase`` batch spanning ``[t0, t1]``."""
        before = self.keys_by_first[: np.searchsorted(self.first_time, t0, side="left")]
        if sampler == "inductive":
            before = before[self.first_time[: before.size] > self.observed_until[phase]]
        elif sampler != "historical":
            raise ValueError(sampler)
        return np.setdiff1d(before, self.window_edges(t0, t1))

    # ---- the draws ---------------------------------------------------------------------------------
    def draw(
        self,
        sampler: str,
        seed: int,
        phase: str,
        global_batch: int,
        src: torch.Tensor,
        dst: torch.Tensor,
        t0: float,
        t1: float,
        per_event: int,
    ) -> tuple[torch.Tensor | None, torch.Tensor]:
        """The negatives of one global batch of events ``src -> dst`` spanning ``[t0, t1]``: sources
        (None: each event's own source) and destinations, each ``[per_event, count]``."""
        count = int(src.numel())
        if sampler == "random":
            if self.pool == "all":
                return None, negative_destinations(seed, phase, 0, global_batch, count, self.num_nodes, per_event)
            index = negative_destinations(seed, phase, 0, global_batch, count, int(self.destinations.size), per_event)
            return None, torch.from_numpy(self.destinations[index.numpy()])
        size = per_event * count
        generator = np.random.default_rng(
            np.random.SeedSequence([int(seed), PHASE_CODES[phase], SAMPLER_CODES[sampler], int(global_batch)])
        )
        pool = self.pool_of(sampler, t0, t1, phase)
        from_pool = min(size - int(self.random_share * size), pool.size)
        chosen = pool[np.sort(generator.choice(pool.size, size=from_pool, replace=False))] if from_pool else pool[:0]
        batch_keys = np.unique(src.numpy().astype(np.int64) * self.num_nodes + dst.numpy().astype(np.int64))
        keys = np.concatenate([chosen, self._random_pairs(generator, size - from_pool, batch_keys)])
        keys = keys[generator.permutation(size)]
        view = (per_event, count)
        return torch.from_numpy(keys // self.num_nodes).view(view), torch.from_numpy(keys % self.num_nodes).view(view)

    def _random_pairs(self, generator: np.random.Generator, size: int, batch_keys: np.ndarray) -> np.ndarray:
        """``size`` uniform (source, destination) keys, redrawn while they are one of ``batch_keys``."""
        keys = self._pairs(generator, size)
        for _ in range(REDRAWS):
            clash = np.isin(keys, batch_keys)
            if not clash.any():
                break
            keys[clash] = self._pairs(generator, int(clash.sum()))
        return keys

    def _pairs(self, generator: np.random.Generator, size: int) -> np.ndarray:
        u = self.sources[generator.integers(0, self.sources.size, size)]
        v = self.destinations[generator.integers(0, self.destinations.size, size)]
        return u * self.num_nodes + v
