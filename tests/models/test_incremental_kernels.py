"""Incremental first-layer convolutions equal full recomputation: outputs and parameter gradients."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch_geometric.nn import GATConv, GCNConv

from dygsched.data import diffmap
from dygsched.data.diffmap import DiffMap, EdgeSet, apply_diff, coalesce, diff_snapshots
from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import Snapshot
from dygsched.models import DGNN, flops
from dygsched.models.incremental_kernels import (
    GCNSpec,
    gat_conv_chain,
    gcn_aggregate_chain,
    gcn_conv_chain,
    gcn_step_sizes,
    node_set,
    projected_gcn_chain,
    resolve_paths,
    spmm,
)
from dygsched.models.incremental_kernels.spmm import coalesced as coalesced_entries
from dygsched.models.ops import gcn_aggregate
from tests.data.test_diffmap import snapshot_chains
from tests.models.snapshots import changing_group, in_float64
from tests.models.test_models import REUSABLE, build

FEATURES = 3
EXACT = {"rtol": 1e-9, "atol": 1e-9}  # float64


def chain_inputs(snapshots: list[Snapshot], whole: list[bool] | None = None) -> tuple[torch.Tensor, EdgeSet, list[DiffMap]]:
    """The chain's first features and graph and its diff maps; ``whole[i]`` keeps snapshot
    ``i + 1`` as its full graph instead (as ``build_diff_maps`` does when that is smaller)."""
    first = snapshots[0]
    diffs = [diff_snapshots(a, b) for a, b in itertools.pairwise(snapshots)]
    if whole is not None:
        diffs = [
            d.as_full(coalesce(s.edge_index, s.edge_weight, s.num_nodes)) if w else d
            for d, s, w in zip(diffs, snapshots[1:], whole, strict=True)
        ]
    return first.x, coalesce(first.edge_index, first.edge_weight, first.num_nodes), diffs


def coalesced(snapshot: Snapshot) -> tuple[torch.Tensor, torch.Tensor]:
    edges = coalesce(snapshot.edge_index, snapshot.edge_weight, snapshot.num_nodes)
    return edges.edge_index(), edges.edge_weight()


def paths_strategy(num_diffs: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(["diff", "full"]), min_size=num_diffs, max_size=num_diffs)


def whole_strategy(num_diffs: int) -> st.SearchStrategy[list[bool]]:
    """Which later snapshots are kept whole (mostly none: the diff path is the one under test)."""
    return st.lists(st.sampled_from([False, False, True]), min_size=num_diffs, max_size=num_diffs)


def assert_chain_matches(
    module: nn.Module,
    chain: Callable[[], list[torch.Tensor]],
    full: Callable[[int], torch.Tensor],
    num_snapshots: int,
    tol: dict[str, float],
    seed: int = 0,
) -> None:
    """Outputs equal, and gradients of one random linear loss over all outputs equal."""
    gen = torch.Generator().manual_seed(seed)
    params = [p for p in module.parameters() if p.requires_grad]

    def run(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
        loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum() for o in outputs)
        return list(torch.autograd.grad(loss, params, allow_unused=True)) if params else []

    incremental = chain()
    reference = [full(t) for t in range(num_snapshots)]
    assert len(incremental) == num_snapshots
    for t, (a, b) in enumerate(zip(incremental, reference, strict=True)):
        torch.testing.assert_close(a, b, **tol, msg=lambda m, t=t: f"snapshot {t}: {m}")
    if params:
        gen.manual_seed(seed)
        grads_a = run(incremental)
        gen.manual_seed(seed)
        grads_b = run(reference)
        for p, a, b in zip(params, grads_a, grads_b, strict=True):  # None: the loss does not depend on p
            a = torch.zeros_like(p) if a is None else a
            b = torch.zeros_like(p) if b is None else b
            torch.testing.assert_close(a, b, **tol, msg=lambda m, p=p: f"gradient of {tuple(p.shape)}: {m}")


GCN_VARIANTS = [
    {},
    {"improved": True},
    {"add_self_loops": False},
    {"normalize": False},
    {"bias": False},
]


@pytest.mark.parametrize("kwargs", GCN_VARIANTS, ids=lambda kw: ",".join(kw) or "default")
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_gcn_conv_chain_equals_full_recomputation(kwargs: dict[str, Any], data: st.DataObject) -> None:
    snapshots = data.draw(snapshot_chains(features=FEATURES))
    paths = data.draw(paths_strategy(len(snapshots) - 1))
    torch.manual_seed(0)
    conv = GCNConv(FEATURES, 4, **kwargs).double()
    if conv.bias is not None:
        nn.init.normal_(conv.bias)
    x, first, diffs = chain_inputs(snapshots, data.draw(whole_strategy(len(snapshots) - 1)))

    def full(t: int) -> torch.Tensor:
        return conv(snapshots[t].x, *coalesced(snapshots[t]))

    assert_chain_matches(conv, lambda: gcn_conv_chain(conv, x, first, diffs, paths), full, len(snapshots), EXACT)


@pytest.mark.parametrize("kwargs", [{}, {"improved": True}, {"add_self_loops": False}], ids=["default", "improved", "no_loops"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_gcn_aggregate_chain_equals_gcn_aggregate(kwargs: dict[str, Any], data: st.DataObject) -> None:
    snapshots = data.draw(snapshot_chains())
    paths = data.draw(paths_strategy(len(snapshots) - 1))
    x, first, diffs = chain_inputs(snapshots, data.draw(whole_strategy(len(snapshots) - 1)))
    outs = gcn_aggregate_chain(x, first, diffs, paths, **kwargs)
    assert len(outs) == len(snapshots)
    for out, snapshot in zip(outs, snapshots, strict=True):
        torch.testing.assert_close(out, gcn_aggregate(snapshot.x, *coalesced(snapshot), **kwargs), **EXACT)


@pytest.mark.parametrize("kwargs", [{}, {"improved": True}, {"add_self_loops": False}], ids=["default", "improved", "no_loops"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_selective_projection_chain_equals_projecting_every_aggregation(kwargs: dict[str, Any], data: st.DataObject) -> None:
    """REAL's case 2: aggregate, then project only the rows whose aggregation changed; outputs and
    the gradients of the weight and bias equal projecting every snapshot's aggregation whole."""
    snapshots = data.draw(snapshot_chains(features=FEATURES))
    paths = data.draw(paths_strategy(len(snapshots) - 1))
    torch.manual_seed(0)
    projection = nn.Linear(FEATURES, 5).double()
    x, first, diffs = chain_inputs(snapshots, data.draw(whole_strategy(len(snapshots) - 1)))

    def full(t: int) -> torch.Tensor:
        return projection(gcn_aggregate(snapshots[t].x, *coalesced(snapshots[t]), **kwargs))

    def chain() -> list[torch.Tensor]:
        return projected_gcn_chain(x, projection.weight, projection.bias, first, diffs, paths, **kwargs, project_first=False)

    assert_chain_matches(projection, chain, full, len(snapshots), EXACT)


def test_selective_projection_counts_the_rows_a_known_diff_rewrites() -> None:
    """Hand count on 4 nodes (edges 0->1, 2->3; the next snapshot adds 0->3): node 3's in-degree
    changes, so its scale, its filled self-loop and its aggregation change; no other row does.
    The first snapshot is projected whole (4 rows), the second on row 3 alone."""
    features, width = 3, 5
    x = torch.randn(4, features, dtype=torch.float64)
    edges = [torch.tensor([[0, 2], [1, 3]]), torch.tensor([[0, 2, 0], [1, 3, 3]])]
    snapshots = [
        Snapshot(e, torch.ones(e.size(1), dtype=torch.float64), x, torch.zeros(4), torch.ones(4, dtype=torch.bool)) for e in edges
    ]
    projection = nn.Linear(features, width).double()
    x0, first, diffs = chain_inputs(snapshots)
    with flops.count_conv_flops() as counter:
        outs = projected_gcn_chain(x0, projection.weight, projection.bias, first, diffs, ["diff"], project_first=False)
    rows_projected = 4 + 1
    assert counter.by_kind["transform"] == 2 * rows_projected * features * width
    torch.testing.assert_close(outs[1], projection(gcn_aggregate(x, edges[1])), **EXACT)
    assert torch.equal(outs[1][:3], outs[0][:3])  # the rows the diff left are the last snapshot's, not recomputed


@pytest.mark.parametrize("heads,concat", [(1, True), (3, True), (2, False)])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_gat_conv_chain_equals_gatconv_on_the_raw_multigraph(heads: int, concat: bool, data: st.DataObject) -> None:
    snapshots = data.draw(snapshot_chains(features=FEATURES))
    paths = data.draw(paths_strategy(len(snapshots) - 1))
    add_self_loops = data.draw(st.booleans())
    scale = data.draw(st.sampled_from([1.0, 8.0]))  # large attention logits: exp must not overflow
    torch.manual_seed(1)
    conv = GATConv(FEATURES, 3, heads=heads, concat=concat, add_self_loops=add_self_loops).double()
    with torch.no_grad():
        conv.att_src.mul_(scale)
        conv.att_dst.mul_(scale)
        conv.bias.normal_()
    x, first, diffs = chain_inputs(snapshots, data.draw(whole_strategy(len(snapshots) - 1)))

    def full(t: int) -> torch.Tensor:  # parallel edges and self-loops exactly as given
        return conv(snapshots[t].x, snapshots[t].edge_index)

    assert_chain_matches(conv, lambda: gat_conv_chain(conv, x, first, diffs, paths), full, len(snapshots), EXACT)


def test_gat_chain_survives_removing_the_dominant_edge_and_huge_scores() -> None:
    """A target whose dominant attention term disappears is recomputed (no cancellation), and
    scores far above the first snapshot's maximum raise the shift (no overflow)."""
    n = 4
    x = torch.tensor([[0.0], [1.0], [-1.0], [0.5]], dtype=torch.float64)
    conv = GATConv(1, 1, heads=1).double()
    with torch.no_grad():
        conv.lin.weight.fill_(1.0)
        conv.att_src.fill_(60.0)
        conv.att_dst.fill_(0.0)
    mask = torch.ones(n, dtype=torch.bool)

    def snap(edges: list[tuple[int, int]], feats: torch.Tensor) -> Snapshot:
        ei = torch.tensor(edges, dtype=torch.long).t()
        return Snapshot(ei, torch.ones(ei.size(1), dtype=torch.float64), feats, torch.zeros(n), mask)

    feats = x.clone()
    feats[2] = 3.0  # source 2 now scores 180, far above the shift: exp(180) overflows in float32
    snapshots = [
        snap([(1, 0), (2, 0), (3, 0)], x),
        snap([(2, 0), (3, 0)], x),
        snap([(2, 0), (3, 0)], feats),
        snap([(3, 0)], feats),
    ]
    outs = gat_conv_chain(conv, *chain_inputs(snapshots))
    for out, s in zip(outs, snapshots, strict=True):
        torch.testing.assert_close(out, conv(s.x, s.edge_index), **EXACT)
    conv32 = conv.float()
    s32 = [Snapshot(s.edge_index, s.edge_weight.float(), s.x.float(), s.y, s.node_mask) for s in snapshots]
    outs = gat_conv_chain(conv32, *chain_inputs(s32))
    for out, s in zip(outs, s32, strict=True):
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, conv32(s.x, s.edge_index), rtol=1e-5, atol=1e-5)


def test_float32_chain_on_a_synthetic_graph_is_within_1e5() -> None:
    """How far float32 drifts along a chain of 5 diffs; not an exactness claim (the float64 tests above
    make that). Each output sums ~7 neighbours' 8 features, ~60 terms, and each diff adds and subtracts
    such terms again, ~360 roundings of 6e-8 along a chain: as a random walk about sqrt(360) * 6e-8 ~
    1e-6 of the largest output. Measured: 3e-7 on the default, AVX2 and AVX-512 kernels alike, 30x
    inside the 1e-5 allowed."""
    graph = SyntheticSource(
        num_nodes=500, avg_degree=6, num_snapshots=6, change_rate=0.1, growth="stackoverflow", feature_dim=8
    ).load()
    snapshots = list(graph.snapshots)
    x, first, diffs = chain_inputs(snapshots)
    torch.manual_seed(0)
    gcn = GCNConv(8, 24)
    outs = gcn_conv_chain(gcn, x, first, diffs)
    gat = GATConv(8, 6, heads=4)
    gat_outs = gat_conv_chain(gat, x, first, diffs)
    for s, out, gat_out in zip(snapshots, outs, gat_outs, strict=True):
        ref = gcn(s.x, s.edge_index, s.edge_weight)
        assert (out - ref).abs().max() <= 1e-5 * ref.abs().max()
        ref = gat(s.x, s.edge_index)
        assert (gat_out - ref).abs().max() <= 1e-5 * ref.abs().max()


def test_gat_chain_refuses_attention_dropout_while_training() -> None:
    snapshots = changing_group(length=2)
    conv = GATConv(4, 2, dropout=0.3)
    with pytest.raises(ValueError, match="attention dropout off"):
        gat_conv_chain(conv, *chain_inputs(snapshots))
    conv.eval()
    assert len(gat_conv_chain(conv, *chain_inputs(snapshots))) == 2


def test_paths_are_validated() -> None:
    assert resolve_paths(None, 2) == ["diff", "diff"]
    assert resolve_paths(["full", "diff"], 2) == ["full", "diff"]
    assert resolve_paths(["full", "diff", "full"], 2) == ["diff", "full"]
    with pytest.raises(ValueError, match="first snapshot is always computed in full"):
        resolve_paths(["diff", "diff", "full"], 2)
    with pytest.raises(ValueError, match="3 entries for 1 diff maps"):
        resolve_paths(["diff"] * 3, 1)
    with pytest.raises(ValueError, match="unknown path 'fast'"):
        resolve_paths(["fast"], 1)


def _group_with_small_changes(seed: int, classes: int = 0) -> list[Snapshot]:
    """Snapshots sharing one feature tensor, each a few edges away from the last, plus one with new rows."""
    base = changing_group(num_nodes=12, seed=seed, classes=classes, length=1)[0]
    gen = torch.Generator().manual_seed(seed)
    snapshots = [base]
    for t in range(3):
        prev = snapshots[-1]
        keep = torch.rand(prev.num_edges, generator=gen) > 0.2
        add = torch.randint(12, (2, 4), generator=gen)
        x = prev.x
        if t == 2:
            x = x.clone()
            x[[1, 7]] += 1.0
        snapshots.append(
            Snapshot(
                torch.cat([prev.edge_index[:, keep], add], dim=1),
                torch.cat([prev.edge_weight[keep], torch.rand(4, generator=gen) + 0.5]),
                x,
                prev.y,
                prev.node_mask,
            )
        )
    return snapshots


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name", REUSABLE)
def test_models_with_precomputed_first_layer_convs_equal_full_models(name: str, train: bool) -> None:
    """In float64: the two paths sum the same messages in different orders, which in float32 moves a
    gradient element by a few ulps of the terms summed into it (2e-6 against a 1e-6 bound on AVX2 and
    AVX-512 kernels, under it on the default ones). In float64 that rounding is ~1e-15 relative, so
    ``EXACT`` (1e-9) leaves six orders of margin on every kernel set and still catches a wrong row."""
    overrides: dict[str, Any] = {"dropout": 0.3} if name == "mpnn_lstm" and train else {}
    model: DGNN = build(name, num_layers=2, **overrides).train(train).double()
    layer = model.layers[0]
    with torch.no_grad():  # PyG's zero bias makes an isolated zero-feature row sit exactly on ReLU's kink,
        for module in model.modules():  # where a 1e-17 difference flips the subgradient
            if isinstance(module, (GCNConv, GATConv)) and module.bias is not None:
                module.bias.normal_()
    assert layer.reuse == {"gat_lstm": "gat", "evolvegcn_o": "gcn_aggregate", "evolvegcn_h": "gcn_aggregate"}.get(name, "gcn")
    for snapshots in (in_float64(_group_with_small_changes(3)), in_float64(changing_group(seed=2, length=4))):
        x, first, diffs = chain_inputs(snapshots)
        torch.manual_seed(5)
        outs = layer.conv_chain(x, first, diffs)
        reused = model(snapshots, first_conv_outs=outs)
        grads_reused = torch.autograd.grad(reused.pow(2).sum(), list(model.parameters()), allow_unused=True)
        torch.manual_seed(5)
        plain = model(snapshots)
        grads_plain = torch.autograd.grad(plain.pow(2).sum(), list(model.parameters()), allow_unused=True)
        torch.testing.assert_close(reused, plain, **EXACT)
        for (pname, _), a, b in zip(model.named_parameters(), grads_reused, grads_plain, strict=True):
            assert (a is None) == (b is None), pname
            if a is not None:
                torch.testing.assert_close(a, b, **EXACT, msg=lambda m, pname=pname: f"{name} {pname}: {m}")


def test_forward_rejects_a_wrong_number_of_first_layer_outputs() -> None:
    model = build("tgcn")
    snapshots = changing_group(length=3)
    outs = model.layers[0].conv_chain(*chain_inputs(snapshots))
    with pytest.raises(ValueError, match="2 first-layer conv outputs for 3 snapshots"):
        model(snapshots, first_conv_outs=outs[:2])


# -- sets sized on the host: the same chain, found without reading sizes back ---------------------


def sized(first: EdgeSet, diffs: list[DiffMap], spec: GCNSpec) -> list[DiffMap]:
    """``diffs`` with the sizes of each incremental step, found on the host as the reuse engine
    finds them (``reuse.with_step_sizes``: the graph before each diff map, from the chain's first)."""
    out, before = [], first
    for diff in diffs:
        after = apply_diff(before, diff)
        out.append(replace(diff, step_sizes=gcn_step_sizes(before, after, diff, spec)))
        before = after
    return out


def assert_bitwise_same(module: nn.Module, plain: list[torch.Tensor], given: list[torch.Tensor]) -> None:
    """The same outputs and the same gradients of one random linear loss, bit for bit."""
    assert len(plain) == len(given)
    for a, b in zip(plain, given, strict=True):
        assert torch.equal(a, b)
    params = [p for p in module.parameters() if p.requires_grad]
    if not params or not any(o.requires_grad for o in plain):  # the aggregation alone has no parameters
        return
    weights = [torch.randn(o.shape, generator=torch.Generator().manual_seed(t), dtype=o.dtype) for t, o in enumerate(plain)]
    grads = [
        torch.autograd.grad(sum((o * w).sum() for o, w in zip(outs, weights, strict=True)), params, allow_unused=True)
        for outs in (plain, given)
    ]
    for a, b in zip(*grads, strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


KERNELS = ["gcn_conv", "gcn_conv_normalize_off", "gcn_conv_improved", "aggregate", "aggregate_no_loops", "case_2"]


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_chain_given_its_steps_sizes_by_the_host_computes_the_same_bits(kernel: str, data: st.DataObject) -> None:
    """With the sizes the host found, the kernels find their sets without reading a size back and
    compute exactly what they computed without them: outputs and gradients, bit for bit, on random
    multigraphs with self-loops coming and going, weight changes and changed feature rows."""
    snapshots = data.draw(snapshot_chains(features=FEATURES))
    paths = data.draw(paths_strategy(len(snapshots) - 1))
    x, first, diffs = chain_inputs(snapshots, data.draw(whole_strategy(len(snapshots) - 1)))
    torch.manual_seed(0)
    settings_of = {"gcn_conv_normalize_off": {"normalize": False}, "gcn_conv_improved": {"improved": True}}
    conv = GCNConv(FEATURES, 4, **settings_of.get(kernel, {})).double()
    chains: dict[str, tuple[GCNSpec, Callable[[list[DiffMap]], list[torch.Tensor]]]] = {
        "aggregate": (GCNSpec.of(), lambda d: gcn_aggregate_chain(x, first, d, paths)),
        "aggregate_no_loops": (
            GCNSpec.of(add_self_loops=False),
            lambda d: gcn_aggregate_chain(x, first, d, paths, add_self_loops=False),
        ),
        "case_2": (
            GCNSpec.of(),
            lambda d: projected_gcn_chain(x, conv.lin.weight, conv.bias, first, d, paths, project_first=False),
        ),
    }
    of_conv = GCNSpec.of(conv.improved, conv.add_self_loops, conv.normalize)
    spec, chain = chains.get(kernel, (of_conv, lambda d: gcn_conv_chain(conv, x, first, d, paths)))
    given_sizes = sized(first, diffs, spec)
    assert all(d.step_sizes is not None or d.is_full for d in given_sizes)
    assert_bitwise_same(conv, chain(diffs), chain(given_sizes))


def test_the_hosts_sizes_of_a_known_step() -> None:
    """Hand count on 4 nodes (edges 0->1, 2->3; the next snapshot adds 0->3 and changes row 2):
    node 3's in-degree changes and row 2 changed, so the sources are 2 and 3; their out-edges in
    the new graph are 2->3 alone (3 has none); the rows rewritten are 3 (the added edge's and the
    out-edge's target) and the filled self-loops of the sources, 2 and 3; the product has the
    out-edge and the added edge."""
    x = torch.randn(4, 3, dtype=torch.float64)
    y = x.clone()
    y[2] += 1.0
    edges = [torch.tensor([[0, 2], [1, 3]]), torch.tensor([[0, 0, 2], [1, 3, 3]])]
    before, after = (Snapshot(e, torch.ones(e.size(1), dtype=torch.float64), f, None, None) for e, f in zip(edges, (x, y)))
    diff = diff_snapshots(before, after)
    first = coalesce(before.edge_index, before.edge_weight, 4)
    sizes = gcn_step_sizes(first, apply_diff(first, diff), diff, GCNSpec.of())
    assert sizes is not None
    assert (sizes.sources, sizes.fill_nodes, sizes.out_edges, sizes.rows, sizes.entries) == (2, 2, 1, 2, 2)


def test_the_coalesced_matrix_is_the_one_torch_coalesces_to_and_gives_the_same_product(monkeypatch) -> None:
    """What a GPU would coalesce before its product (entries sorted, a repeated pair summed: the
    kernels repeat a pair at most twice, an edge removed and added again), built here without a
    read; on the GPU's path (played on CPU) the product is the coalesced matrix's, bit for bit."""
    gen = torch.Generator().manual_seed(3)
    rows, cols = torch.randint(0, 7, (40,), generator=gen), torch.randint(0, 9, (40,), generator=gen)
    keys = torch.unique(rows * 9 + cols)
    rows, cols = torch.div(keys, 9, rounding_mode="floor"), torch.remainder(keys, 9)
    twice = torch.randperm(keys.numel(), generator=gen)[:10]
    rows, cols = torch.cat([rows, rows[twice]]), torch.cat([cols, cols[twice]])
    shuffle = torch.randperm(rows.numel(), generator=gen)
    rows, cols = rows[shuffle], cols[shuffle]
    values = torch.randn(rows.numel(), generator=gen)
    indices, summed = coalesced_entries(rows, cols, values, 9, keys.numel())
    reference = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (7, 9), check_invariants=False).coalesce()
    assert torch.equal(indices, reference.indices()) and torch.equal(summed, reference.values())
    dense = torch.randn(9, 4, generator=gen)
    monkeypatch.setattr(diffmap, "on_gpu", lambda tensor: True)
    assert torch.equal(spmm(rows, cols, values, dense, 7, distinct=keys.numel()), torch.sparse.mm(reference, dense))


def test_a_node_set_of_selected_ids_with_its_size_given_is_the_same_set() -> None:
    ids, keep = torch.tensor([5, 1, 3]), torch.tensor([True, False, True])
    plain = node_set(8, (ids, keep), torch.tensor([0, 5]))
    sized_set = node_set(8, (ids, keep), torch.tensor([0, 5]), size=3)
    assert plain[0].tolist() == [0, 3, 5] and all(torch.equal(a, b) for a, b in zip(plain, sized_set, strict=True))
