import pytest
import torch

from dygsched.data.link_targets import check_targets, link_events, link_prediction_graph
from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import ConfigError


def snapshot(edges: list[tuple[int, int]], n: int = 4) -> Snapshot:
    edge_index = torch.tensor(edges, dtype=torch.long).t().reshape(2, -1)
    mask = torch.zeros(n, dtype=torch.bool)
    mask[edge_index.reshape(-1)] = True
    return Snapshot(edge_index, torch.ones(edge_index.shape[1]), torch.ones(n, 1), torch.zeros(n), mask)


def test_each_snapshot_scores_the_distinct_pairs_of_the_next_and_the_last_is_dropped():
    graph = TemporalGraph(
        "toy", (snapshot([(0, 1)]), snapshot([(2, 3), (0, 1), (2, 3), (3, 2)]), snapshot([(1, 0)])), Task.REGRESSION
    )
    links = link_prediction_graph(graph, embedding_dim=5)
    assert links.task is Task.LINK and links.num_snapshots == 2 and links.out_channels == 5
    assert links.snapshots[0].links.tolist() == [[0, 2, 3], [1, 3, 2]]  # repeated (2, 3) once; (3, 2) is another pair
    assert [s.target_index for s in links.snapshots] == [1, 2]
    assert links.snapshots[1].links.tolist() == [[1], [0]]
    assert torch.equal(links.snapshots[0].edge_index, graph.snapshots[0].edge_index)  # the inputs stay


def test_a_source_that_gives_every_snapshot_its_links_keeps_them_all():
    first = snapshot([(0, 1)])
    given = (
        Snapshot(first.edge_index, first.edge_weight, first.x, first.y, first.node_mask, torch.tensor([[1], [2]]), 1),
        Snapshot(first.edge_index, first.edge_weight, first.x, first.y, first.node_mask, torch.tensor([[2], [3]]), 2),
    )
    links = link_prediction_graph(TemporalGraph("cut", given, Task.REGRESSION), embedding_dim=4)
    assert links.num_snapshots == 2 and links.snapshots[1].links.tolist() == [[2], [3]]


def test_a_snapshot_whose_next_one_has_no_edge_is_refused_in_one_line():
    graph = TemporalGraph("gappy", (snapshot([(0, 1)]), snapshot([]), snapshot([(1, 2)])), Task.REGRESSION)
    links = link_prediction_graph(graph, embedding_dim=4)
    with pytest.raises(ConfigError, match=r"^task=link: 1 snapshot group\(s\) of gappy end where the next snapshot has no edges"):
        check_targets(links, range(2))


def test_link_events_list_every_positive_at_its_target_snapshot():
    graph = SyntheticSource(num_nodes=30, num_snapshots=5, feature_dim=2).load()
    links = link_prediction_graph(graph, embedding_dim=4)
    events = link_events(links)
    assert events.num_events == sum(s.links.shape[1] for s in links.snapshots)
    assert events.t.unique().tolist() == [1.0, 2.0, 3.0, 4.0]
    last = links.snapshots[-1]
    assert torch.equal(torch.stack([events.src, events.dst])[:, -last.links.shape[1] :], last.links)
