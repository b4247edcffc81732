"""Additive storage: every snapshot in the window reconstructs exactly, for any assignment history."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dygsched.data.additive_store import REFERENCE_BYTES, GraphStore, history_storage, segment_bounds


def snapshots(seed, count, nodes=12, width=8, change=0.3, edges=20):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, (nodes, width)).astype(np.float32)
    out = []
    for _ in range(count):
        x = x.copy()
        flip = rng.random((nodes, width)) < change / width * 3
        x[flip] = 1 - x[flip]
        out.append((x, rng.integers(0, nodes, (2, edges))))
    return out


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    window=st.integers(1, 4),
    segments=st.integers(1, 5),
    assignments=st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=1, max_size=9),
)
def test_every_snapshot_in_the_window_reconstructs_exactly(seed, window, segments, assignments):
    """Nodes join, leave and come back (any history of which nodes this store holds), the window slides."""
    data = snapshots(seed, len(assignments))
    store = GraphStore(width=8, window=window, segments=segments)
    for t, ((x, edges), on_store) in enumerate(zip(data, assignments)):
        nodes = np.flatnonzero(on_store)
        store.add(t, nodes, x, edges)
        assert store.snapshots == list(range(max(0, t - window + 1), t + 1))
        for kept in store.snapshots:
            held = np.flatnonzero(assignments[kept])
            got_nodes, rows = store.features(kept)
            assert np.array_equal(got_nodes, held) and np.array_equal(rows, data[kept][0][held])
            edges_kept = data[kept][1]
            incident = edges_kept[:, np.isin(edges_kept[0], held) | np.isin(edges_kept[1], held)]
            expected = sorted(set(map(tuple, incident.T.tolist())))
            assert sorted(map(tuple, store.edges(kept).T.tolist())) == expected


def test_stored_bytes_follow_the_size_formula():
    bounds = segment_bounds(8, 4)
    assert bounds == [(0, 2), (2, 4), (4, 6), (6, 8)]
    store = GraphStore(width=8, window=3, segments=4)
    x0 = np.zeros((4, 8), np.float32)
    assert store.add(0, [0, 1, 2], x0, np.zeros((2, 0), np.int64)) == 3 * 8 * 4  # first time: whole rows
    x1 = x0.copy()
    x1[0, 0] = 1.0  # node 0: one segment changes; node 1: nothing; node 3: new on the store
    added = store.add(1, [0, 1, 3], x1, np.zeros((2, 0), np.int64))
    assert added == (2 * 4 + 3 * REFERENCE_BYTES) + 4 * REFERENCE_BYTES + 8 * 4
    assert store.nbytes()["features_additive"] == 2 * 4 + 7 * REFERENCE_BYTES


def test_a_node_that_comes_back_is_stored_whole_again():
    store = GraphStore(width=4, window=4, segments=2)
    x = np.ones((2, 4), np.float32)
    store.add(0, [0], x, np.zeros((2, 0), np.int64))
    store.add(1, [1], x, np.zeros((2, 0), np.int64))  # node 0 moved away
    assert store.add(2, [0, 1], x, np.zeros((2, 0), np.int64)) == 4 * 4 + 2 * REFERENCE_BYTES  # 0 whole, 1 references


def test_a_history_that_never_changes_costs_one_snapshot_plus_references():
    x = np.ones((5, 8), np.float32)
    edges = np.array([[0, 1, 2], [1, 2, 3]])
    history = history_storage([(x, edges, np.arange(5))] * 4, segments=4)
    assert history.full_feature_bytes == 4 * 5 * 8 * 4 and history.full_edge_bytes == 4 * 3 * 16
    assert history.additive_feature_bytes == 5 * 8 * 4 + 3 * 5 * 4 * REFERENCE_BYTES
    assert history.additive_edge_bytes == 3 * 16  # the base, and no changes
    assert history.saving(features=False, edges=True) == pytest.approx(1 - (4 * 160 + 48) / (4 * 160 + 4 * 48))
