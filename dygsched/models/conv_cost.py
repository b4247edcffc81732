"""REAL appendix B: a fitted cost curve for graph aggregation, and the per-snapshot path choice.

Aggregation time is U-shaped in the average degree, so a diff map with few edges is not always
cheaper than the full graph. ``fit_conv_cost_curve`` times the aggregation kernel the incremental
chains use on a few random graphs and fits ``T(N, d) = a0 N + a1 d + a2 / d + a3``;
``choose_paths`` compares, per snapshot, the predicted time of aggregating the full graph with
that of the incremental update.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models.incremental import out_edge_positions, spmm

DEFAULT_SIZES: tuple[tuple[int, float], ...] = (
    (2_000, 1.0),
    (2_000, 4.0),
    (2_000, 16.0),
    (8_000, 1.0),
    (8_000, 4.0),
    (8_000, 16.0),
    (32_000, 2.0),
    (32_000, 8.0),
)


@dataclass(frozen=True)
class ConvCostCurve:
    """``T(N, d) = a0 * N + a1 * d + a2 / d + a3`` seconds for ``N`` rows of average degree ``d``."""

    a0: float
    a1: float
    a2: float
    a3: float

    def predict(self, num_nodes: float, avg_degree: float) -> float:
        d = max(float(avg_degree), 1e-3)
        return self.a0 * num_nodes + self.a1 * d + self.a2 / d + self.a3


def fit_cost_curve(num_nodes: Sequence[float], avg_degree: Sequence[float], seconds: Sequence[float]) -> ConvCostCurve:
    """Least-squares fit of ``ConvCostCurve`` to measured ``seconds`` (at least 4 distinct points)."""
    n = np.asarray(num_nodes, dtype=np.float64)
    d = np.asarray(avg_degree, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    if not n.shape == d.shape == t.shape or n.ndim != 1:
        raise ValueError("num_nodes, avg_degree and seconds must be 1-D sequences of one length")
    if (d <= 0).any():
        raise ValueError("average degrees must be positive")
    design = np.stack([n, d, 1.0 / d, np.ones_like(n)], axis=1)
    if np.linalg.matrix_rank(design) < 4:
        raise ValueError(f"cannot fit 4 coefficients to {len(t)} timings: vary both the node count and the degree")
    coef, *_ = np.linalg.lstsq(design, t, rcond=None)
    return ConvCostCurve(*(float(c) for c in coef))


def _aggregate(x: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return spmm(dst, src, weight, x, x.size(0))


def time_aggregation(
    device: torch.device | str, num_nodes: int, avg_degree: float, width: int = 32, repeats: int = 3, seed: int = 0
) -> float:
    """Median seconds of one weighted aggregation on a random graph (``spmm``, the chains' kernel)."""
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    num_edges = max(1, round(num_nodes * avg_degree))
    src = torch.randint(num_nodes, (num_edges,), generator=gen).to(device)
    dst = torch.randint(num_nodes, (num_edges,), generator=gen).to(device)
    weight = torch.rand(num_edges, generator=gen).to(device)
    x = torch.randn(num_nodes, width, generator=gen).to(device)
    _aggregate(x, src, dst, weight)  # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        _aggregate(x, src, dst, weight)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def fit_conv_cost_curve(
    device: torch.device | str,
    sizes: Sequence[tuple[int, float]] = DEFAULT_SIZES,
    width: int = 32,
    repeats: int = 3,
) -> ConvCostCurve:
    """Time the aggregation on random graphs of the given ``(num_nodes, avg_degree)`` and fit the curve."""
    seconds = [time_aggregation(device, n, d, width, repeats, seed=i) for i, (n, d) in enumerate(sizes)]
    return fit_cost_curve([n for n, _ in sizes], [d for _, d in sizes], seconds)


# Work per message of an incremental step relative to a full aggregation's: 2.2x measured on CPU
# (60k nodes, 128 features, TGCN's 192-wide conv: 0.66 s for 326k messages against 0.32 s for 351k).
DIFF_MESSAGE_COST = 2.0


def diff_workload(first: EdgeSet, diff: DiffMap, kind: str = "gcn") -> tuple[int, int]:
    """``(rows, messages)`` of one incremental step, estimated on the chain's first graph.

    ``kind="gcn"`` (also for ``gcn_aggregate``): the added and removed edges, the out-edges of
    every touched node (its degree, hence its normalisation, changes) and of every changed
    feature row, and one self-loop term each. ``kind="gat"``: the added and removed edges, and
    twice the out-edges of the changed feature rows.
    """
    n = first.num_nodes
    changed = diff.changed_nodes.to(first.device)
    if kind in ("gcn", "gcn_aggregate"):
        sources = torch.unique(torch.cat([diff.touched_nodes.to(first.device), changed]))
        repeat = 1
    elif kind == "gat":
        sources, repeat = changed, 2
    else:
        raise ValueError(f"unknown conv kind {kind!r} (choose from gcn, gcn_aggregate, gat)")
    pos, _ = out_edge_positions(first.keys, sources, n)
    targets = torch.cat(
        [
            torch.remainder(first.keys[pos], n),
            torch.remainder(diff.added_keys.to(first.device), n),
            torch.remainder(diff.removed_keys.to(first.device), n),
            sources,
        ]
    )
    hit = torch.zeros(n, dtype=torch.bool, device=first.device)
    hit[targets] = True
    messages = repeat * pos.numel() + diff.num_changed_edges + (sources.numel() if repeat == 1 else 0)
    return int(hit.sum()), int(messages)


def choose_paths(curve: ConvCostCurve, first: EdgeSet, diffs: Sequence[DiffMap], kind: str = "gcn") -> list[str]:
    """``"full"`` or ``"diff"`` per diff map: whichever ``curve`` predicts faster.

    Full: ``N`` rows of average degree ``(E + N) / N`` (self-loops included). Diff: the rows the
    update touches, with ``messages / rows`` (see ``diff_workload``). The graph is the chain's
    first one throughout (an estimate; later graphs differ by the diffs).
    """
    n = first.num_nodes
    full_messages = first.num_edges + n
    full = curve.predict(n, full_messages / n)
    paths = []
    for diff in diffs:
        if diff.is_full:  # kept whole: there are no edge changes to apply
            paths.append("full")
            continue
        rows, messages = diff_workload(first, diff, kind)
        incremental = curve.predict(rows, messages / max(rows, 1)) if rows else 0.0
        # the incremental update also pays index work per message that the full path does not
        # (signed coefficients, old and new rows, rescaling), so its messages must be fewer by
        # that factor too: a growing graph's diffs can carry nearly as many messages as its edges
        paths.append("diff" if incremental <= full and DIFF_MESSAGE_COST * messages < full_messages else "full")
    return paths
