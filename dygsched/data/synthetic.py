"""A deterministic generator of evolving graphs shaped like the papers' datasets.

Edges evolve snapshot by snapshot: a fraction ``change_rate`` of the previous snapshot's edges
is deleted and replaced, and the total follows a growth trend. ``growth="stackoverflow"`` makes
nodes and edges grow steadily with small fluctuations (DyGNeX appendix E, figure 10);
``growth="arxiv"`` keeps every node present and grows only the edges (the Arxiv curve);
``growth="none"`` keeps both flat. ``fluctuation`` is the relative standard deviation of the
per-snapshot edge count around the trend (0.02 by default; ``+experiment=epoch_time`` sets 0.3,
whose groups differ in edges about as much as DyGNeX figure 1's: docs/data.md). Destinations are
drawn with a power-law popularity, so node degrees are skewed like real graphs'.

Targets are learnable from the structure and from time: a node's target at snapshot ``t`` is
``tanh(m_t + 0.5 m_{t-1})`` plus noise, where ``m_t`` is the mean over its in-neighbours at
``t`` of a fixed random projection of their features. Regression predicts that value; the
classification task predicts its quantile bucket.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dygsched.data.memory_budget import check_fits
from dygsched.data.sorted_keys import sorted_unique
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError

GROWTH_TRENDS = ("stackoverflow", "arxiv", "none")


def growth_curve(
    trend: str, num_snapshots: int, rng: np.random.Generator, fluctuation: float = 0.02
) -> tuple[np.ndarray, np.ndarray]:
    """Fractions of the final node and edge counts present at each snapshot; the edge count
    fluctuates around its trend with relative standard deviation ``fluctuation``."""
    progress = np.linspace(0.0, 1.0, num_snapshots)
    if trend == "none":
        ones = np.ones(num_snapshots)
        return ones, ones
    # Steady growth with a faster middle phase and, by default, a few percent of fluctuation, as
    # figure 10 shows. normal(0, s) is s times a standard normal draw: the default 0.02 draws the same
    # graphs as before the setting existed, and another value only scales the same draws.
    edges = 0.45 + 0.55 * (0.7 * progress + 0.3 * progress**2) + rng.normal(0.0, fluctuation, num_snapshots)
    edges = np.clip(edges / edges.max(), 0.05, 1.0)
    if trend == "arxiv":
        return np.ones(num_snapshots), edges
    nodes = np.clip(0.55 + 0.45 * progress + rng.normal(0.0, 0.01, num_snapshots), 0.05, 1.0)
    return nodes / nodes.max(), edges


@dataclass(frozen=True)
class SyntheticSource:
    num_nodes: int = 400
    avg_degree: float = 6.0
    num_snapshots: int = 24
    change_rate: float = 0.1
    growth: str = "stackoverflow"
    feature_dim: int = 16
    task: str = "regression"
    num_classes: int = 4
    noise: float = 0.05
    seed: int = 0
    name: str = "synthetic"
    fluctuation: float = 0.02  # relative standard deviation of the per-snapshot edge count around its trend

    def _check(self) -> None:
        if self.num_nodes < 2:
            raise DataError(f"synthetic: num_nodes must be at least 2, got {self.num_nodes}")
        if self.num_snapshots < 1:
            raise DataError(f"synthetic: num_snapshots must be at least 1, got {self.num_snapshots}")
        if not 0 < self.avg_degree < self.num_nodes:
            raise DataError(f"synthetic: avg_degree must be in (0, num_nodes), got {self.avg_degree}")
        if not 0 <= self.change_rate <= 1:
            raise DataError(f"synthetic: change_rate must be in [0, 1], got {self.change_rate}")
        if isinstance(self.fluctuation, bool) or not isinstance(self.fluctuation, (int, float)) or not 0 <= self.fluctuation <= 1:
            raise DataError(f"synthetic: fluctuation must be a number in [0, 1], got {self.fluctuation!r}")
        if self.growth not in GROWTH_TRENDS:
            raise DataError(f"synthetic: unknown growth trend '{self.growth}' (choose from {', '.join(GROWTH_TRENDS)})")
        if self.feature_dim < 1:
            raise DataError(f"synthetic: feature_dim must be at least 1, got {self.feature_dim}")
        if self.task not in (Task.REGRESSION.value, Task.CLASSIFICATION.value):
            raise DataError(f"synthetic: unknown task '{self.task}' (choose from regression, classification)")

    def estimated_bytes(self) -> float:
        """What ``load`` builds: the features, then per snapshot its edges (int64 pair, float weight,
        the int64 keys kept while drawing) and the per-node target, mask and working arrays."""
        n, t = self.num_nodes, self.num_snapshots
        return n * self.feature_dim * 4 + t * (self.avg_degree * n * (2 * 8 + 4 + 8) + n * (4 + 1 + 3 * 8))

    def load(self) -> TemporalGraph:
        self._check()
        check_fits(self.estimated_bytes(), f"synthetic: {self.num_snapshots} snapshots of {self.num_nodes:,} nodes")
        rng = np.random.default_rng(self.seed)
        n = self.num_nodes
        node_frac, edge_frac = growth_curve(self.growth, self.num_snapshots, rng, self.fluctuation)
        # Nodes join in a random order; node ``order[i]`` exists once ``i < active count``.
        order = rng.permutation(n)
        popularity = 1.0 / np.arange(1, n + 1) ** 0.8  # destination popularity by join rank
        features = rng.standard_normal((n, self.feature_dim)).astype(np.float32)
        projection = rng.standard_normal(self.feature_dim).astype(np.float32) / np.sqrt(self.feature_dim)
        signal = features @ projection

        x = torch.from_numpy(features)  # static node features, shared by every snapshot
        keys = np.empty(0, dtype=np.int64)
        previous_message: np.ndarray = np.zeros(n, dtype=np.float32)  # float64 from the second snapshot on
        raw_targets, masks, edge_indices = [], [], []
        for t in range(self.num_snapshots):
            active = max(2, int(round(node_frac[t] * n)))
            want = int(round(edge_frac[t] * self.avg_degree * n))
            mask = np.zeros(n, dtype=bool)
            mask[order[:active]] = True
            if keys.size:
                keep = rng.random(keys.size) >= self.change_rate
                keys = keys[keep & mask[keys // n] & mask[keys % n]]  # a node that left takes its edges with it
            keys = _add_edges(keys, want - keys.size, order[:active], popularity[:active], n, rng)
            src, dst = keys // n, keys % n
            edge_indices.append(np.stack([src, dst]))
            masks.append(mask)
            in_degree = np.bincount(dst, minlength=n)
            message = np.bincount(dst, weights=signal[src], minlength=n).astype(np.float32) / np.maximum(in_degree, 1)
            raw_targets.append(np.tanh(message + 0.5 * previous_message) + self.noise * rng.standard_normal(n).astype(np.float32))
            previous_message = message

        task = Task(self.task)
        targets = _as_targets(raw_targets, task, self.num_classes)
        snapshots = tuple(
            Snapshot(
                edge_index=torch.from_numpy(ei.astype(np.int64, copy=False)),  # already int64: no second copy of every edge
                edge_weight=torch.ones(ei.shape[1], dtype=torch.float32),
                x=x,
                y=y,
                node_mask=torch.from_numpy(mask),
            )
            for ei, y, mask in zip(edge_indices, targets, masks, strict=True)
        )
        return TemporalGraph(self.name, snapshots, task, self.num_classes if task is Task.CLASSIFICATION else 0)


def _add_edges(
    keys: np.ndarray, count: int, active: np.ndarray, popularity: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """Add ``count`` new distinct non-loop edges among ``active`` nodes to the sorted edge keys."""
    p = popularity / popularity.sum()
    target = min(keys.size + count, active.size * (active.size - 1))
    for _ in range(20):
        need = target - keys.size
        if need <= 0:
            break
        draw = int(need * 1.3) + 8
        src = active[rng.integers(0, active.size, draw)]
        dst = active[rng.choice(active.size, draw, p=p)]
        fresh = sorted_unique((src.astype(np.int64) * n + dst)[src != dst])
        if keys.size:
            at = np.minimum(np.searchsorted(keys, fresh), keys.size - 1)
            fresh = fresh[keys[at] != fresh]
        if fresh.size > need:
            fresh = np.sort(rng.choice(fresh, need, replace=False))
        keys = np.concatenate([keys, fresh])
        keys.sort(kind="stable")
    return keys


def _as_targets(raw: list[np.ndarray], task: Task, num_classes: int) -> list[torch.Tensor]:
    if task is Task.REGRESSION:
        return [torch.from_numpy(y.astype(np.float32)) for y in raw]
    if num_classes < 2:
        raise DataError(f"synthetic: classification needs num_classes >= 2, got {num_classes}")
    bins = np.quantile(np.concatenate(raw), np.linspace(0, 1, num_classes + 1)[1:-1])
    return [torch.from_numpy(np.searchsorted(bins, y).astype(np.int64)) for y in raw]
