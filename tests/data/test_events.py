"""Event streams: compacted ids, time order with ties in row order, chronological splits, bad input."""

import pytest
import torch

from dygsched.data.edgelist import EdgeListSource
from dygsched.data.events import EventStream, events_from_arrays
from dygsched.errors import ConfigError, DataError


def test_events_are_sorted_by_time_with_ties_in_row_order_and_ids_compacted():
    stream = events_from_arrays("toy", src=[70, 10, 30, 10], dst=[10, 30, 70, 70], times=[5.0, 1.0, 5.0, 3.0])
    assert stream.t.tolist() == [1.0, 3.0, 5.0, 5.0]
    assert stream.node_ids.tolist() == [10, 30, 70]
    # rows 1, 3, then the two at t = 5 in their row order (0 before 2)
    assert list(zip(stream.src.tolist(), stream.dst.tolist())) == [(0, 1), (0, 2), (2, 0), (1, 2)]


def test_the_edge_list_source_gives_a_stream_of_every_row(shipped_data):
    stream = EdgeListSource(str(shipped_data / "enron_edges.csv"), kind="events").load()
    assert isinstance(stream, EventStream)
    assert stream.num_events == 22_784 and stream.num_nodes == 143
    assert bool((stream.t[1:] >= stream.t[:-1]).all())
    assert stream.model_dims() == {"num_nodes": 143, "edge_dim": 0}


def test_chronological_split_and_batches():
    stream = events_from_arrays("toy", list(range(20)), list(range(1, 21)), list(range(20)))
    split = stream.split(0.7, 0.15)
    assert split.train == (0, 14) and split.val == (14, 17) and split.test == (17, 20)
    assert stream.batches(*split.train, size=5) == [(0, 5), (5, 10), (10, 14)]
    with pytest.raises(ConfigError, match="too few"):
        events_from_arrays("toy", [0, 1], [1, 0], [0.0, 1.0]).split(0.7, 0.15)


def test_malformed_streams_are_refused_with_one_line():
    with pytest.raises(DataError, match="time order"):
        EventStream("bad", torch.tensor([0, 1]), torch.tensor([1, 0]), torch.tensor([2.0, 1.0]), 2)
    with pytest.raises(DataError, match=r"lie in \[0, 2\)"):
        EventStream("bad", torch.tensor([0, 5]), torch.tensor([1, 0]), torch.tensor([1.0, 2.0]), 2)
    with pytest.raises(DataError, match="at least one event"):
        EventStream("bad", torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long), torch.tensor([]), 2)
    with pytest.raises(DataError, match="unknown kind 'stream'"):
        EdgeListSource("unused.csv", kind="stream").load()


def test_a_time_split_never_puts_equal_timestamps_in_two_phases():
    times = [0.0] * 3 + [1.0] * 10 + [2.0] * 4 + [3.0] * 3  # the 0.5 quantile is t = 1, the 0.75 one t = 2
    stream = events_from_arrays("ties", list(range(20)), list(range(1, 21)), times)
    split = stream.split(0.5, 0.25, by="time")
    assert split.train == (0, 13) and split.val == (13, 17) and split.test == (17, 20)  # every t = 1 trains
    for _, b in (split.train, split.val):
        assert stream.t[b - 1] < stream.t[b]  # a phase boundary always lies between two distinct times
    assert stream.split(0.5, 0.25).train == (0, 10)  # by event count (the default) it cuts the t = 1 events


def test_a_time_split_that_leaves_a_phase_empty_is_one_line():
    flat = events_from_arrays("flat", list(range(10)), list(range(1, 11)), [5.0] * 10)
    with pytest.raises(ConfigError, match="split.by=time leaves validation and test empty"):
        flat.split(0.7, 0.15, by="time")
    with pytest.raises(ConfigError, match="split.by must be one of events, time"):
        flat.split(0.7, 0.15, by="days")
