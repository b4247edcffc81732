"""Events with one timestamp keep their file order, and every strategy and rank count batches them alike."""

import torch

from dygsched.data.event_batches import rank_slice
from dygsched.data.events import events_from_arrays


def test_ties_keep_row_order_and_batches_cut_through_them_the_same_for_every_rank_count():
    # rows out of time order, with a run of ties at t=5 given in the order 3, 1, 4, 1, 5
    src = torch.tensor([9, 3, 1, 4, 1, 5, 0])
    dst = torch.tensor([8, 2, 2, 2, 2, 2, 2])
    t = torch.tensor([7.0, 5.0, 5.0, 5.0, 5.0, 5.0, 1.0])
    stream = events_from_arrays("ties", src, dst, t, num_nodes=10)
    assert stream.src.tolist() == [0, 3, 1, 4, 1, 5, 9]  # a stable sort by time: ties in row order
    for batch_size in (1, 2, 3):
        orders = []
        for world_size in (1, 2, 3):
            order = []
            for g0, g1 in stream.batches(0, stream.num_events, batch_size * world_size):
                for rank in range(world_size):
                    a, b = rank_slice(g0, g1, rank, world_size)
                    order += stream.src[a:b].tolist()
            orders.append(order)
        # rank r's slice of each global batch, ranks in order, is the stream's order whatever the rank count
        assert all(order == stream.src.tolist() for order in orders)
