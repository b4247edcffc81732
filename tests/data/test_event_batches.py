"""What a memory model reads per batch: recent neighbours strictly before the query, negatives
drawn per global batch, and the ranks' slices of a global batch."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from dygsched.data.event_batches import RecentNeighbours, negative_destinations, rank_slice
from dygsched.data.events import events_from_arrays


def brute_force(stream, node, query, k):
    """The k latest (time, event) neighbours of ``node`` with time < query, oldest first."""
    found = []
    for e in range(stream.num_events):
        u, v, t = int(stream.src[e]), int(stream.dst[e]), float(stream.t[e])
        if t >= query:
            continue
        if u == node:
            found.append((t, e, v))
        elif v == node:
            found.append((t, e, u))
    found.sort()
    return found[-k:] if k else []


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 8)), min_size=1, max_size=40),
    st.integers(0, 4),
)
def test_recent_neighbours_match_a_brute_force_scan(rows, k):
    src, dst, times = zip(*rows, strict=True)
    stream = events_from_arrays("toy", list(src), list(dst), [float(t) for t in times], num_nodes=6)
    sampler = RecentNeighbours(stream)
    nodes = torch.arange(6).repeat_interleave(10)
    queries = torch.arange(10, dtype=torch.float64).repeat(6)
    got = sampler.sample(nodes, queries, k)
    for row, (node, query) in enumerate(zip(nodes.tolist(), queries.tolist(), strict=True)):
        want = brute_force(stream, node, query, k)
        mask = got.mask[row]
        assert int(mask.sum()) == len(want)
        assert got.events[row][mask].tolist() == [e for _, e, _ in want]
        assert got.nodes[row][mask].tolist() == [v for _, _, v in want]
        assert got.times[row][mask].tolist() == [t for t, _, _ in want]
        assert bool((got.events[row][~mask] == -1).all())


def test_the_events_of_the_query_time_itself_are_not_neighbours():
    stream = events_from_arrays("toy", [0, 0, 0], [1, 2, 3], [1.0, 2.0, 2.0], num_nodes=4)
    got = RecentNeighbours(stream).sample(torch.tensor([0]), torch.tensor([2.0]), 3)
    assert got.nodes[0][got.mask[0]].tolist() == [1]


def test_every_rank_draws_the_global_batchs_negatives():
    whole = negative_destinations(0, "train", 3, 7, 100, 50)
    again = negative_destinations(0, "train", 3, 7, 100, 50)
    assert torch.equal(whole, again) and int(whole.max()) < 50
    assert not torch.equal(whole, negative_destinations(0, "train", 4, 7, 100, 50))
    assert not torch.equal(whole, negative_destinations(0, "val", 3, 7, 100, 50))


@given(st.integers(0, 50), st.integers(0, 50), st.integers(1, 7))
def test_rank_slices_cover_a_global_batch_in_order(start, count, ranks):
    slices = [rank_slice(start, start + count, r, ranks) for r in range(ranks)]
    assert slices[0][0] == start and slices[-1][1] == start + count
    assert all(a[1] == b[0] for a, b in zip(slices, slices[1:]))
    sizes = [b - a for a, b in slices]
    assert max(sizes) - min(sizes) <= 1
