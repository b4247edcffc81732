"""DyGLib's new-node split: which nodes are hidden, which training events go, which nodes are new."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dygsched.data.event_batches import RecentNeighbours
from dygsched.data.events import events_from_arrays
from dygsched.data.new_nodes import new_node_split
from dygsched.errors import ConfigError


def stream(nodes: int = 60, events: int = 900):
    rng = np.random.default_rng(5)
    src = rng.integers(0, nodes, events)
    dst = (src + 1 + rng.integers(0, nodes - 1, events)) % nodes
    return events_from_arrays("toy", src, dst, np.arange(events, dtype=float), num_nodes=nodes)


def test_hidden_nodes_come_from_later_events_and_their_training_events_are_dropped():
    data = stream()
    split = data.split(0.7, 0.15)
    got = new_node_split(data, split, 0.1)
    stop = split.train[1]
    later = set(data.src[stop:].tolist()) | set(data.dst[stop:].tolist())
    assert got.hidden.numel() == 6 and set(got.hidden.tolist()) <= later
    kept = got.train_events
    assert bool((kept[1:] > kept[:-1]).all()) and int(kept.max()) < stop
    hidden = set(got.hidden.tolist())
    for event in range(stop):  # every training event touching a hidden node is gone, every other one kept
        touches = data.src[event].item() in hidden or data.dst[event].item() in hidden
        assert (event in set(kept.tolist())) != touches
    trained = set(data.src[kept].tolist()) | set(data.dst[kept].tolist())
    assert set(got.new.nonzero().flatten().tolist()) == set(range(data.num_nodes)) - trained
    assert hidden <= set(got.new.nonzero().flatten().tolist())


def test_the_draw_is_the_same_for_every_run_and_none_without_a_share():
    data = stream()
    split = data.split(0.7, 0.15)
    assert torch.equal(new_node_split(data, split, 0.1).hidden, new_node_split(data, split, 0.1).hidden)
    none = new_node_split(data, split, 0.0)
    assert not none.drops_events and torch.equal(none.train_events, torch.arange(*split.train))
    # without hiding, the new nodes are those that first appear after training
    first_late = events_from_arrays("late", [0, 1, 0, 2, 3], [1, 0, 1, 3, 0], [0.0, 1, 2, 3, 4], num_nodes=4)
    got = new_node_split(first_late, first_late.split(0.6, 0.2), 0.0)
    assert got.new.tolist() == [False, False, True, True]
    assert got.inductive(torch.tensor([0, 2]), torch.tensor([1, 0])).tolist() == [False, True]


def test_impossible_shares_are_refused():
    data = stream()
    split = data.split(0.7, 0.15)
    with pytest.raises(ConfigError, match=r"split.new_nodes must be in \[0, 1\)"):
        new_node_split(data, split, 1.0)
    with pytest.raises(ConfigError, match="leaves no training event"):
        new_node_split(data, split, 0.99)
    small = events_from_arrays("small", [0, 1, 0, 2, 3], [1, 0, 1, 3, 0], [0.0, 1, 2, 3, 4], num_nodes=4)
    with pytest.raises(ConfigError, match="touch only 3"):
        new_node_split(small, small.split(0.6, 0.2), 0.9)


def test_a_sampler_over_some_events_never_returns_the_others():
    data = stream()
    kept = new_node_split(data, data.split(0.7, 0.15), 0.2).train_events
    sampler = RecentNeighbours(data, events=kept)
    nodes = torch.arange(data.num_nodes)
    got = sampler.sample(nodes, torch.full((data.num_nodes,), 10_000.0), 5)
    assert set(got.events[got.mask].tolist()) <= set(kept.tolist())
    everything = RecentNeighbours(data).sample(nodes, torch.full((data.num_nodes,), 10_000.0), 5)
    assert not set(everything.events[everything.mask].tolist()) <= set(kept.tolist())


def test_dyglibs_draw_hides_the_floor_share_drawn_by_pythons_random_and_on_collegemsg_keeps_dyglibs_training_events():
    data = stream()
    split = data.split(0.7, 0.15)
    got = new_node_split(data, split, 0.105, draw="dyglib")
    stop = split.train[1]
    later = set(data.src[stop:].tolist()) | set(data.dst[stop:].tolist())
    assert got.hidden.numel() == 6 and set(got.hidden.tolist()) <= later  # int(0.105 x 60) = 6; round would give 6 too
    assert new_node_split(data, split, 0.11, draw="dyglib").hidden.numel() == 6  # int(6.6), where round gives 7
    assert torch.equal(got.hidden, new_node_split(data, split, 0.105, draw="dyglib").hidden)
    assert not torch.equal(got.hidden, new_node_split(data, split, 0.105).hidden)  # another generator, other nodes
    with pytest.raises(ConfigError, match="split.new_nodes_draw must be one of ours, dyglib"):
        new_node_split(data, split, 0.1, draw="mine")


def test_dyglibs_draw_on_collegemsg_keeps_the_training_events_dyglibs_loader_keeps():
    """DyGLib's loader on UCI (its `get_link_prediction_data`, commit 3aacc36) prints that 189 nodes are
    hidden and that training keeps 34,353 interactions; the same draw over CollegeMsg's ids does too."""
    from dygsched.data.loading import load_data
    from dygsched.launch.compose import compose_run

    collegemsg = load_data(compose_run(["dataset=collegemsg"]).dataset)
    split = collegemsg.split(0.7, 0.15, "time")
    got = new_node_split(collegemsg, split, 0.1, draw="dyglib")
    assert got.hidden.numel() == 189 and got.train_events.numel() == 34_353
    assert new_node_split(collegemsg, split, 0.1).train_events.numel() == 29_781  # ours: 190 other nodes
