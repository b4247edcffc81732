"""Sven's redundancy-free organisation (Algorithm 2), the winning write of a vertex, and the state table."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from dygsched.engine.node_memory.organise import latest_per_vertex, organise
from dygsched.engine.node_memory.state import NodeStateTable, Ownership
from dygsched.engine.node_memory.updates import StateUpdates


@given(st.lists(st.integers(0, 9), max_size=60))
def test_organise_restores_the_series_and_finds_last_occurrences(values):
    series = torch.tensor(values, dtype=torch.int64)
    organised = organise(series)
    assert organised.unique.tolist() == sorted(set(values))
    assert torch.equal(organised.unique[organised.restore], series)
    for vertex, last in zip(organised.unique.tolist(), organised.last.tolist(), strict=True):
        assert last == max(i for i, v in enumerate(values) if v == vertex)
    if values:
        assert organised.redundancy == 1 - len(set(values)) / len(values)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 10**6)), max_size=40, unique_by=lambda p: p[1]))
def test_the_latest_key_wins_whatever_the_order(pairs):
    vertices = torch.tensor([v for v, _ in pairs], dtype=torch.int64)
    keys = torch.tensor([k for _, k in pairs], dtype=torch.int64)
    winners = latest_per_vertex(vertices, keys)
    want = {}
    for v, k in pairs:
        want[v] = max(want.get(v, -1), k)
    assert sorted(zip(vertices[winners].tolist(), keys[winners].tolist())) == sorted(want.items())


def updates(vertices, keys, value_of_key, deliveries=((), ())):
    n = len(vertices)
    keys_t = torch.tensor(keys, dtype=torch.int64)
    to, dkeys = (torch.tensor(x, dtype=torch.int64) for x in deliveries)
    return StateUpdates(
        torch.tensor(vertices, dtype=torch.int64),
        keys_t,
        keys_t[:, None].float().expand(n, 2) * value_of_key,
        keys_t[:, None].float().expand(n, 5),
        keys_t.float(),
        to,
        dkeys,
        -dkeys[:, None].float().expand(-1, 5),
        dkeys.float(),
    )


def test_writes_split_over_ranks_and_deduplicated_land_like_all_at_once():
    whole = updates([1, 2, 1, 3, 2], [4, 5, 9, 1, 2], 1.0, ([1, 3, 3], [10, 0, 3]))
    one = NodeStateTable(4, 2, 5, 2, torch.device("cpu"))
    whole.apply(one, torch.arange(4))
    split = NodeStateTable(4, 2, 5, 2, torch.device("cpu"))
    parts = [whole.select(torch.tensor([0, 1]), torch.tensor([0])), whole.select(torch.tensor([2, 3, 4]), torch.tensor([1, 2]))]
    StateUpdates.cat([p.deduplicated() for p in parts]).apply(split, torch.arange(4))
    for name in ("memory", "memory_time", "mail", "mail_time", "next_slot"):
        assert torch.equal(getattr(one, name), getattr(split, name)), name
    assert one.memory_time.tolist() == [0.0, 9.0, 5.0, 1.0]
    # vertex 1: endpoint mail at key 9 loses to the delivery at key 10; vertex 3: delivery key 3 beats endpoint key 1
    assert one.mail_time[1].tolist() == [10.0, 0.0] and one.mail_time[3].tolist() == [3.0, 0.0]


def test_the_mailbox_is_a_ring_and_rows_pack_and_unpack():
    table = NodeStateTable(2, 3, 4, 2, torch.device("cpu"))
    for step in range(3):
        table.write_mail(torch.tensor([0]), torch.full((1, 4), float(step)), torch.tensor([float(step)]))
    assert table.mail_time[0].tolist() == [2.0, 1.0]
    state = table.unpack(table.pack(torch.tensor([1, 0])))
    assert torch.equal(state.mail, table.mail[[1, 0]]) and torch.equal(state.mail_time, table.mail_time[[1, 0]])
    assert table.row_width == table.pack(torch.tensor([0])).shape[1]


def test_ownership_gives_each_vertex_one_owner_and_a_row_there():
    own = Ownership.from_owner(torch.tensor([1, 0, 1, 1, 0]), 2)
    assert own.row.tolist() == [0, 0, 1, 2, 1]
    assert own.rows_on(0) + own.rows_on(1) == 5
