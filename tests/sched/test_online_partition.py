"""DistDy's online partitioning (Algorithms 1-3) and its baselines (no torch)."""

import math

import numpy as np
import pytest

from dygsched.sched.online_partition import (
    BASELINES,
    CapacityError,
    OnlinePartitioner,
    SnapshotGraph,
    baseline_partitions,
    edge_weights,
    over_capacity,
    storage,
    utility,
)

FULL = 64


def graphs(count=6, nodes=60, edges=240, seed=0, leave=0.1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        present = np.sort(rng.choice(nodes, int(nodes * (1 - leave)), replace=False))
        pairs = rng.choice(present, (2, edges))
        e, w = edge_weights(nodes, pairs, present, batch=16, fanouts=[3, 5], full_bytes=FULL)
        sizes = rng.integers(8, FULL, nodes).astype(float)
        out.append(SnapshotGraph(present, e, w, sizes, FULL, nodes))
    return out


def test_one_layer_edge_weights_are_the_papers_formula():
    edges = np.array([[0, 0, 1, 2, 3], [1, 2, 2, 3, 0]])
    e, w = edge_weights(4, edges, np.arange(4), batch=2, fanouts=[1], full_bytes=10)
    degree = np.bincount(e.ravel(), minlength=4)
    expected = 10 * (2 / 4) * (np.minimum(1, degree[e[0]]) / degree[e[0]] + np.minimum(1, degree[e[1]]) / degree[e[1]])
    assert np.allclose(w, expected)


def test_every_node_on_one_store_capacity_kept_and_prices_in_closed_form():
    snapshots = graphs()
    window, stores = 3, 4
    capacity = np.full(stores, 1.3 * window * 60 * FULL / stores)
    partitioner = OnlinePartitioner(stores, capacity, window)
    placed = []
    for tau, graph in enumerate(snapshots):
        before = {t: p.copy() for t, p in partitioner.prices.items()}
        result = partitioner.partition(tau, graph)
        placed.append(result)
        assert (result.store[graph.nodes] >= 0).all() and (np.delete(result.store, graph.nodes) == -1).all()  # p + q = x
        previous = placed[-2].store if tau else None
        additive, a = storage(result.store, previous, graph, stores)
        assert np.array_equal(additive, result.additive) and np.allclose(a, result.stored_bytes)
        for t, price in partitioner.prices.items():  # prices never fall
            assert (price >= before.get(t, np.full(stores, partitioner.initial_price)) - 1e-12).all()
    assert not over_capacity(placed, capacity, window)
    # lambda_t = F exp(ln(2 eta) sum of the a of the snapshots occupying slot t / D)
    F = partitioner.initial_price
    for t in range(len(snapshots)):
        occupying = sum(p.stored_bytes for p in placed[max(0, t - window + 1) : t + 1])
        assert np.allclose(partitioner.prices[t], F * np.exp(math.log(2 * partitioner.eta) * occupying / capacity))


def test_refinement_leaves_no_node_a_strictly_better_store_with_room():
    graph = graphs(count=1, nodes=30, edges=60)[0]
    capacity = np.full(3, 2.0 * 30 * FULL)
    partitioner = OnlinePartitioner(3, capacity, window=1, budget=1000)
    result = partitioner.partition(0, graph)
    assert partitioner.passes < 1000  # it stopped on its own: a pass moved nothing
    assert utility(result.store, graph) == pytest.approx(result.utility)


def test_a_prefix_of_snapshots_is_partitioned_the_same_whatever_follows():
    snapshots, later = graphs(count=5, seed=1), graphs(count=5, seed=2)
    capacity = np.full(2, 1.5 * 3 * 60 * FULL / 2)
    one, two = OnlinePartitioner(2, capacity, 3), OnlinePartitioner(2, capacity, 3)
    first = [one.partition(t, g).store for t, g in enumerate(snapshots[:3] + later[3:])]
    second = [two.partition(t, g).store for t, g in enumerate(snapshots)]
    assert all(np.array_equal(a, b) for a, b in zip(first[:3], second[:3]))


def test_stores_too_small_are_a_capacity_error():
    with pytest.raises(CapacityError, match="raise the capacity"):
        partitioner = OnlinePartitioner(2, np.full(2, 5 * FULL), window=2)
        for tau, graph in enumerate(graphs()):
            partitioner.partition(tau, graph)


@pytest.mark.parametrize("method", BASELINES)
def test_baselines_place_every_present_node(method):
    snapshots = graphs(leave=0.2)
    placed = baseline_partitions(method, snapshots, 3, seed=0)
    assert len(placed) == len(snapshots)
    for graph, result in zip(snapshots, placed):
        assert (result.store[graph.nodes] >= 0).all() and (result.store[graph.nodes] < 3).all()
        assert (np.delete(result.store, graph.nodes) == -1).all()
    if method == "metis":  # one mapping for every snapshot
        shared = np.intersect1d(snapshots[0].nodes, snapshots[1].nodes)
        assert np.array_equal(placed[0].store[shared], placed[1].store[shared])
    if method == "greedy":  # a node keeps its store
        shared = np.intersect1d(snapshots[0].nodes, snapshots[1].nodes)
        assert np.array_equal(placed[0].store[shared], placed[1].store[shared])
