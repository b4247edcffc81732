"""GCN's normalised edges kept per graph, and ``gcn_conv`` against the ``GCNConv`` module call."""

from __future__ import annotations

import gc

import pytest
import torch
from torch_geometric.nn import GCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from dygsched.models import gcn_normalization
from dygsched.models.flops import count_conv_flops
from dygsched.models.gcn_normalization import normalized_edges
from dygsched.models.ops import gcn_conv


def graph(seed: int = 0, nodes: int = 9, edges: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, nodes, (2, edges), generator=generator)
    return edge_index, torch.rand(edges, generator=generator) + 0.5


def test_kept_edges_are_gcn_norms_and_computed_once_per_graph() -> None:
    edge_index, edge_weight = graph()
    first = normalized_edges(edge_index, edge_weight, 9, False, True, torch.float32)
    expected = gcn_norm(edge_index, edge_weight, num_nodes=9, add_self_loops=True, dtype=torch.float32)
    torch.testing.assert_close(first[0], expected[0], rtol=0, atol=0)
    torch.testing.assert_close(first[1], expected[1], rtol=0, atol=0)
    assert normalized_edges(edge_index, edge_weight, 9, False, True, torch.float32) is first
    assert normalized_edges(edge_index, edge_weight, 9, True, True, torch.float32) is not first  # other options, other entry
    assert normalized_edges(edge_index.clone(), edge_weight, 9, False, True, torch.float32) is not first  # another graph


def test_a_modified_graph_is_normalised_again() -> None:
    edge_index, edge_weight = graph(1)
    before = normalized_edges(edge_index, edge_weight, 9, False, True, torch.float32)
    edge_weight.mul_(3.0)
    after = normalized_edges(edge_index, edge_weight, 9, False, True, torch.float32)
    assert after is not before
    torch.testing.assert_close(after[1], gcn_norm(edge_index, edge_weight, num_nodes=9, dtype=torch.float32)[1])


def test_entries_die_with_their_graph_and_differentiable_or_inference_weights_are_not_kept() -> None:
    start = len(gcn_normalization._KEPT)
    edge_index, edge_weight = graph(2)
    normalized_edges(edge_index, edge_weight, 9, False, True, torch.float32)
    assert len(gcn_normalization._KEPT) == start + 1
    del edge_weight
    gc.collect()
    assert len(gcn_normalization._KEPT) == start
    trainable = torch.rand(edge_index.size(1), requires_grad=True)
    normalized_edges(edge_index, trainable, 9, False, True, torch.float32)
    with torch.inference_mode():
        normalized_edges(edge_index, None, 9, False, True, torch.float32)
    assert len(gcn_normalization._KEPT) == start


@pytest.mark.parametrize("options", [{}, {"improved": True}, {"add_self_loops": False}, {"bias": False}])
def test_gcn_conv_is_the_module_call_with_the_same_flops(options: dict) -> None:
    torch.manual_seed(0)
    conv = GCNConv(5, 7, **options)
    edge_index, edge_weight = graph(3)
    edge_index = torch.cat([edge_index, torch.tensor([[4], [4]])], dim=1)  # one self-loop of its own
    edge_weight = torch.cat([edge_weight, torch.tensor([2.0])])
    x = torch.randn(9, 5)
    with count_conv_flops(conv) as module_count:
        expected = conv(x, edge_index, edge_weight)
    with count_conv_flops(conv) as our_count:
        ours = gcn_conv(conv, x, edge_index, edge_weight)
    torch.testing.assert_close(ours, expected, rtol=1e-6, atol=1e-6)
    assert our_count.by_kind == module_count.by_kind
