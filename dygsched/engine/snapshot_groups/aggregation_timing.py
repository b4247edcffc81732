"""REAL appendix B on this device: time the chains' aggregation kernel, fit the cost curve, and
pick the full graph or the diff map for each snapshot of a chain; time the projection too, so
the order of a chain's projection and aggregation (REAL 4.1.2's two cases) is chosen from the
same curves."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import torch

from dygsched.data.diffmap import DiffMap, EdgeSet, diff_workload
from dygsched.engine.timing import timed
from dygsched.models.incremental_kernels import spmm
from dygsched.planner.aggregation_cost import (
    ChainStep,
    ConvCostCurve,
    OrderCosts,
    ProjectionCost,
    choose_path,
    fit_cost_curve,
    fit_projection_cost,
)

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


def _timed(device: torch.device, fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls after one warm-up (on a GPU: CUDA events
    around each call on the current stream, read after the last; ``dygsched.engine.timing``)."""
    fn()  # warm-up
    regions = []
    for _ in range(repeats):
        with timed(device) as region:
            fn()
        regions.append(region)
    return float(np.median([region.seconds for region in regions]))


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
    return _timed(device, lambda: spmm(dst, src, weight, x, num_nodes), repeats)


def fit_conv_cost_curve(
    device: torch.device | str,
    sizes: Sequence[tuple[int, float]] = DEFAULT_SIZES,
    width: int = 32,
    repeats: int = 3,
) -> ConvCostCurve:
    """Time the aggregation on random graphs of the given ``(num_nodes, avg_degree)`` and fit the curve."""
    seconds = [time_aggregation(device, n, d, width, repeats, seed=i) for i, (n, d) in enumerate(sizes)]
    return fit_cost_curve([n for n, _ in sizes], [d for _, d in sizes], seconds)


PROJECTION_ROWS: tuple[int, ...] = (2_000, 8_000, 32_000)


def fit_projection_cost_on(
    device: torch.device | str, in_width: int, out_width: int, rows: Sequence[int] = PROJECTION_ROWS, repeats: int = 3
) -> ProjectionCost:
    """Time ``x @ W^T`` (``[rows, in_width] -> [rows, out_width]``) at a few row counts and fit
    ``ProjectionCost``, the other half of a convolution's cost next to the aggregation curve."""
    device = torch.device(device)
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(out_width, in_width, generator=gen).to(device)
    seconds = []
    for n in rows:
        x = torch.randn(n, in_width, generator=gen).to(device)
        seconds.append(_timed(device, functools.partial(torch.nn.functional.linear, x, weight), repeats))
    return fit_projection_cost([n * in_width * out_width for n in rows], seconds)


def fit_order_costs(device: torch.device | str, in_width: int, out_width: int) -> OrderCosts:
    """The aggregation curve at both widths a reorderable convolution can aggregate, and its
    projection's cost, timed on ``device``."""
    curves = {width: fit_conv_cost_curve(device, width=width) for width in sorted({in_width, out_width})}
    return OrderCosts(curves, fit_projection_cost_on(device, in_width, out_width), in_width, out_width)


def chain_steps(first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str], kind: str = "gcn") -> list[ChainStep]:
    """A chain's snapshots as ``ChainStep``s: the first whole, then each diff map's workload on
    the chain's first graph (``diff_workload``), or whole where its path is ``"full"``."""
    n = first.num_nodes
    whole = ChainStep(True, n, first.num_edges + n, n)
    steps = [whole]
    for diff, path in zip(diffs, paths, strict=True):
        if diff.is_full or path == "full":
            steps.append(whole)
            continue
        rows, messages = diff_workload(first, diff, kind)
        steps.append(ChainStep(False, rows, messages, int(diff.changed_nodes.numel())))
    return steps


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
