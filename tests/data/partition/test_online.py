"""DistDy's online partitioning (Algorithms 1-3) and its baselines (no torch)."""

import math

import numpy as np
import pytest

from dygsched import jit
from dygsched.data.partition.online import (
    CapacityError,
    OnlinePartitioner,
    _refine_passes,
    over_capacity,
    partition_stream,
    smallest_feasible_factor,
    store_capacity,
    window_bytes_if_every_node_stays,
)
from dygsched.data.partition.online_baselines import BASELINES, baseline_partitions
from dygsched.data.partition.snapshot_graph import SnapshotGraph, edge_weights, expected_messages, storage, utility

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


def test_refinement_settles_and_leaves_no_node_a_strictly_better_store_with_room():
    """Scored as if the node were on each candidate, a score is the exact change of the objective: the
    refinement stops on its own, no node moves more than twice, and at the end no node has a strictly
    better store with room for it."""
    snapshots = graphs(count=4, nodes=120, edges=600, seed=3)
    capacity = store_capacity(snapshots, 2, 3, factor=1.5)
    partitioner = OnlinePartitioner(3, capacity, window=2, budget=1000)
    for tau, graph in enumerate(snapshots):
        before = OnlinePartitioner(3, capacity, window=2, budget=1000)
        before.load_state_dict(partitioner.state_dict())
        result = partitioner.partition(tau, graph)
        before.initial_price = partitioner.initial_price  # F, set from the first base partition
        assert 1 <= result.passes < 1000  # it stopped on its own: a pass moved nothing
        assert result.most_moves <= 4  # a best response may follow its neighbours once or twice; bouncing was 150-240
        assert utility(result.store, graph) == pytest.approx(result.utility)
        scores, room = before.payoffs(tau, graph, result.store)
        nodes = graph.nodes
        here = scores[nodes, result.store[nodes]]
        better = (scores[nodes] > here[:, None] + 1e-9 * (np.abs(scores[nodes]).max() + 1)) & room[nodes]
        assert not better.any()


def _one_community(nodes=400, edges=2400, count=3, seed=0):
    """Snapshots of one random graph (no community structure): cutting nothing means one store holds
    everything, which the node-size reading of line 6 drifts towards; every node is a training target."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        pairs = rng.integers(0, nodes, (2, edges))
        present = np.arange(nodes)
        e, w = edge_weights(nodes, pairs, present, batch=64, fanouts=[5, 10], full_bytes=FULL)
        sizes = rng.integers(8, FULL, nodes).astype(float)
        out.append(SnapshotGraph(present, e, w, sizes, FULL, nodes, expected_messages(nodes, pairs, present, [5, 10])))
    return out


@pytest.mark.parametrize("stores", [2, 4])
def test_the_load_term_balances_the_stores_and_cuts_less_than_hash(stores):
    snapshots = _one_community()
    window = 2
    capacity = store_capacity(snapshots, window, stores, factor=2.0)  # ample: the balance comes from the load term
    ours = partition_stream("distdy", snapshots, stores, capacity, window)
    theirs = partition_stream("hash", snapshots, stores, capacity, window)
    for graph, mine, hashed in zip(snapshots, ours, theirs):
        assert mine.stored_bytes.max() / mine.stored_bytes.mean() <= 1.10
        assert graph.weights.sum() - mine.utility < graph.weights.sum() - hashed.utility


def _hot_nodes(nodes=600, edges=3000, hot=60, count=3, seed=1):
    """Snapshots where a tenth of the nodes are ten times as likely to be an edge's end (the paper's Ex)."""
    rng = np.random.default_rng(seed)
    odds = np.ones(nodes)
    odds[:hot] = 10.0
    out = []
    for _ in range(count):
        pairs = rng.choice(nodes, (2, edges), p=odds / odds.sum())
        present = np.arange(nodes)
        e, w = edge_weights(nodes, pairs, present, batch=64, fanouts=[5, 10], full_bytes=FULL)
        sizes = rng.integers(8, FULL, nodes).astype(float)
        out.append(SnapshotGraph(present, e, w, sizes, FULL, nodes, expected_messages(nodes, pairs, present, [5, 10])))
    return out


def _largest_over_mean(placed, graphs, per_vertex):
    worst = 0.0
    for p, g in zip(placed, graphs):
        per_store = np.bincount(p.store[g.nodes], weights=per_vertex(g)[g.nodes], minlength=4)
        worst = max(worst, per_store.max() / per_store.mean())
    return worst


@pytest.mark.parametrize(
    "option, per_vertex",
    [
        ("message_weight", lambda g: g.messages),
        ("fetch_weight", lambda g: np.bincount(g.edges.ravel(), np.tile(g.weights, 2), minlength=g.num_nodes)),
    ],
)
def test_a_balance_extension_is_off_by_default_and_evens_out_what_it_weighs(option, per_vertex):
    snapshots = _hot_nodes()
    capacity = store_capacity(snapshots, 2, 4, factor=2.0)
    paper = partition_stream("distdy", snapshots, 4, capacity, 2)
    zero = partition_stream("distdy", snapshots, 4, capacity, 2, **{option: 0.0})
    weighted = partition_stream("distdy", snapshots, 4, capacity, 2, **{option: 16.0})
    assert all(np.array_equal(a.store, b.store) for a, b in zip(paper, zero))
    assert not over_capacity(weighted, capacity, 2)
    assert _largest_over_mean(weighted, snapshots, per_vertex) < _largest_over_mean(paper, snapshots, per_vertex)
    assert _largest_over_mean(weighted, snapshots, per_vertex) <= 1.25


def test_expected_messages_of_one_layer_are_the_drawn_neighbours_of_each_target():
    edges = np.array([[1, 2, 3, 0, 0], [0, 0, 0, 1, 2]])  # 0 reads 1, 2, 3; 1 and 2 read 0
    out = expected_messages(4, edges, np.array([0, 1]), [2])
    assert out.tolist() == [2.0, 1.0, 0.0, 0.0]
    two = expected_messages(4, edges, np.array([0]), [2, 1])
    # layer 1: 0 draws 2 of its 3 in-neighbours (1, 2, 3), each with probability 2/3; layer 2: every node of
    # the hops so far draws min(1, its in-degree): 0 itself, and 1 and 2 (which read 0) but not 3 (reads nothing)
    assert two[0] == pytest.approx(2 + 1 + (2 / 3) * (1 + 1 + 0))


def test_every_capacity_from_the_tightest_feasible_is_kept_and_below_it_is_refused():
    snapshots = graphs(count=5, nodes=80, edges=300, seed=4)
    window, stores = 3, 4
    tightest = smallest_feasible_factor(snapshots, window, stores)
    assert tightest >= 1.0
    for factor in tightest * np.linspace(1.0, 2.0, 4):
        capacity = store_capacity(snapshots, window, stores, factor)
        placed = partition_stream("distdy", snapshots, stores, capacity, window)
        assert not over_capacity(placed, capacity, window)
    if tightest > 1.0:
        with pytest.raises(CapacityError):
            partition_stream("distdy", snapshots, stores, store_capacity(snapshots, window, stores, tightest - 0.02), window)
    # in bytes, the same capacity
    in_bytes = store_capacity(snapshots, window, stores, bytes_per_store=store_capacity(snapshots, window, stores, tightest)[0])
    assert np.allclose(in_bytes, store_capacity(snapshots, window, stores, tightest))


def test_the_balanced_window_storage_is_every_node_staying():
    snapshots = graphs(count=3, nodes=20, edges=40, seed=5, leave=0.0)
    held = window_bytes_if_every_node_stays(snapshots, 2)
    first = 20 * FULL
    second = snapshots[1].additive_bytes.sum()
    third = snapshots[2].additive_bytes.sum()
    assert held.tolist() == pytest.approx([first, first + second, second + third])


@pytest.mark.skipif(not jit.COMPILED, reason="numba is not installed: the plain loop is what runs")
def test_the_compiled_refinement_is_the_plain_loop():
    graph = graphs(count=1, nodes=50, edges=200, seed=6)[0]
    partitioner = OnlinePartitioner(3, np.full(3, 40.0 * FULL), window=1)
    store = partitioner._base(graph, partitioner.capacity - partitioner._held_before())
    results = []
    for loop in (_refine_passes, jit.python(_refine_passes)):
        results.append(partitioner._refine(0, graph, store.copy(), loop=loop))
    (a, passes_a, moves_a), (b, passes_b, moves_b) = results
    assert np.array_equal(a, b) and passes_a == passes_b and np.array_equal(moves_a, moves_b)


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


def _greedy_reference(snapshots, stores):
    """The greedy baseline as first written: store sizes counted again for every new node."""
    from dygsched.data.partition.nodes import metis_parts
    from dygsched.data.partition.online_baselines import _present
    from dygsched.data.partition.snapshot_graph import adjacency

    out, previous = [], None
    for graph in snapshots:
        if previous is None:
            store = _present(metis_parts(graph.num_nodes, graph.edges, stores, 0), graph)
        else:
            store = np.full(graph.num_nodes, -1, dtype=np.int64)
            kept = graph.nodes[previous[graph.nodes] >= 0]
            store[kept] = previous[kept]
            indptr, neighbours, _ = adjacency(graph)
            for v in graph.nodes[previous[graph.nodes] < 0].tolist():
                around = store[neighbours[indptr[v] : indptr[v + 1]]]
                around = around[around >= 0]
                sizes = np.bincount(store[store >= 0], minlength=stores)
                counts = np.bincount(around, minlength=stores) if around.size else np.zeros(stores)
                store[v] = int(np.lexsort((sizes, -counts))[0])
        out.append(store)
        previous = store
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_greedy_baseline_places_new_nodes_as_the_recount_for_every_node_did(seed):
    snapshots = graphs(count=5, nodes=120, edges=300, seed=seed, leave=0.4)  # many nodes arrive in every snapshot
    placed = baseline_partitions("greedy", snapshots, 3, seed=0)
    for result, expected in zip(placed, _greedy_reference(snapshots, 3), strict=True):
        assert np.array_equal(result.store, expected)
