"""Convolution FLOP counting: hand-computed formulas, hooks only inside the block, incremental < full."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from dygsched.data.diffmap import coalesce, diff_snapshots
from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import Snapshot
from dygsched.models.flops import FlopCounter, add_flops, count_conv_flops, counting
from dygsched.models.gclstm import GCLSTM
from dygsched.models.incremental_kernels import gat_conv_chain, gcn_conv_chain
from dygsched.models.ops import gcn_aggregate
from tests.models.snapshots import changing_group
from tests.models.test_models import NAMES, REUSABLE, build

N = 3
CYCLE = torch.tensor([[0, 1, 2], [1, 2, 0]])  # 0 -> 1 -> 2 -> 0


def _snapshot(edge_index: torch.Tensor, x: torch.Tensor) -> Snapshot:
    return Snapshot(
        edge_index, torch.ones(edge_index.size(1)), x, torch.zeros(x.size(0)), torch.ones(x.size(0), dtype=torch.bool)
    )


def test_gcnconv_gatconv_and_gcn_aggregate_count_their_formulas() -> None:
    x = torch.randn(N, 2)
    gcn = GCNConv(2, 4)
    with count_conv_flops(gcn) as counter:
        gcn(x, CYCLE)
    # 3 edges + 3 self-loops = 6 messages of width 4
    assert counter.by_kind == {
        "transform": 2 * 3 * 2 * 4,
        "normalize": 3 * 6 + 3,
        "aggregate": 2 * 6 * 4,
        "attention": 0,
        "elementwise": 3 * 4,
    }
    assert counter.total == 48 + 21 + 48 + 12

    gat = GATConv(2, 3, heads=2)
    looped = torch.cat([CYCLE, torch.tensor([[1], [1]])], dim=1)  # an explicit self-loop is replaced, not added
    with count_conv_flops(gat) as counter:
        gat(x, looped)
    assert counter.by_kind == {
        "transform": 2 * 3 * 2 * 6,
        "normalize": 0,
        "aggregate": 2 * 6 * 6,
        "attention": 4 * 3 * 6 + 6 * 6 * 2,
        "elementwise": 3 * 6,
    }

    with count_conv_flops() as counter:
        gcn_aggregate(x, CYCLE)
    assert counter.by_kind["normalize"] == 3 * 6 + 3 and counter.by_kind["aggregate"] == 2 * 6 * 2
    assert counter.total == 21 + 24


def test_sageconv_on_a_sampled_block_counts_its_formula() -> None:
    """A bipartite block: 5 sources (the 2 destinations first), 4 messages, widths 3 -> 4."""
    sage = SAGEConv(3, 4, aggr="mean")
    sources = torch.randn(5, 3)
    block = torch.tensor([[2, 3, 4, 1], [0, 0, 1, 1]])
    with count_conv_flops(sage) as counter:
        sage((sources, sources[:2]), block, size=(5, 2))
    assert counter.by_kind == {
        "transform": 2 * 2 * 3 * 4 * 2,  # the neighbours' mean and the root, each 2 x 3 -> 4
        "normalize": 0,
        "aggregate": 4 * 3 + 2 * 3,
        "attention": 0,
        "elementwise": 2 * 4 * 2,  # the sum of both maps and the bias
    }


def test_nothing_is_counted_or_hooked_outside_the_block() -> None:
    gcn = GCNConv(2, 4)
    x = torch.randn(N, 2)
    assert not counting()
    with count_conv_flops(gcn) as counter:
        assert counting() and len(gcn._forward_hooks) == 1
    assert not counting() and len(gcn._forward_hooks) == 0
    gcn(x, CYCLE)
    gcn_aggregate(x, CYCLE)
    add_flops("aggregate", 10)
    assert counter.total == 0
    with pytest.raises(ValueError, match="unknown FLOP kind 'matmul'"):
        FlopCounter().add("matmul", 1)


def test_nested_counters_each_count_a_hooked_call_once() -> None:
    gcn = GCNConv(2, 4)
    x = torch.randn(N, 2)
    with count_conv_flops(gcn) as outer, count_conv_flops(gcn) as inner:
        gcn(x, CYCLE)
    assert outer.total == inner.total == 129


def test_incremental_gcn_chain_counts_what_it_computes() -> None:
    """One added edge 0 -> 2 on the 3-cycle, counted by hand."""
    x = torch.randn(N, 2)
    snapshots = [_snapshot(CYCLE, x), _snapshot(torch.cat([CYCLE, torch.tensor([[0], [2]])], dim=1), x)]
    first = coalesce(CYCLE, snapshots[0].edge_weight, N)
    gcn = GCNConv(2, 4)
    with count_conv_flops() as counter:
        gcn_conv_chain(gcn, x, first, [diff_snapshots(*snapshots)])
    transform = 2 * 3 * 2 * 4  # once for the chain
    # first snapshot: degrees (3 sums, 3 fills, 3 inverse roots), 3 coefficients w * s_src, 3 fill
    # coefficients; 6 messages of width 4; rescale and bias of 3 rows
    first_full = {"normalize": 2 * 3 + 3 * 3, "elementwise": 3 * 4 + 3 * 4, "aggregate": 2 * (3 + 3) * 4}
    # Node 2's degree changes: its out-edge 2 -> 0 is re-weighted, plus the added edge and its
    # self-loop: 3 messages; 2 scalar ops for its degree and 1 coefficient for the added edge;
    # rows: dy of node 2 (3), its self-loop term (5), u + delta, rescale and bias of rows 0 and 2.
    step = {"normalize": 2 + 1, "aggregate": 2 * 3 * 4, "elementwise": (3 + 5 + 2 * 3) * 4}
    assert counter.by_kind == {
        "transform": transform,
        "normalize": first_full["normalize"] + step["normalize"],
        "aggregate": first_full["aggregate"] + step["aggregate"],
        "attention": 0,
        "elementwise": first_full["elementwise"] + step["elementwise"],
    }


def _slow_graph() -> list[Snapshot]:
    graph = SyntheticSource(num_nodes=2000, avg_degree=6, num_snapshots=4, change_rate=0.02, growth="none", feature_dim=16).load()
    return list(graph.snapshots)


def test_incremental_chains_count_fewer_flops_than_full_convolutions() -> None:
    snapshots = _slow_graph()
    first = coalesce(snapshots[0].edge_index, snapshots[0].edge_weight, snapshots[0].num_nodes)
    diffs = [diff_snapshots(a, b) for a, b in itertools.pairwise(snapshots)]
    x = snapshots[0].x
    for conv, chain in ((GCNConv(16, 96), gcn_conv_chain), (GATConv(16, 24, heads=4), gat_conv_chain)):
        with count_conv_flops(conv) as full:
            for s in snapshots:
                conv(s.x, s.edge_index, s.edge_weight) if isinstance(conv, GCNConv) else conv(s.x, s.edge_index)
        with count_conv_flops(conv) as incremental:
            chain(conv, x, first, diffs)
        with count_conv_flops(conv) as all_full:
            chain(conv, x, first, diffs, ["full"] * len(diffs))
        assert incremental.total < 0.5 * full.total
        assert incremental.by_kind["transform"] == full.by_kind["transform"] // len(snapshots)
        assert incremental.total < all_full.total


@pytest.mark.parametrize("name", NAMES)
def test_every_model_is_countable_and_reuse_counts_less(name: str) -> None:
    snapshots = _slow_graph()[:3]
    snapshots = [Snapshot(s.edge_index, s.edge_weight, s.x[:, :4].contiguous(), s.y, s.node_mask) for s in snapshots]
    model = build(name, num_layers=2).eval()
    with count_conv_flops(model) as full:
        model(snapshots)
    assert full.by_kind["aggregate"] > 0 and full.by_kind["transform"] > 0
    if name not in REUSABLE:  # GC-LSTM: no convolution of the input to reuse (test_gclstm_count_is_its_formula)
        return
    first = coalesce(snapshots[0].edge_index, snapshots[0].edge_weight, snapshots[0].num_nodes)
    diffs = [diff_snapshots(a, b) for a, b in itertools.pairwise(snapshots)]
    with count_conv_flops(model) as reused:
        model(snapshots, first_conv_outs=model.layers[0].conv_chain(snapshots[0].x, first, diffs))
    assert 0 < reused.total < full.total


def test_tgcn_forward_count_is_its_folded_convolution() -> None:
    snapshots = _slow_graph()[:2]
    snapshots = [Snapshot(s.edge_index, s.edge_weight, s.x[:, :4].contiguous(), s.y, s.node_mask) for s in snapshots]
    model = build("tgcn", num_layers=1)  # gates' input halves folded into one GCN 4 -> 3 * 8 per snapshot
    with count_conv_flops(model) as counter:
        model(snapshots)
    expected = 0
    for s in snapshots:
        n, messages = s.num_nodes, int((s.edge_index[0] != s.edge_index[1]).sum()) + s.num_nodes
        folding = 2 * 3 * 8 * 8 * (4 + 1)  # the three 8 x 8 input halves times the conv's weight and bias
        expected += folding + (3 * messages + n) + 2 * messages * 4 + 2 * n * 4 * 24 + n * 24  # aggregate 4 wide, then project
    assert counter.total == expected


def test_gclstm_count_is_its_formula() -> None:
    """Per snapshot: the input's share of the four gates (a projection ``4 -> 4 x 8`` and its bias)
    and the scaled Laplacian (once per graph: ``4 m + n`` over its ``m`` coefficients, a self-loop
    on every node included). Per step from a non-zero state: ``K - 1 = 2`` propagations of ``H``
    (``2 m x 8`` each), the order-2 term's ``2 T_1 - T_0`` (``2 n x 8``), the stacked projection
    ``3 x 8 -> 4 x 8`` and its bias. The first snapshot's step starts from zero and convolves nothing."""
    snapshots = changing_group(length=2)
    model = GCLSTM(4, 1, hidden_channels=8, num_layers=1, K=3)
    with count_conv_flops(model) as counter:
        model(snapshots)
    expected = dict.fromkeys(counter.by_kind, 0)
    for t, s in enumerate(snapshots):
        n, m = s.num_nodes, int((s.edge_index[0] != s.edge_index[1]).sum()) + s.num_nodes
        expected["transform"] += 2 * n * 4 * 32
        expected["elementwise"] += n * 32
        expected["normalize"] += 4 * m + n
        if t > 0:
            expected["aggregate"] += 2 * (2 * m * 8)
            expected["elementwise"] += 2 * n * 8 + n * 32
            expected["transform"] += 2 * n * 24 * 32
    assert counter.by_kind == expected
