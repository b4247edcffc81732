"""Node partitions: METIS through pymetis (seeded, cached), hash and range; edge cut and balance."""

import numpy as np
import pytest

from dygsched.data.partition.nodes import partition_nodes, union_graph
from dygsched.data.synthetic import SyntheticSource
from dygsched.errors import ConfigError


@pytest.fixture(scope="module")
def graph():
    return SyntheticSource(num_nodes=200, num_snapshots=6, feature_dim=4, seed=4).load()


def test_union_graph_is_symmetric_deduplicated_and_loop_free(graph):
    union = union_graph(graph, range(3))
    rows = np.repeat(np.arange(union.num_nodes), union.degree)
    pairs = set(zip(rows.tolist(), union.indices.tolist()))
    assert all((b, a) in pairs for a, b in pairs) and all(a != b for a, b in pairs)
    assert len(pairs) == union.indices.size  # no repeated edge
    expected = {(int(s), int(d)) for t in range(3) for s, d in graph.snapshots[t].edge_index.t().tolist() if s != d}
    assert expected | {(d, s) for s, d in expected} == pairs


@pytest.mark.parametrize("method", ["metis", "hash", "range"])
def test_every_node_gets_a_part_and_a_chunk(graph, method):
    partition = partition_nodes(graph, range(4), parts=3, chunks=5, method=method, seed=1)
    assert partition.part.shape == (200,) and set(partition.part.tolist()) == {0, 1, 2}
    assert partition.chunk.min() >= 0 and partition.chunk.max() < 5
    assert sum(partition.part_sizes()) == 200 and partition.balance >= 1.0 and partition.edge_cut >= 0
    assert np.array_equal(np.sort(np.concatenate([partition.nodes_of(r) for r in range(3)])), np.arange(200))


def test_metis_is_deterministic_cuts_fewer_edges_than_hash_and_is_cached(graph, tmp_path):
    first = partition_nodes(graph, range(4), 2, 4, "metis", seed=3, cache_dir=tmp_path)
    again = partition_nodes(graph, range(4), 2, 4, "metis", seed=3)
    assert np.array_equal(first.part, again.part) and np.array_equal(first.chunk, again.chunk)
    assert first.edge_cut < partition_nodes(graph, range(4), 2, 4, "hash").edge_cut
    (cached,) = tmp_path.glob("metis-*.npz")
    np.savez(cached, part=1 - first.part, chunk=first.chunk)  # the cache is what is read back
    assert np.array_equal(partition_nodes(graph, range(4), 2, 4, "metis", seed=3, cache_dir=tmp_path).part, 1 - first.part)


def test_one_part_is_every_node_and_range_parts_are_contiguous(graph):
    single = partition_nodes(graph, range(4), 1, 8, "metis")
    assert (single.part == 0).all() and single.edge_cut == 0
    ranged = partition_nodes(graph, range(4), 4, 2, "range")
    assert np.all(np.diff(ranged.part) >= 0) and ranged.part_sizes() == [50, 50, 50, 50]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "spectral"}, r"unknown node partitioner 'spectral' \(choose from metis, hash, range\)"),
        ({"parts": 300}, "more than the graph's 200 nodes"),
        ({"parts": 20, "chunks": 20}, "more chunks than the graph's 200 nodes"),
        ({"chunks": 0}, "at least one part and one chunk"),
    ],
)
def test_impossible_partitions_are_one_line(graph, kwargs, message):
    settings = {"parts": 2, "chunks": 4, "method": "metis", **kwargs}
    with pytest.raises(ConfigError, match=message):
        partition_nodes(graph, range(4), **settings)
