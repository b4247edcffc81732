"""DistDy's synthetic dynamic graphs (its table 2): uniform random graphs whose features and edges change.

Every node exists in every snapshot. Edges are drawn uniformly at random, ``3``, ``10`` or ``20``
per node (``density`` sparse, medium, dense); the hot-node variant (``hot_fraction=0.1``, the paper's
Ex graphs) draws edge ends ``hot_weight`` times more often from a fixed 10% of the nodes. Features
are binary (128 columns by default). Between snapshots a ``feature_change`` share of the nodes
redraw one of their feature segments (``segments`` of them: what DistDy's additive storage keeps)
and an ``edge_change`` share of the edges is replaced by new random ones.

Targets (the paper does not state its task; dygsched's last-snapshot regression): a node's target
is ``tanh`` of its own and its in-neighbours' mean projected features, plus noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dygsched.data.sorted_keys import sorted_unique
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError

DENSITIES = {"sparse": 3, "medium": 10, "dense": 20}


@dataclass(frozen=True)
class UniformDynamicSource:
    num_nodes: int = 10_000
    density: str = "sparse"
    hot_fraction: float = 0.0
    hot_weight: float = 10.0
    feature_dim: int = 128
    feature_change: float = 0.3
    edge_change: float = 0.3
    segments: int = 4
    num_snapshots: int = 12
    noise: float = 0.05
    seed: int = 0
    name: str = "uniform"

    def _check(self) -> None:
        if self.num_nodes < 2:
            raise DataError(f"uniform: num_nodes must be at least 2, got {self.num_nodes}")
        if self.density not in DENSITIES:
            raise DataError(f"uniform: unknown density '{self.density}' (choose from {', '.join(DENSITIES)})")
        for name in ("hot_fraction", "feature_change", "edge_change"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise DataError(f"uniform: {name} must lie in [0, 1], got {getattr(self, name)}")
        if self.hot_weight < 1.0 or self.feature_dim < 1 or not 1 <= self.segments <= self.feature_dim:
            raise DataError("uniform: hot_weight must be at least 1, and segments between 1 and feature_dim")
        if self.num_snapshots < 2:
            raise DataError(f"uniform: num_snapshots must be at least 2, got {self.num_snapshots}")

    def load(self) -> TemporalGraph:
        self._check()
        rng = np.random.default_rng(self.seed)
        n, width = self.num_nodes, self.feature_dim
        weights = np.ones(n)
        hot = rng.choice(n, size=int(round(self.hot_fraction * n)), replace=False)
        weights[hot] = self.hot_weight
        weights /= weights.sum()
        m = DENSITIES[self.density] * n

        def draw(count: int) -> np.ndarray:
            return np.stack([rng.choice(n, count, p=weights), rng.choice(n, count, p=weights)])

        edges = draw(m)
        x = rng.integers(0, 2, (n, width)).astype(np.float32)
        bounds = np.linspace(0, width, self.segments + 1).round().astype(int)
        own, neighbours = rng.normal(0, 1 / np.sqrt(width), width), rng.normal(0, 1 / np.sqrt(width), width)
        snapshots = []
        for t in range(self.num_snapshots):
            if t:
                x = x.copy()
                changing = rng.choice(n, int(round(self.feature_change * n)), replace=False)
                segment = rng.integers(0, self.segments, changing.size)
                for s in range(self.segments):
                    rows = changing[segment == s]
                    x[rows, bounds[s] : bounds[s + 1]] = rng.integers(0, 2, (rows.size, bounds[s + 1] - bounds[s]))
                replaced = rng.choice(m, int(round(self.edge_change * m)), replace=False)
                edges = edges.copy()
                edges[:, replaced] = draw(replaced.size)
            keys = sorted_unique(edges[0] * n + edges[1])
            src, dst = keys // n, keys % n
            keep = src != dst
            src, dst = src[keep], dst[keep]
            degree = np.bincount(dst, minlength=n)
            mean = np.bincount(dst, weights=(x @ neighbours)[src], minlength=n) / np.maximum(degree, 1)
            y = np.tanh(x @ own + mean) + rng.normal(0, self.noise, n)
            snapshots.append(
                Snapshot(
                    edge_index=torch.from_numpy(np.stack([src, dst])),
                    edge_weight=torch.ones(src.size),
                    x=torch.from_numpy(x),
                    y=torch.from_numpy(y.astype(np.float32)),
                    node_mask=torch.ones(n, dtype=torch.bool),
                )
            )
        return TemporalGraph(self.name, tuple(snapshots), Task.REGRESSION)
