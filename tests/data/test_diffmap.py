"""Diff maps: coalescing, exact reconstruction with apply_diff, degrees, changed rows, memory report."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dygsched.data.diffmap import (
    EdgeSet,
    _apply_on_device,
    apply_diff,
    build_diff_maps,
    coalesce,
    diff_snapshots,
    memory_report,
    out_edge_positions,
)
from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError

WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def _snapshot(num_nodes: int, edges: list[tuple[int, int, float]], x: torch.Tensor, dtype: torch.dtype) -> Snapshot:
    if edges:
        edge_index = torch.tensor([[s for s, _, _ in edges], [d for _, d, _ in edges]], dtype=torch.long)
        edge_weight = torch.tensor([w for _, _, w in edges], dtype=dtype)
    else:
        edge_index, edge_weight = torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=dtype)
    return Snapshot(edge_index, edge_weight, x, torch.zeros(num_nodes), torch.ones(num_nodes, dtype=torch.bool))


@st.composite
def snapshot_chains(
    draw: st.DrawFn, max_nodes: int = 9, max_snapshots: int = 4, dtype: torch.dtype = torch.float64, features: int | None = None
) -> list[Snapshot]:
    """Consecutive snapshots of a random multigraph: additions, deletions, weight changes,
    duplicates, self-loops, nodes that appear, disappear or become isolated, changed feature rows."""
    n = draw(st.integers(1, max_nodes))
    f = features if features is not None else draw(st.integers(1, 3))
    node = st.integers(0, n - 1)
    edge = st.tuples(node, node, st.sampled_from(WEIGHTS))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    x = torch.randn(n, f, generator=gen, dtype=dtype)
    edges = draw(st.lists(edge, max_size=25))
    snapshots = [_snapshot(n, edges, x, dtype)]
    for _ in range(draw(st.integers(0, max_snapshots - 1))):
        keep = draw(st.lists(st.booleans(), min_size=len(edges), max_size=len(edges)))
        edges = [e for e, k in zip(edges, keep, strict=True) if k]
        new_weights = draw(st.lists(st.none() | st.sampled_from(WEIGHTS), min_size=len(edges), max_size=len(edges)))
        edges = [(s, d, w if new is None else new) for (s, d, w), new in zip(edges, new_weights, strict=True)]
        isolate = set(draw(st.lists(node, max_size=2)))
        edges = [e for e in edges if e[0] not in isolate and e[1] not in isolate]
        edges += draw(st.lists(edge, max_size=8))
        if draw(st.booleans()):  # new feature rows
            rows = draw(st.lists(node, max_size=3))
            x = x.clone()
            if rows:
                x[rows] = torch.randn(len(rows), f, generator=gen, dtype=dtype)
        snapshots.append(_snapshot(n, edges, x, dtype))
    return snapshots


def edge_set_of(snapshot: Snapshot) -> EdgeSet:
    return coalesce(snapshot.edge_index, snapshot.edge_weight, snapshot.num_nodes)


def test_coalesce_sums_duplicates_and_counts_them() -> None:
    edge_index = torch.tensor([[2, 0, 2, 1, 2], [1, 1, 1, 1, 2]])
    weight = torch.tensor([1.0, 2.0, 0.5, 4.0, 3.0])
    edges = coalesce(edge_index, weight, 3)
    assert edges.keys.tolist() == [0 * 3 + 1, 1 * 3 + 1, 2 * 3 + 1, 2 * 3 + 2]
    assert edges.weights.tolist() == [2.0, 4.0, 1.5, 3.0]
    assert edges.counts.tolist() == [1, 1, 2, 1]
    assert edges.edge_index().tolist() == [[0, 1, 2, 2], [1, 1, 1, 2]]
    expanded_index, expanded_weight = edges.expanded()
    assert expanded_index.tolist() == [[0, 1, 2, 2, 2], [1, 1, 1, 1, 2]]
    assert expanded_weight.tolist() == [2.0, 4.0, 0.75, 0.75, 3.0]
    assert edges.in_degree().tolist() == [0.0, 7.5, 3.0]
    assert edges.nbytes() == 4 * 8 + 4 * 4 + 4 * 4


def test_coalesce_of_a_sorted_duplicate_free_list_equals_the_general_path() -> None:
    edge_index = torch.tensor([[0, 0, 1, 3], [1, 2, 0, 3]])
    weight = torch.tensor([1.0, 2.0, 3.0, 4.0])
    fast = coalesce(edge_index, weight, 4)
    shuffled = coalesce(edge_index[:, [3, 1, 0, 2]], weight[[3, 1, 0, 2]], 4)
    assert fast.equal(shuffled)
    assert fast.keys.data_ptr() != edge_index.data_ptr()


@settings(max_examples=40, deadline=None)
@given(snapshot_chains())
def test_apply_diff_rebuilds_every_snapshot_exactly(snapshots: list[Snapshot]) -> None:
    edges = edge_set_of(snapshots[0])
    for prev, curr in itertools.pairwise(snapshots):
        diff = diff_snapshots(prev, curr)
        old, new = edge_set_of(prev), edge_set_of(curr)
        edges = apply_diff(edges, diff)
        assert edges.equal(new)
        # added and removed are exactly the keys whose (weight, multiplicity) differ
        old_map = {k: (w, c) for k, w, c in zip(old.keys.tolist(), old.weights.tolist(), old.counts.tolist(), strict=True)}
        new_map = {k: (w, c) for k, w, c in zip(new.keys.tolist(), new.weights.tolist(), new.counts.tolist(), strict=True)}
        assert set(diff.added_keys.tolist()) == {k for k, v in new_map.items() if old_map.get(k) != v}
        assert set(diff.removed_keys.tolist()) == {k for k, v in old_map.items() if new_map.get(k) != v}
        n = curr.num_nodes
        touched = sorted({k % n for k in diff.added_keys.tolist() + diff.removed_keys.tolist()})
        assert diff.touched_nodes.tolist() == touched
        torch.testing.assert_close(diff.degree_before, old.in_degree()[diff.touched_nodes])
        torch.testing.assert_close(diff.degree_after, new.in_degree()[diff.touched_nodes])
        assert diff.num_changed_edges == len(diff.added_keys) + len(diff.removed_keys)
        # changed feature rows, and the rebuilt features
        rows = (prev.x != curr.x).any(dim=1).nonzero().flatten()
        assert diff.changed_nodes.tolist() == rows.tolist()
        rebuilt = prev.x.index_copy(0, diff.changed_nodes, diff.changed_x)
        assert torch.equal(rebuilt, curr.x)


@settings(max_examples=40, deadline=None)
@given(snapshot_chains())
def test_the_device_merge_is_the_host_merge(snapshots: list[Snapshot]) -> None:
    """``apply_diff`` on a GPU sorts (sizes the host knows, no read on the host): run here on CPU
    tensors, it rebuilds the same keys, weights and counts, exactly, as the host's merge."""
    edges = edge_set_of(snapshots[0])
    for prev, curr in itertools.pairwise(snapshots):
        diff = diff_snapshots(prev, curr)
        merged, sorted_ = apply_diff(edges, diff), _apply_on_device(edges, diff)
        assert merged.equal(sorted_) and torch.equal(merged.counts, sorted_.counts)
        assert torch.equal(merged.weights, sorted_.weights) and sorted_.counts.dtype == merged.counts.dtype
        edges = merged


def test_shared_feature_tensor_gives_no_changed_rows() -> None:
    x = torch.randn(4, 2)
    a = _snapshot(4, [(0, 1, 1.0)], x, torch.float32)
    b = _snapshot(4, [(1, 2, 1.0)], x, torch.float32)
    diff = diff_snapshots(a, b)
    assert diff.changed_nodes.numel() == 0 and diff.changed_x.shape == (0, 2)
    same_values = _snapshot(4, [(1, 2, 1.0)], x.clone(), torch.float32)
    assert diff_snapshots(a, same_values).changed_nodes.numel() == 0


def test_weight_change_is_a_removal_plus_an_addition() -> None:
    x = torch.zeros(3, 1)
    diff = diff_snapshots(
        _snapshot(3, [(0, 1, 1.0), (1, 2, 1.0)], x, torch.float32), _snapshot(3, [(0, 1, 2.0), (1, 2, 1.0)], x, torch.float32)
    )
    assert diff.added_keys.tolist() == [1] and diff.added_weights.tolist() == [2.0]
    assert diff.removed_keys.tolist() == [1] and diff.removed_weights.tolist() == [1.0]
    assert diff.touched_nodes.tolist() == [1]
    assert diff.degree_before.tolist() == [1.0] and diff.degree_after.tolist() == [2.0]


def test_mismatched_node_counts_are_a_data_error() -> None:
    a = _snapshot(3, [(0, 1, 1.0)], torch.zeros(3, 1), torch.float32)
    b = _snapshot(4, [(0, 1, 1.0)], torch.zeros(4, 1), torch.float32)
    with pytest.raises(DataError, match="same node ids, got 3 and 4 nodes"):
        diff_snapshots(a, b)
    diff = diff_snapshots(b, b)
    with pytest.raises(DataError, match="same node ids"):
        apply_diff(edge_set_of(a), diff)


def test_a_diff_applied_to_the_wrong_graph_is_a_data_error() -> None:
    x = torch.zeros(3, 1)
    diff = diff_snapshots(_snapshot(3, [(0, 1, 1.0)], x, torch.float32), _snapshot(3, [], x, torch.float32))
    with pytest.raises(DataError, match="removes edges that this edge set does not have"):
        apply_diff(edge_set_of(_snapshot(3, [(1, 2, 1.0)], x, torch.float32)), diff)


def test_build_diff_maps_and_memory_report_on_a_synthetic_graph() -> None:
    graph = SyntheticSource(num_nodes=300, avg_degree=5, num_snapshots=5, change_rate=0.1, growth="none").load()
    diffs = build_diff_maps(graph)
    assert diffs.diffs[0] is None and len(diffs.diffs) == graph.num_snapshots
    assert diffs.build_seconds >= 0
    edges = edge_set_of(graph.snapshots[0])
    for t in range(1, graph.num_snapshots):
        diff = diffs.diffs[t]
        assert diff is not None and diff.changed_nodes.numel() == 0  # the synthetic source shares x
        edges = apply_diff(edges, diff)
        assert edges.equal(edge_set_of(graph.snapshots[t]))
    assert diffs.chain(1, 4) == diffs.diffs[2:4]

    report = memory_report(graph, diffs)
    full = sum(s.edge_index.numel() * 8 + s.edge_weight.numel() * 4 for s in graph.snapshots)
    assert report["full_graph_bytes"] == full
    maps = [d for d in diffs.diffs if d is not None]
    assert report["degree_bytes"] == sum(d.touched_nodes.numel() * 8 + 2 * d.degree_after.numel() * 4 for d in maps)
    base = graph.snapshots[0].edge_index.numel() * 8 + graph.snapshots[0].edge_weight.numel() * 4
    assert report["diffmap_bytes"] == base + sum(d.num_changed_edges * (8 + 4 + 4) for d in maps)
    assert report["total_bytes"] == report["diffmap_bytes"] + report["degree_bytes"]
    assert report["saved_fraction"] == pytest.approx(1 - report["total_bytes"] / full)
    assert 0.3 < report["saved_fraction"] < 1  # 10% change per snapshot: most of the graph is reused


def test_diff_map_moves_and_counts_its_bytes() -> None:
    x = torch.randn(4, 3)
    y = x.clone()
    y[2] += 1
    diff = diff_snapshots(
        _snapshot(4, [(0, 1, 1.0), (2, 3, 1.0)], x, torch.float32), _snapshot(4, [(0, 1, 1.0), (3, 2, 2.0)], y, torch.float32)
    )
    diff = replace(diff, step_sizes=("sizes", 3))  # plain numbers a kernel takes: they travel as they are
    moved = diff.to("cpu")
    assert all(
        torch.equal(getattr(moved, k), getattr(diff, k))
        for k in diff.__dataclass_fields__
        if k not in ("num_nodes", "full_graph", "step_sizes")
    )
    assert moved.full_graph is None and not moved.is_full and moved.step_sizes == ("sizes", 3)
    assert diff.nbytes() == (1 + 1) * (8 + 4 + 4) + 2 * (8 + 4 + 4) + (8 + 3 * 4)
    graph = TemporalGraph("tiny", (_snapshot(4, [(0, 1, 1.0)], x, torch.float32),), Task.REGRESSION)
    assert build_diff_maps(graph).diffs == (None,)


def test_a_snapshot_whose_diff_is_larger_than_its_graph_is_kept_whole() -> None:
    """REAL keeps each snapshot as its dmap or its full graph: a graph that changes completely
    (here, every edge replaced) is stored whole, rebuilds exactly, and never costs more bytes."""
    x = torch.randn(6, 2)
    ring = [(i, (i + 1) % 6, 1.0) for i in range(6)]
    star = [(0, i, 1.0) for i in range(1, 6)]
    snaps = (
        _snapshot(6, ring, x, torch.float32),
        _snapshot(6, star, x, torch.float32),
        _snapshot(6, star + [(2, 3, 1.0)], x, torch.float32),
    )
    graph = TemporalGraph("churn", snaps, Task.REGRESSION)
    kept = build_diff_maps(graph)
    assert [d.is_full for d in kept.diffs[1:]] == [True, False]  # one added edge stays a diff
    edges = edge_set_of(snaps[0])
    for t in (1, 2):
        edges = apply_diff(edges, kept.diffs[t])
        assert edges.equal(edge_set_of(snaps[t]))
    always = build_diff_maps(graph, keep_smaller=False)
    assert not any(d.is_full for d in always.diffs[1:])
    smaller, larger = memory_report(graph, kept), memory_report(graph, always)
    assert smaller["full_snapshots"] == 1 and larger["full_snapshots"] == 0
    assert smaller["total_bytes"] < larger["total_bytes"]
    assert smaller["total_bytes"] <= smaller["full_graph_bytes"] < larger["total_bytes"]
    moved = kept.diffs[1].to("cpu")
    assert moved.is_full and moved.full_graph.equal(kept.diffs[1].full_graph)


@settings(max_examples=40, deadline=None)
@given(snapshots=snapshot_chains(max_snapshots=1))
def test_sizes_the_host_knows_give_the_same_expansion_and_out_edges(snapshots: list[Snapshot]) -> None:
    """``expanded`` given the raw edge list's length and ``out_edge_positions`` given the count of
    the nodes' out-edges (sizes a GPU would otherwise read back) return what they return without."""
    (snapshot,) = snapshots
    edges = edge_set_of(snapshot)
    for a, b in zip(edges.expanded(), edges.expanded(snapshot.edge_index.size(1)), strict=True):
        assert torch.equal(a, b)
    nodes = torch.arange(0, edges.num_nodes, 2)
    total = int(torch.isin(edges.sources(), nodes).sum())
    for a, b in zip(
        out_edge_positions(edges.keys, nodes, edges.num_nodes),
        out_edge_positions(edges.keys, nodes, edges.num_nodes, total),
        strict=True,
    ):
        assert torch.equal(a, b)
