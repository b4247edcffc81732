"""Exact incremental first-layer convolutions over a chain of snapshots (REAL 4.1, IncreConv).

For consecutive snapshots ``t0 .. t1`` given as the first one's features and ``EdgeSet`` plus the
``DiffMap`` of each later one, these functions return the first layer's reusable convolution
output for every snapshot, equal (to float rounding) to running the convolution on each full
snapshot, and differentiable with respect to the convolution's parameters:

* ``gcn_conv_chain``: ``torch_geometric.nn.GCNConv`` (WD-GCN, MPNN-LSTM's first conv).
* ``projected_gcn_chain``: a GCN aggregation of a given projection plus bias (TGCN's folded gates).
* ``gcn_aggregate_chain``: the parameter-free ``gcn_aggregate`` (EvolveGCN).
* ``gat_conv_chain``: ``torch_geometric.nn.GATConv`` (GAT-LSTM).

The projection ``x @ W`` is computed once per chain and again only for the rows of
``changed_nodes`` (REAL 4.1.2, case 1 with selective transformation). The first snapshot is
aggregated in full, each later one from its diff map (``"diff"``) or from its full graph rebuilt
with ``apply_diff`` (``"full"``, which also restarts the incremental state), as ``paths`` says;
a snapshot kept whole (``DiffMap.is_full``) is always computed in full.

Graph semantics are those of the coalesced ``EdgeSet`` (see ``dygsched.data.diffmap``):
parallel edges are summed for GCN and counted for GAT, which is what PyG computes on the raw
edge list, except for repeated self-loops under GCN's self-loop filling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import GATConv, GCNConv

from dygsched.data.diffmap import DiffMap, EdgeSet, apply_diff, out_edge_positions
from dygsched.models import flops
from dygsched.models.flops import add_flops

PATHS = ("full", "diff")


def resolve_paths(paths: Sequence[str] | None, num_diffs: int) -> list[str]:
    """One path per diff map: ``paths`` may have ``num_diffs`` entries (one per later snapshot)
    or ``num_diffs + 1`` (one per snapshot, the first ``"full"``); ``None`` means all ``"diff"``."""
    if paths is None:
        return ["diff"] * num_diffs
    paths = list(paths)
    if len(paths) == num_diffs + 1:
        if paths[0] != "full":
            raise ValueError(f"the chain's first snapshot is always computed in full, got paths[0] = {paths[0]!r}")
        paths = paths[1:]
    if len(paths) != num_diffs:
        raise ValueError(f"paths has {len(paths)} entries for {num_diffs} diff maps (give one per diff map)")
    for path in paths:
        if path not in PATHS:
            raise ValueError(f"unknown path {path!r} (choose from {', '.join(PATHS)})")
    return paths


def _check_chain(x: Tensor, first: EdgeSet, diffs: Sequence[DiffMap]) -> None:
    if x.size(0) != first.num_nodes:
        raise ValueError(f"x has {x.size(0)} rows for a graph of {first.num_nodes} nodes")
    for t, diff in enumerate(diffs, start=1):
        if diff.num_nodes != first.num_nodes:
            raise ValueError(f"diff map {t} is over {diff.num_nodes} nodes, the chain's first graph over {first.num_nodes}")



def _inv_sqrt(deg: Tensor) -> Tensor:
    """``deg ** -0.5`` with 0 for degree 0, exactly as ``gcn_norm``."""
    out = deg.pow(-0.5)
    return out.masked_fill(out == float("inf"), 0.0)


def _split(keys: Tensor, n: int) -> tuple[Tensor, Tensor]:
    return torch.div(keys, n, rounding_mode="floor"), torch.remainder(keys, n)


# --------------------------------------------------------------------------------------------
# GCN


@dataclass(frozen=True)
class _GCNSpec:
    normalize: bool
    fill: float  # weight of the filled self-loops; 0 without self-loop filling


@dataclass(frozen=True)
class _GCNState:
    edges: EdgeSet
    z: Tensor  # transformed features [N, F]
    u: Tensor  # sum_i w_ij s_i z_i (+ fill_j s_j z_j): the cached aggregation before the target's scale
    out: Tensor  # s_j u_j + bias
    s: Tensor | None  # degree^-1/2 (None without normalisation)
    deg_raw: Tensor | None  # weighted in-degree, explicit self-loops included
    has_loop: Tensor | None  # whether a node has an explicit self-loop
    out_rows: Tensor | None = None  # the rows of ``out`` this step rewrote (None: all, a full aggregation)


def _fill_weights(spec: _GCNSpec, has_loop: Tensor, dtype: torch.dtype) -> Tensor:
    return (~has_loop).to(dtype) * spec.fill


def spmm(rows: Tensor, cols: Tensor, coef: Tensor, dense: Tensor, num_rows: int) -> Tensor:
    """``out[r] = sum_k coef[k] * dense[cols[k]]`` over the ``k`` with ``rows[k] = r``: ``[num_rows, F]``.

    One sparse-dense product (no ``[messages, F]`` intermediate); differentiable in ``dense``.
    """
    if rows.numel() == 0:
        return dense.new_zeros(num_rows, dense.size(1))
    size = (num_rows, dense.size(0))
    matrix = torch.sparse_coo_tensor(torch.stack([rows, cols]), coef.to(dense.dtype), size, check_invariants=False)
    return torch.sparse.mm(matrix, dense)


def node_set(num_nodes: int, *parts: Tensor) -> tuple[Tensor, Tensor]:
    """The sorted distinct ids in ``parts`` and a map from id to position in them (-1 elsewhere)."""
    device = parts[0].device
    mark = torch.zeros(num_nodes, dtype=torch.bool, device=device)
    for part in parts:
        mark[part] = True
    ids = mark.nonzero().flatten()
    local = torch.full((num_nodes,), -1, dtype=torch.long, device=device)
    local[ids] = torch.arange(ids.numel(), device=device)
    return ids, local


def _gcn_full(edges: EdgeSet, z: Tensor, spec: _GCNSpec, bias: Tensor | None) -> _GCNState:
    """Aggregate ``z`` over the whole graph (GCN normalisation as ``gcn_norm``)."""
    n, width = z.shape
    src, dst = _split(edges.keys, n)
    coef = edges.weights.to(z.dtype)
    s = deg_raw = has_loop = None
    if spec.normalize:
        deg_raw = torch.zeros(n, dtype=z.dtype, device=z.device).index_add_(0, dst, coef)
        has_loop = torch.zeros(n, dtype=torch.bool, device=z.device)
        has_loop[src[src == dst]] = True
        fill = _fill_weights(spec, has_loop, z.dtype)
        s = _inv_sqrt(deg_raw + fill)
        coef = coef * s[src]
    u = spmm(dst, src, coef, z, n)
    messages = src.numel()
    if s is not None and spec.fill:
        u = u + (fill * s).unsqueeze(-1) * z
        messages += n
    out = u if s is None else s.unsqueeze(-1) * u
    if bias is not None:
        out = out + bias
    if flops.counting():
        if s is not None:
            add_flops("normalize", 2 * src.numel() + 3 * n)
            add_flops("elementwise", n * width)
        add_flops("aggregate", 2 * messages * width)
        if bias is not None:
            add_flops("elementwise", n * width)
    return _GCNState(edges, z, u, out, s, deg_raw, has_loop)


def _gcn_diff(state: _GCNState, diff: DiffMap, edges: EdgeSet, z: Tensor, spec: _GCNSpec, bias: Tensor | None) -> _GCNState:
    """One incremental step (see ``gcn_conv_chain`` for the math); ``edges``/``z`` are the new graph/features."""
    n, width = z.shape
    dtype = z.dtype
    added_src, added_dst = _split(diff.added_keys, n)
    removed_src, removed_dst = _split(diff.removed_keys, n)
    changed = diff.changed_nodes
    s_old, z_old = state.s, state.z
    s, deg_raw, has_loop = s_old, state.deg_raw, state.has_loop
    fill_nodes = changed[:0]
    fill_old = fill_new = None
    if spec.normalize:
        assert s_old is not None and deg_raw is not None and has_loop is not None
        touched = diff.touched_nodes
        deg_raw = deg_raw.index_copy(0, touched, diff.degree_after.to(dtype))
        old_loop = has_loop
        has_loop = has_loop.clone()
        has_loop[removed_src[removed_src == removed_dst]] = False
        has_loop[added_src[added_src == added_dst]] = True
        s_touched = _inv_sqrt(deg_raw[touched] + _fill_weights(spec, has_loop[touched], dtype))
        s = s_old.index_copy(0, touched, s_touched)
        sources, _ = node_set(n, touched[s_touched != s_old[touched]], changed)
        if spec.fill:
            loop_changed = touched[has_loop[touched] != old_loop[touched]]
            fill_nodes, _ = node_set(n, sources, loop_changed)
            fill_old = _fill_weights(spec, old_loop[fill_nodes], dtype)
            fill_new = _fill_weights(spec, has_loop[fill_nodes], dtype)
    else:
        sources = changed

    def y_rows(scale: Tensor | None, feats: Tensor, rows: Tensor) -> Tensor:
        return feats[rows] if scale is None else scale[rows].unsqueeze(-1) * feats[rows]

    def scaled(weights: Tensor, scale: Tensor | None, nodes: Tensor) -> Tensor:
        weights = weights.to(dtype)
        return weights if scale is None else weights * scale[nodes]

    # Every new out-edge of a source whose y = s * z changed carries the change dy; added (+) and
    # removed (-) edges carry the old y, so that an added edge from such a source totals w * y_new,
    # a removed one -w * y_old and an unchanged one w * dy. One product over [z_old; dy].
    dy = y_rows(s, z, sources) - y_rows(s_old, z_old, sources)
    pos, owner = out_edge_positions(edges.keys, sources, n)
    out_dst = torch.remainder(edges.keys[pos], n)
    rows, local = node_set(n, out_dst, added_dst, removed_dst, fill_nodes)
    delta = spmm(
        local[torch.cat([out_dst, added_dst, removed_dst])],
        torch.cat([owner + n, added_src, removed_src]),
        torch.cat(
            [
                edges.weights[pos].to(dtype),
                scaled(diff.added_weights, s_old, added_src),
                -scaled(diff.removed_weights, s_old, removed_src),
            ]
        ),
        torch.cat([z_old, dy]),
        rows.numel(),
    )
    if fill_nodes.numel():
        assert fill_old is not None and fill_new is not None
        fill_delta = fill_new.unsqueeze(-1) * y_rows(s, z, fill_nodes) - fill_old.unsqueeze(-1) * y_rows(s_old, z_old, fill_nodes)
        delta = delta.index_add(0, local[fill_nodes], fill_delta)
    u = state.u.index_add(0, rows, delta)
    new_rows = u[rows] if s is None else s[rows].unsqueeze(-1) * u[rows]
    if bias is not None:
        new_rows = new_rows + bias
    out = state.out.index_copy(0, rows, new_rows)
    if flops.counting():
        is_scaled = s is not None
        messages = pos.numel() + diff.added_keys.numel() + diff.removed_keys.numel() + fill_nodes.numel()
        add_flops("aggregate", 2 * messages * width)
        if is_scaled:
            add_flops("normalize", 2 * diff.touched_nodes.numel() + diff.added_keys.numel() + diff.removed_keys.numel())
        row_ops = sources.numel() * (1 + 2 * is_scaled) + 5 * fill_nodes.numel()
        row_ops += rows.numel() * (1 + is_scaled + (bias is not None))  # u + delta, rescale, bias
        add_flops("elementwise", row_ops * width)
    return _GCNState(edges, z, u, out, s, deg_raw, has_loop, out_rows=rows)


def _update_features(z: Tensor, diff: DiffMap, transform: Callable[[Tensor], Tensor] | None) -> Tensor:
    """``z`` with the changed rows re-projected (selective transformation)."""
    if diff.changed_nodes.numel() == 0:
        return z
    rows = diff.changed_x.to(z.dtype)
    if transform is not None:
        rows = transform(rows)
        if flops.counting():
            add_flops("transform", 2 * rows.size(0) * diff.changed_x.size(1) * rows.size(1))
    return z.index_copy(0, diff.changed_nodes, rows)


def _gcn_chain(
    z: Tensor,
    transform: Callable[[Tensor], Tensor] | None,
    first: EdgeSet,
    diffs: Sequence[DiffMap],
    paths: Sequence[str] | None,
    spec: _GCNSpec,
    bias: Tensor | None,
    after: Callable[[Tensor], Tensor] | None = None,
) -> list[Tensor]:
    """The chain's outputs; ``after`` (a row-wise map, e.g. a projection) applied to them, on a
    step's rewritten rows only (the rows the incremental update left are the last step's)."""
    chosen = resolve_paths(paths, len(diffs))
    state = _gcn_full(first, z, spec, bias)
    outs = [state.out if after is None else after(state.out)]
    for diff, path in zip(diffs, chosen, strict=True):
        edges = apply_diff(state.edges, diff)
        z = _update_features(state.z, diff, transform)
        full = path == "full" or diff.is_full  # a snapshot kept whole has no edge changes to apply
        state = _gcn_full(edges, z, spec, bias) if full else _gcn_diff(state, diff, edges, z, spec, bias)
        if after is None:
            outs.append(state.out)
        elif state.out_rows is None:
            outs.append(after(state.out))
        else:
            outs.append(outs[-1].index_copy(0, state.out_rows, after(state.out[state.out_rows])))
    return outs


def gcn_conv_chain(
    conv: GCNConv, x: Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
) -> list[Tensor]:
    """``conv`` on every snapshot of the chain (``1 + len(diffs)`` outputs), incrementally.

    With ``s_j = d_j^-1/2`` (``d_j``: weighted in-degree plus the filled self-loop, as PyG's
    ``gcn_norm``) and ``z = x W``, GCN is ``out_j = s_j * u_j + b`` with
    ``u_j = sum_i w_ij s_i z_i``. The chain caches ``u``. REAL's eq. 3-4 update ``u`` with the
    added edges (new degrees) and the removed ones (old degrees) only; that is exact only when no
    degree changes, because every *unchanged* edge leaving a node whose degree changed changes
    its normalised weight too, and every row whose own degree changed is rescaled. Here, with
    ``y_i = s_i z_i`` and ``S`` the nodes whose ``y`` changed (degree or feature row), the signed
    edge list for one step is:

    * every out-edge ``(i, j)`` of ``i in S`` in the new graph: ``+w_ij (y_i' - y_i)``;
    * every added edge: ``+w_ij y_i``; every removed edge: ``-w_ij y_i`` (old ``y``);
    * the filled self-loop of every node whose ``y`` or loop status changed:
      ``fill_j' y_j' - fill_j y_j``.

    These sum to exactly ``u' - u`` (an added edge out of ``S`` totals ``w y'``, a removed one
    ``-w y``, an unchanged one ``w (y' - y)``). Then every row that received a message (this
    includes every row whose degree changed) is recomputed as ``s_j' u_j' + b``. The extra edges
    are the out-edges of the nodes in ``S`` (found by range in the rebuilt sorted ``EdgeSet``);
    the degrees come from the diff map. ``conv.normalize=False`` makes every ``s = 1`` (only
    changed feature rows enter ``S``). Each step is one sparse-dense product (``spmm``) of the
    signed edge list with ``[z; dy]`` (the scale ``s_i`` folded into the coefficients), then the
    touched rows of ``u`` and of the output are updated out of place (autograd flows through).
    """
    if conv.flow != "source_to_target":
        raise ValueError(f"gcn_conv_chain supports flow='source_to_target' only, got {conv.flow!r}")
    _check_chain(x, first, diffs)
    fill = (2.0 if conv.improved else 1.0) if conv.normalize and conv.add_self_loops else 0.0
    z = conv.lin(x)
    if flops.counting():
        add_flops("transform", 2 * x.size(0) * x.size(1) * z.size(1))
    return _gcn_chain(z, conv.lin, first, diffs, paths, _GCNSpec(conv.normalize, fill), conv.bias)


def projected_gcn_chain(
    x: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    first: EdgeSet,
    diffs: Sequence[DiffMap],
    paths: Sequence[str] | None = None,
    improved: bool = False,
    add_self_loops: bool = True,
    project_first: bool = True,
) -> list[Tensor]:
    """A GCN whose projection is given as a matrix (TGCN's gate linears folded into its
    convolution), or none (``weight=None``: the aggregation alone), on every snapshot of the chain,
    incrementally.

    ``project_first``: ``gcn_aggregate(x @ weight^T) + bias``, the same update as
    ``gcn_conv_chain`` (REAL 4.1.2, case 1: ``x @ weight^T`` once per chain, again only for changed
    feature rows). Otherwise ``gcn_aggregate(x) @ weight^T + bias``: the aggregation incrementally,
    then the projection, again only for the rows whose aggregation a step rewrote (case 2, the
    "selective MatMul": a node whose neighbourhood did not change keeps its projected row); a step
    the chain aggregates whole (``"full"``, or a snapshot kept whole) is projected whole."""
    _check_chain(x, first, diffs)
    spec = _GCNSpec(True, (2.0 if improved else 1.0) if add_self_loops else 0.0)
    if weight is None:
        return _gcn_chain(x, None, first, diffs, paths, spec, bias)
    if not project_first:

        def project(rows: Tensor) -> Tensor:
            if flops.counting():
                add_flops("transform", 2 * rows.size(0) * rows.size(1) * weight.size(0))
                if bias is not None:
                    add_flops("elementwise", rows.size(0) * weight.size(0))
            return F.linear(rows, weight, bias)

        return _gcn_chain(x, None, first, diffs, paths, spec, None, after=project)
    z = F.linear(x, weight)
    if flops.counting():
        add_flops("transform", 2 * x.size(0) * x.size(1) * z.size(1))
    return _gcn_chain(z, lambda rows: F.linear(rows, weight), first, diffs, paths, spec, bias)


def gcn_aggregate_chain(
    x: Tensor,
    first: EdgeSet,
    diffs: Sequence[DiffMap],
    paths: Sequence[str] | None = None,
    improved: bool = False,
    add_self_loops: bool = True,
) -> list[Tensor]:
    """``gcn_aggregate`` (``D^-1/2 (A + I) D^-1/2 x``) on every snapshot of the chain, incrementally:
    ``projected_gcn_chain`` with no projection and no bias (EvolveGCN, whose projection weights
    change with every snapshot; TGCN where it aggregates first)."""
    return projected_gcn_chain(x, None, None, first, diffs, paths, improved, add_self_loops)


# --------------------------------------------------------------------------------------------
# GAT


@dataclass(frozen=True)
class _GATState:
    edges: EdgeSet
    z: Tensor  # [N, H, C]
    a_src: Tensor  # [N, H]
    a_dst: Tensor  # [N, H]
    res: Tensor | None  # residual projection [N, out]
    shift: Tensor  # [N, H], detached: exp(e - shift) never overflows at the time it was set
    denom: Tensor  # [N, H]: sum_i c_ij exp(e_ij - shift_j)
    num: Tensor  # [N, H, C]: sum_i c_ij exp(e_ij - shift_j) z_i
    out: Tensor


def _gat_edges(edges: EdgeSet, add_self_loops: bool, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
    """GATConv's edge multiset: every key ``count`` times, self-loops replaced by one per node."""
    n = edges.num_nodes
    src, dst = _split(edges.keys, n)
    cnt = edges.counts.to(dtype)
    if add_self_loops:
        keep = src != dst
        loops = torch.arange(n, device=src.device)
        src, dst = torch.cat([src[keep], loops]), torch.cat([dst[keep], loops])
        cnt = torch.cat([cnt[keep], torch.ones(n, dtype=dtype, device=src.device)])
    return src, dst, cnt


def _scores(conv: GATConv, a_src: Tensor, a_dst: Tensor, src: Tensor, dst: Tensor) -> Tensor:
    return F.leaky_relu(a_src[src] + a_dst[dst], conv.negative_slope)


def _softmax_parts(e: Tensor, dst: Tensor, cnt: Tensor, vec: Tensor, num_rows: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per-target shift (max score), denominator and numerator of the messages ``(e, dst, cnt, vec)``."""
    heads = e.size(1)
    shift = torch.full((num_rows, heads), float("-inf"), dtype=e.dtype, device=e.device)
    shift = shift.scatter_reduce(0, dst.unsqueeze(-1).expand(-1, heads), e.detach(), "amax", include_self=True)
    p = cnt.unsqueeze(-1) * torch.exp(e - shift[dst])
    denom = torch.zeros(num_rows, heads, dtype=e.dtype, device=e.device).index_add(0, dst, p)
    num = torch.zeros(num_rows, heads, vec.size(-1), dtype=e.dtype, device=e.device).index_add(0, dst, p.unsqueeze(-1) * vec)
    return shift, denom, num


def _gat_finish(conv: GATConv, num: Tensor, denom: Tensor, res: Tensor | None) -> Tensor:
    safe = torch.where(denom > 0, denom, torch.ones_like(denom))
    h = num / safe.unsqueeze(-1)  # rows without in-edges have num = 0
    out = h.reshape(h.size(0), h.size(1) * h.size(2)) if conv.concat else h.mean(dim=1)
    if res is not None:
        out = out + res
    if conv.bias is not None:
        out = out + conv.bias
    if flops.counting():
        rows, width = h.size(0), h.size(1) * h.size(2)
        out_width = out.size(1)
        add_flops("elementwise", rows * width + (0 if conv.concat else rows * width))
        add_flops("elementwise", rows * out_width * ((res is not None) + (conv.bias is not None)))
    return out


def _gat_project(conv: GATConv, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``z = x W`` as ``[rows, H, C]``, the source/target logits and the residual, for rows of ``x``."""
    heads, channels = conv.heads, conv.out_channels
    z = conv.lin(x).view(-1, heads, channels)
    a_src = (z * conv.att_src).sum(dim=-1)
    a_dst = (z * conv.att_dst).sum(dim=-1)
    res = conv.res(x) if conv.res is not None else None
    if flops.counting():
        rows, width = x.size(0), heads * channels
        add_flops("transform", 2 * rows * x.size(1) * width + (2 * rows * x.size(1) * res.size(1) if res is not None else 0))
        add_flops("attention", 4 * rows * width)
    return z, a_src, a_dst, res


def _gat_full(conv: GATConv, edges: EdgeSet, z: Tensor, a_src: Tensor, a_dst: Tensor, res: Tensor | None) -> _GATState:
    n = z.size(0)
    src, dst, cnt = _gat_edges(edges, conv.add_self_loops, z.dtype)
    e = _scores(conv, a_src, a_dst, src, dst)
    shift, denom, num = _softmax_parts(e, dst, cnt, z[src], n)
    if flops.counting():
        add_flops("attention", 5 * src.numel() * conv.heads)
        add_flops("aggregate", 2 * src.numel() * z.size(1) * z.size(2))
    out = _gat_finish(conv, num, denom, res)
    return _GATState(edges, z, a_src, a_dst, res, shift, denom, num, out)


def _gat_diff(
    conv: GATConv,
    state: _GATState,
    diff: DiffMap,
    edges: EdgeSet,
    z: Tensor,
    a_src: Tensor,
    a_dst: Tensor,
    res: Tensor | None,
) -> _GATState:
    """One softmax-aware incremental step (REAL eq. 5-8); see ``gat_conv_chain``."""
    n, heads, channels = z.shape
    dtype, device = z.dtype, z.device
    changed = diff.changed_nodes
    is_changed = torch.zeros(n, dtype=torch.bool, device=device)
    is_changed[changed] = True

    # Net multiplicity change per key (a weight-only change cancels: GAT ignores weights).
    keys = torch.cat([diff.added_keys, diff.removed_keys])
    signed = torch.cat([diff.added_counts.to(dtype), -diff.removed_counts.to(dtype)])
    keys, inverse = torch.unique(keys, return_inverse=True)
    delta = torch.zeros(keys.numel(), dtype=dtype, device=device).index_add_(0, inverse, signed)
    src, dst = _split(keys, n)
    keep = (delta != 0) & ~is_changed[src] & ~is_changed[dst]
    if conv.add_self_loops:
        keep &= src != dst
    src, dst, delta = src[keep], dst[keep], delta[keep]
    t_dst, t_coef = [dst], [delta]
    t_e = [_scores(conv, a_src, a_dst, src, dst)]
    t_vec = [z[src]]
    if changed.numel():
        # Out-edges of changed feature rows: their old terms out, their new terms in.
        for graph, coef_sign, zz, aa in ((state.edges, -1.0, state.z, state.a_src), (edges, 1.0, z, a_src)):
            pos, _ = out_edge_positions(graph.keys, changed, n)
            o_src, o_dst = _split(graph.keys[pos], n)
            o_cnt = graph.counts[pos].to(dtype)
            ok = ~is_changed[o_dst]
            if conv.add_self_loops:
                ok &= o_src != o_dst
            o_src, o_dst, o_cnt = o_src[ok], o_dst[ok], o_cnt[ok]
            t_dst.append(o_dst)
            t_coef.append(coef_sign * o_cnt)
            t_e.append(_scores(conv, aa, a_dst, o_src, o_dst))
            t_vec.append(zz[o_src])
    t_dst_all, coef, e, vec = torch.cat(t_dst), torch.cat(t_coef), torch.cat(t_e), torch.cat(t_vec)

    # Targets whose removed mass is more than half their denominator are recomputed from their
    # in-edges (subtracting a dominant term would cancel catastrophically), and so are targets
    # whose own feature row changed (their a_dst changes every score of their neighbourhood).
    negative = coef < 0
    shift_old = state.shift
    neg_dst = t_dst_all[negative]
    removed_mass = torch.zeros(n, heads, dtype=dtype, device=device).index_add_(
        0, neg_dst, (-coef[negative]).unsqueeze(-1) * torch.exp(e[negative].detach() - shift_old[neg_dst])
    )
    heavy = (removed_mass > 0.5 * state.denom.detach()).any(dim=1)
    redo = heavy | is_changed
    kept = ~redo[t_dst_all]
    t_dst_all, coef, e, vec = t_dst_all[kept], coef[kept], e[kept], vec[kept]

    # The shift only grows (a new, larger score), so exp never overflows; grown rows are rescaled.
    positive = coef > 0
    shift = shift_old.scatter_reduce(
        0, t_dst_all[positive].unsqueeze(-1).expand(-1, heads), e[positive].detach(), "amax", include_self=True
    )
    grown = (shift > shift_old).any(dim=1).nonzero().flatten()
    denom, num = state.denom, state.num
    if grown.numel():
        factor = torch.exp(shift_old[grown] - shift[grown])
        denom = denom.index_copy(0, grown, denom[grown] * factor)
        num = num.index_copy(0, grown, num[grown] * factor.unsqueeze(-1))
    p = coef.unsqueeze(-1) * torch.exp(e - shift[t_dst_all])
    denom = denom.index_add(0, t_dst_all, p)
    num = num.index_add(0, t_dst_all, p.unsqueeze(-1) * vec)

    redo_nodes = redo.nonzero().flatten()
    recomputed = 0
    if redo_nodes.numel():
        g_src, g_dst, g_cnt = _gat_edges(edges, conv.add_self_loops, dtype)
        sel = redo[g_dst]
        g_src, g_dst, g_cnt = g_src[sel], g_dst[sel], g_cnt[sel]
        local = torch.full((n,), -1, dtype=torch.long, device=device)
        local[redo_nodes] = torch.arange(redo_nodes.numel(), device=device)
        r_shift, r_denom, r_num = _softmax_parts(
            _scores(conv, a_src, a_dst, g_src, g_dst), local[g_dst], g_cnt, z[g_src], redo_nodes.numel()
        )
        shift = shift.index_copy(0, redo_nodes, r_shift)
        denom = denom.index_copy(0, redo_nodes, r_denom)
        num = num.index_copy(0, redo_nodes, r_num)
        recomputed = g_src.numel()

    rows = torch.unique(torch.cat([t_dst_all, redo_nodes]))
    out = state.out.index_copy(0, rows, _gat_finish(conv, num[rows], denom[rows], None if res is None else res[rows]))
    if flops.counting():
        width = heads * channels
        terms = keep.sum() + sum(t.numel() for t in t_dst[1:])  # a tensor: summed when the counter is read
        add_flops("attention", (5 * terms + 3 * negative.sum() + 5 * recomputed) * heads)
        add_flops("aggregate", 2 * (t_dst_all.numel() + recomputed) * width)
        add_flops("elementwise", grown.numel() * (width + heads))
    return _GATState(edges, z, a_src, a_dst, res, shift, denom, num, out)


def gat_conv_chain(
    conv: GATConv, x: Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
) -> list[Tensor]:
    """``conv`` on every snapshot of the chain (``1 + len(diffs)`` outputs), incrementally.

    REAL eq. 5-8: per target ``j`` and head the chain keeps the softmax denominator
    ``D_j = sum_i c_ij exp(e_ij - m_j)`` and numerator ``sum_i c_ij exp(e_ij - m_j) z_i``
    (``c_ij``: multiplicity, ``m_j``: a per-target shift, the maximum score at the chain's first
    snapshot, detached as in PyG's softmax). An added or removed edge adds or subtracts its term;
    a row's output is numerator / denominator, so the rescaling of eq. 8 is implicit. To keep this
    exact and safe:

    * a new score above ``m_j`` raises ``m_j`` and rescales that row first (no overflow);
    * a row that loses more than half its denominator mass in one step, or whose own feature row
      changed, is recomputed from its in-edges in the rebuilt graph (no cancellation);
    * a changed feature row ``i`` re-projects ``z_i`` (selective transformation) and replaces the
      terms of all of its out-edges (old terms out, new terms in).

    As ``GATConv``: self-loops removed and one added per node (``add_self_loops``), edge weights
    ignored, parallel edges counted, heads concatenated or averaged, residual and bias added.
    Attention dropout cannot be reproduced incrementally: ``ValueError`` if ``conv.dropout > 0``
    in training mode.
    """
    if conv.dropout > 0 and conv.training:
        raise ValueError(f"gat_conv_chain needs attention dropout off in training mode (dropout={conv.dropout})")
    if conv.lin is None:
        raise ValueError("gat_conv_chain supports GATConv with one input width (no bipartite lin_src/lin_dst)")
    _check_chain(x, first, diffs)
    chosen = resolve_paths(paths, len(diffs))
    z, a_src, a_dst, res = _gat_project(conv, x)
    state = _gat_full(conv, first, z, a_src, a_dst, res)
    outs = [state.out]
    for diff, path in zip(diffs, chosen, strict=True):
        edges = apply_diff(state.edges, diff)
        z, a_src, a_dst, res = state.z, state.a_src, state.a_dst, state.res
        if diff.changed_nodes.numel():
            rows = diff.changed_nodes
            cz, ca_src, ca_dst, cres = _gat_project(conv, diff.changed_x.to(z.dtype))
            z, a_src, a_dst = z.index_copy(0, rows, cz), a_src.index_copy(0, rows, ca_src), a_dst.index_copy(0, rows, ca_dst)
            if res is not None and cres is not None:
                res = res.index_copy(0, rows, cres)
        if path == "full" or diff.is_full:
            state = _gat_full(conv, edges, z, a_src, a_dst, res)
        else:
            state = _gat_diff(conv, state, diff, edges, z, a_src, a_dst, res)
        outs.append(state.out)
    return outs
