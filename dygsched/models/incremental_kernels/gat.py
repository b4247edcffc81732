"""The incremental GAT kernel: ``gat_conv_chain`` (``GATConv``: GAT-LSTM), exact over a chain of
snapshots (see the package)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import GATConv

from dygsched.data.diffmap import DiffMap, EdgeSet, apply_diff, out_edge_positions
from dygsched.models import flops
from dygsched.models.flops import add_flops
from dygsched.models.incremental_kernels.chain import check_chain, resolve_paths, split_keys


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
    src, dst = split_keys(edges.keys, n)
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
    src, dst = split_keys(keys, n)
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
            o_src, o_dst = split_keys(graph.keys[pos], n)
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
    # every row rescaled by exp(old - new shift), exactly 1 where the shift did not grow: no row set
    # to find, so the host never waits for the device to count the grown rows
    grew = shift > shift_old
    factor = torch.where(grew, torch.exp(shift_old - shift), torch.ones_like(shift))
    denom, num = state.denom * factor, state.num * factor.unsqueeze(-1)
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
        add_flops("elementwise", grew.any(dim=1).sum() * (width + heads))  # a tensor: summed when the counter is read
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
    check_chain(x, first, diffs)
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
