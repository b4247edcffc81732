"""REAL appendix B on this device: time the chains' aggregation kernel, fit the cost curve, and
pick the full graph or the diff map for each snapshot of a chain."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

from dygsched.data.diffmap import DiffMap, EdgeSet, diff_workload
from dygsched.models.incremental import spmm
from dygsched.sched.aggregation_cost import ConvCostCurve, choose_path, fit_cost_curve

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
    spmm(dst, src, weight, x, num_nodes)  # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        spmm(dst, src, weight, x, num_nodes)
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


def choose_paths(curve: ConvCostCurve, first: EdgeSet, diffs: Sequence[DiffMap], kind: str = "gcn") -> list[str]:
    """``"full"`` or ``"diff"`` per diff map of a chain (``choose_path``), its workloads measured on
    the chain's first graph throughout (an estimate: later graphs differ by the diffs)."""
    n = first.num_nodes
    full_messages = first.num_edges + n
    paths = []
    for diff in diffs:
        if diff.is_full:  # kept whole: there are no edge changes to apply
            paths.append("full")
            continue
        rows, messages = diff_workload(first, diff, kind)
        paths.append(choose_path(curve, n, full_messages, rows, messages))
    return paths
