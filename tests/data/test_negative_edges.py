"""Evaluation's negative samplers as DyGLib defines them: which edges each pool holds, the random
share, the random remainder where a pool runs short, and the same draws on any rank count."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dygsched.data.events import events_from_arrays
from dygsched.data.negative_edges import NegativeEdges, sampler_names
from dygsched.engine.node_memory.batches import RankBatch
from dygsched.engine.node_memory.negatives import NegativeSampler
from dygsched.errors import ConfigError

# (u, v) at t: training ends at t = 4
EVENTS = [(0, 3, 1), (1, 4, 2), (0, 3, 3), (2, 5, 4), (1, 5, 5), (0, 4, 6), (2, 3, 7), (1, 5, 8)]


def hand_made():
    src, dst, t = zip(*EVENTS)
    return events_from_arrays("hand", list(src), list(dst), [float(x) for x in t], num_nodes=6)


def edges_of(keys: np.ndarray, n: int = 6) -> set[tuple[int, int]]:
    return {(int(k) // n, int(k) % n) for k in keys}


def test_each_pool_holds_the_edges_its_definition_names():
    edges = NegativeEdges(hand_made(), train_last_time=4.0)
    # a batch spanning [7, 8]: seen before 7 and not within [7, 8]
    assert edges_of(edges.pool_of("historical", 7.0, 8.0)) == {(0, 3), (1, 4), (2, 5), (0, 4)}
    # of those, first seen after training (t > 4): (1, 5) is, but it recurs at 8
    assert edges_of(edges.pool_of("inductive", 7.0, 8.0)) == {(0, 4)}
    assert edges_of(edges.pool_of("historical", 5.0, 6.0)) == {(0, 3), (1, 4), (2, 5)}
    assert edges.pool_of("inductive", 5.0, 6.0).size == 0  # nothing new before the batch yet
    assert edges.edges_after_training() == 3


def test_the_test_phase_counts_validation_as_observed():
    # DyGLib's test sampler takes the validation data's last time as last_observed_time: an edge first
    # seen in validation is not inductive for test. Here validation holds t = 5, 6, so (0, 4), first
    # seen at 6, is in validation's inductive pool for a batch at [7, 8] but not in test's.
    from dygsched.data.events import EventSplit
    from dygsched.engine.node_memory.negatives import negative_sampler
    from tests.typed_runs import default_run

    edges = NegativeEdges(hand_made(), train_last_time=4.0, val_last_time=6.0)
    assert edges_of(edges.pool_of("inductive", 7.0, 8.0, "val")) == {(0, 4)}
    assert edges.pool_of("inductive", 7.0, 8.0, "test").size == 0
    assert edges_of(edges.pool_of("historical", 7.0, 8.0, "test")) == {(0, 3), (1, 4), (2, 5), (0, 4)}  # unchanged
    # the run's sampler passes the last validation event's time
    settings = default_run(window=1, split={"train": 0.5, "val": 0.25}, seed=0, epochs=1, eval={"negatives": "inductive"})
    run_edges = negative_sampler(hand_made(), EventSplit((0, 4), (4, 6), (6, 8)), settings, {}).edges
    assert run_edges is not None and run_edges.observed_until == {
        "train": 4.0,
        "val": 4.0,
        "test": 6.0,
        "val_new": 4.0,
        "test_new": 6.0,
    }


def test_a_large_pool_gives_every_negative_and_a_small_one_is_topped_up_at_random():
    edges = NegativeEdges(hand_made(), train_last_time=4.0)
    src, dst = torch.tensor([2, 1]), torch.tensor([3, 5])
    neg_src, neg_dst = edges.draw("historical", 0, "test", 1, src, dst, 7.0, 8.0, per_event=2)
    drawn = set(zip(neg_src.view(-1).tolist(), neg_dst.view(-1).tolist()))
    assert neg_src.shape == (2, 2) and drawn == {(0, 3), (1, 4), (2, 5), (0, 4)}  # 4 from 4: each once
    neg_src, neg_dst = edges.draw("inductive", 0, "test", 1, src, dst, 7.0, 8.0, per_event=2)
    pairs = list(zip(neg_src.view(-1).tolist(), neg_dst.view(-1).tolist()))
    assert pairs.count((0, 4)) == 1  # the whole pool, then 3 at random
    for u, v in pairs:  # random pairs: a source and a destination of the stream, never a positive of the batch
        assert u in (0, 1, 2) and v in (3, 4, 5) and (u, v) not in {(2, 3), (1, 5)}


def test_random_share_keeps_that_share_of_a_batch_random():
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 400), rng.integers(50, 100, 400)
    stream = events_from_arrays("bip", src, dst, np.arange(400.0), num_nodes=100)
    t0, t1 = 380.0, 399.0
    batch_src, batch_dst = stream.src[380:], stream.dst[380:]
    for share, expected in ((0.0, 40), (0.5, 20)):
        edges = NegativeEdges(stream, train_last_time=279.0, random_share=share)
        pool = set(edges.pool_of("historical", t0, t1).tolist())
        neg_src, neg_dst = edges.draw("historical", 1, "test", 3, batch_src, batch_dst, t0, t1, per_event=2)
        keys = (neg_src * 100 + neg_dst).view(-1).tolist()
        in_pool = sum(k in pool for k in keys)
        # a random pair lands in the pool by chance with probability |pool| / 2500 (about 0.14)
        assert expected <= in_pool <= expected + (0 if share == 0 else 10)


def test_random_draws_from_all_nodes_or_from_the_destinations_alone():
    stream = hand_made()
    edges = NegativeEdges(stream, train_last_time=4.0, pool="destinations")
    sources, destinations = edges.draw("random", 0, "val", 0, stream.src[:4], stream.dst[:4], 1.0, 4.0, per_event=25)
    assert sources is None and set(destinations.view(-1).tolist()) == {3, 4, 5}
    every = NegativeEdges(stream, train_last_time=4.0)
    _, destinations = every.draw("random", 0, "val", 0, stream.src[:4], stream.dst[:4], 1.0, 4.0, per_event=25)
    assert set(destinations.view(-1).tolist()) == set(range(6))  # TGL's rule: any node


@pytest.mark.parametrize("sampler", ["random", "historical", "inductive"])
def test_one_and_two_ranks_draw_the_same_negatives(sampler):
    from dygsched.data.events import EventSplit

    stream = hand_made()
    split = EventSplit((0, 4), (4, 6), (6, 8))
    edges = NegativeEdges(stream, train_last_time=4.0, pool="destinations")
    sampler_1 = NegativeSampler(5, 6, 3, {}, edges, stream, split)
    whole = sampler_1.of(RankBatch("test", 0, 0, 2, 0, 2), 0, sampler)
    halves = [
        NegativeSampler(5, 6, 3, {}, edges, stream, split).of(RankBatch("test", 0, 0, 2, r, r + 1), 0, sampler) for r in (0, 1)
    ]
    for field in ("sources", "destinations"):
        one = getattr(whole, field)
        if one is None:
            assert all(getattr(h, field) is None for h in halves)
            continue
        two = torch.stack([getattr(h, field) for h in halves], dim=1).view(-1)  # blocks of one per event
        assert torch.equal(one, two)


def test_unknown_samplers_and_pools_are_one_line():
    assert sampler_names("random,historical") == ("random", "historical")
    assert sampler_names(["inductive"]) == ("inductive",)
    with pytest.raises(ConfigError, match="eval.negatives must name samplers among random, historical, inductive"):
        sampler_names("adversarial")
    with pytest.raises(ConfigError, match="twice"):
        sampler_names("random,random")
    with pytest.raises(ConfigError, match="eval.negative_pool"):
        NegativeEdges(hand_made(), 4.0, pool="sources")
