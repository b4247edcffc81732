"""REAL appendix B on the device: timed aggregations, diff-map workloads and the per-snapshot path choice."""

from __future__ import annotations

import math

import pytest
import torch

from dygsched.data.diffmap import coalesce, diff_snapshots, diff_workload
from dygsched.data.temporal_graph import Snapshot
from dygsched.engine.snapshot_groups.aggregation_timing import (
    chain_steps,
    choose_paths,
    fit_conv_cost_curve,
    fit_projection_cost_on,
)
from dygsched.planner.aggregation_cost import DIFF_MESSAGE_COST, ChainStep, ConvCostCurve


def test_fit_conv_cost_curve_times_real_aggregations() -> None:
    curve = fit_conv_cost_curve("cpu", sizes=((200, 1.0), (200, 4.0), (800, 1.0), (800, 4.0), (400, 2.0)), width=4, repeats=1)
    assert all(math.isfinite(getattr(curve, name)) for name in ("a0", "a1", "a2", "a3"))


def _chain() -> tuple[Snapshot, Snapshot]:
    n = 6
    x = torch.zeros(n, 1)
    mask = torch.ones(n, dtype=torch.bool)
    a = torch.tensor([[0, 0, 1, 2, 3, 4], [1, 2, 2, 3, 4, 5]])
    b = torch.tensor([[0, 0, 1, 2, 3, 5], [1, 2, 2, 3, 4, 0]])  # 4 -> 5 removed, 5 -> 0 added
    return (
        Snapshot(a, torch.ones(6), x, torch.zeros(n), mask),
        Snapshot(b, torch.ones(6), x, torch.zeros(n), mask),
    )


def test_diff_workload_counts_the_exact_gcn_update() -> None:
    prev, curr = _chain()
    first = coalesce(prev.edge_index, prev.edge_weight, 6)
    diff = diff_snapshots(prev, curr)
    assert diff.touched_nodes.tolist() == [0, 5]
    # out-edges of 0 and 5 in the first graph (0->1, 0->2), 2 changed edges, 2 self-loop terms;
    # rows: 1, 2 (re-weighted), 5 (removed), 0 (added), and the self-loops of 0 and 5
    assert diff_workload(first, diff, "gcn") == (4, 2 + 2 + 2)
    assert diff_workload(first, diff, "gat") == (2, 2)
    with pytest.raises(ValueError, match="unknown conv kind"):
        diff_workload(first, diff, "sage")


def test_choose_paths_follows_the_curve() -> None:
    prev, curr = _chain()
    first = coalesce(prev.edge_index, prev.edge_weight, 6)
    diffs = [diff_snapshots(prev, curr), diff_snapshots(curr, curr)]
    per_node = ConvCostCurve(a0=1.0, a1=0.0, a2=0.0, a3=0.0)  # cost grows with rows: the curve prefers the diff
    # ... but its 6 messages cost as much as the full graph's 12 (DIFF_MESSAGE_COST = 2): full
    assert DIFF_MESSAGE_COST * 6 >= 12
    assert choose_paths(per_node, first, diffs) == ["full", "diff"]
    # Cost dominated by sparsity (a2 / d): the full graph (d = 2) beats the diff (d = 1.5);
    # an empty diff costs nothing.
    sparse_penalty = ConvCostCurve(a0=0.0, a1=0.0, a2=10.0, a3=0.0)
    assert choose_paths(sparse_penalty, first, diffs) == ["full", "diff"]


def test_fit_projection_cost_times_real_projections() -> None:
    # 4 M against 400 M multiply-adds (tens of milliseconds, not microseconds), the median of 5: the
    # larger must time longer even on a busy machine, where sizes of microseconds swapped places
    cost = fit_projection_cost_on("cpu", 64, 64, rows=(1000, 100000), repeats=5)
    assert cost.per_mac > 0 and cost.predict(50000, 64, 64) > cost.predict(1000, 64, 64)


def test_chain_steps_are_the_first_graph_whole_then_each_diffs_workload() -> None:
    prev, curr = _chain()
    first = coalesce(prev.edge_index, prev.edge_weight, 6)
    diff = diff_snapshots(prev, curr)
    whole = ChainStep(True, 6, 6 + 6, 6)  # 6 edges and 6 self-loops
    assert chain_steps(first, [diff, diff], ["diff", "full"]) == [whole, ChainStep(False, 4, 6, 0), whole]
