import pytest

from dygsched.launch.compose import compose_run


@pytest.mark.slow
def test_arxiv_sized_synthetic_graph():
    from dygsched.data.loading import load_graph

    graph = load_graph(compose_run(["dataset=synthetic_arxiv"]).dataset)
    edges = [s.num_edges for s in graph.snapshots]
    assert graph.num_nodes == 170_000 and graph.num_features == 128
    assert 1.15e6 < sum(edges) / len(edges) < 1.45e6  # ~1.3M edges per snapshot on average
    assert edges[-1] > 1.8 * edges[0]  # the Arxiv growth trend: edges grow, nodes stay
