"""The incremental GCN kernels: ``gcn_conv_chain`` (``GCNConv``: WD-GCN, MPNN-LSTM's first conv),
``projected_gcn_chain`` (a given projection: TGCN's folded gates) and ``gcn_aggregate_chain`` (the
parameter-free aggregation: EvolveGCN), each exact over a chain of snapshots (see the package)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import GCNConv

from dygsched.data.diffmap import DiffMap, EdgeSet, apply_diff, out_edge_positions
from dygsched.models import flops
from dygsched.models.flops import add_flops
from dygsched.models.incremental_kernels.chain import check_chain, resolve_paths, split_keys
from dygsched.models.incremental_kernels.spmm import node_set, spmm


def _inv_sqrt(deg: Tensor) -> Tensor:
    """``deg ** -0.5`` with 0 for degree 0, exactly as ``gcn_norm``."""
    out = deg.pow(-0.5)
    return out.masked_fill(out == float("inf"), 0.0)


@dataclass(frozen=True)
class GCNSpec:
    """What a GCN's incremental step depends on besides the graph: normalisation, and the weight
    of its filled self-loops (0 without self-loop filling)."""

    normalize: bool
    fill: float

    @classmethod
    def of(cls, improved: bool = False, add_self_loops: bool = True, normalize: bool = True) -> GCNSpec:
        """The spec of a ``GCNConv`` (or ``gcn_aggregate``) with these settings."""
        return cls(normalize, (2.0 if improved else 1.0) if normalize and add_self_loops else 0.0)


@dataclass(frozen=True)
class GCNStepSizes:
    """The sizes of one incremental step's sets, found on the host (``gcn_step_sizes``) and carried
    by its diff map (``DiffMap.step_sizes``): the sources (nodes whose ``y = s z`` may change), the
    nodes whose filled self-loop is rewritten, the sources' out-edges, the rows the step rewrites,
    and the distinct entries of its product. With them a GPU finds the same sets without reading
    their sizes back."""

    spec: GCNSpec
    sources: int
    fill_nodes: int
    out_edges: int
    rows: int
    entries: int


@dataclass(frozen=True)
class _StepSets:
    """One incremental step's sets (see ``_step_sets``)."""

    sources: Tensor
    fill_nodes: Tensor
    positions: Tensor  # the sources' out-edges in the new graph
    owner: Tensor  # the index into ``sources`` of each one's source
    out_dst: Tensor
    rows: Tensor
    local: Tensor  # node -> position in ``rows`` (-1 elsewhere)


def _self_loops(edges: EdgeSet) -> Tensor:
    """Whether each node has an explicit self-loop, found without a boolean selection."""
    n = edges.num_nodes
    src, dst = split_keys(edges.keys, n)
    return torch.zeros(n, dtype=torch.int32, device=src.device).index_add_(0, src, (src == dst).to(torch.int32)) > 0


def _loops_after(has_loop: Tensor, diff: DiffMap) -> Tensor:
    """``has_loop`` after ``diff``: its removed self-loops cleared, then its added ones set."""
    n = has_loop.numel()
    marks = []
    for keys in (diff.removed_keys, diff.added_keys):
        src, dst = split_keys(keys, n)
        marks.append(torch.zeros(n, dtype=torch.int32, device=src.device).index_add_(0, src, (src == dst).to(torch.int32)) > 0)
    removed, added = marks
    return (has_loop & ~removed) | added


def _step_sets(
    diff: DiffMap, edges: EdgeSet, old_loop: Tensor | None, has_loop: Tensor | None, spec: GCNSpec, sizes: GCNStepSizes | None
) -> _StepSets:
    """The sets of one incremental step from the graph alone (``edges``: the new graph; the loops
    before and after ``diff``): the sources, the nodes whose filled self-loop changes weight, the
    sources' out-edges and the rows that receive a message. A touched node is a source where its
    normalisation's input (weighted in-degree plus filled self-loop) changed, read from the diff
    map's degrees, or where its feature row changed. ``sizes``: the sets' sizes found on the host
    by this same function, with which none is read back."""
    n = diff.num_nodes
    changed = diff.changed_nodes
    fill_nodes = changed[:0]
    if spec.normalize:
        assert old_loop is not None and has_loop is not None
        touched = diff.touched_nodes
        degrees = diff.degree_after.dtype
        before = diff.degree_before + _fill_weights(spec, old_loop[touched], degrees)
        after = diff.degree_after + _fill_weights(spec, has_loop[touched], degrees)
        sources, _ = node_set(n, (touched, before != after), changed, size=sizes.sources if sizes else None)
        if spec.fill:
            loop_changed = has_loop[touched] != old_loop[touched]
            fill_nodes, _ = node_set(n, sources, (touched, loop_changed), size=sizes.fill_nodes if sizes else None)
    else:
        sources = changed
    positions, owner = out_edge_positions(edges.keys, sources, n, sizes.out_edges if sizes else None)
    out_dst = torch.remainder(edges.keys[positions], n)
    added_dst, removed_dst = torch.remainder(diff.added_keys, n), torch.remainder(diff.removed_keys, n)
    rows, local = node_set(n, out_dst, added_dst, removed_dst, fill_nodes, size=sizes.rows if sizes else None)
    return _StepSets(sources, fill_nodes, positions, owner, out_dst, rows, local)


def gcn_step_sizes(before: EdgeSet, after: EdgeSet, diff: DiffMap, spec: GCNSpec) -> GCNStepSizes | None:
    """The sizes of the incremental step from the graph ``before`` to ``after`` along ``diff``, on
    the host (the tensors where they are); ``None`` for a snapshot kept whole, which is aggregated
    in full."""
    if diff.is_full:
        return None
    old_loop = _self_loops(before) if spec.normalize else None
    has_loop = _loops_after(old_loop, diff) if old_loop is not None else None
    sets = _step_sets(diff, after, old_loop, has_loop, spec, None)
    # a product entry per out-edge, added and removed edge; an edge whose weight changed is both
    added, removed = diff.added_keys, diff.removed_keys  # sorted and distinct each
    shared = 0
    if added.numel() and removed.numel():
        at = torch.searchsorted(removed, added).clamp_(max=removed.numel() - 1)
        shared = int((removed[at] == added).sum())
    entries = sets.positions.numel() + added.numel() + removed.numel() - shared
    return GCNStepSizes(spec, sets.sources.numel(), sets.fill_nodes.numel(), sets.positions.numel(), sets.rows.numel(), entries)


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


def _fill_weights(spec: GCNSpec, has_loop: Tensor, dtype: torch.dtype) -> Tensor:
    return (~has_loop).to(dtype) * spec.fill


def _gcn_full(edges: EdgeSet, z: Tensor, spec: GCNSpec, bias: Tensor | None) -> _GCNState:
    """Aggregate ``z`` over the whole graph (GCN normalisation as ``gcn_norm``)."""
    n, width = z.shape
    src, dst = split_keys(edges.keys, n)
    coef = edges.weights.to(z.dtype)
    s = deg_raw = has_loop = None
    if spec.normalize:
        deg_raw = torch.zeros(n, dtype=z.dtype, device=z.device).index_add_(0, dst, coef)
        has_loop = _self_loops(edges)
        fill = _fill_weights(spec, has_loop, z.dtype)
        s = _inv_sqrt(deg_raw + fill)
        coef = coef * s[src]
    u = spmm(dst, src, coef, z, n, distinct=src.numel())  # one entry per distinct edge
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


def _gcn_diff(state: _GCNState, diff: DiffMap, edges: EdgeSet, z: Tensor, spec: GCNSpec, bias: Tensor | None) -> _GCNState:
    """One incremental step (see ``gcn_conv_chain`` for the math); ``edges``/``z`` are the new graph/features.
    The step's sets come from the graph alone (``_step_sets``), sized by the diff map's
    ``step_sizes`` where the host found them for this spec."""
    n, width = z.shape
    dtype = z.dtype
    added_src, added_dst = split_keys(diff.added_keys, n)
    removed_src, removed_dst = split_keys(diff.removed_keys, n)
    s_old, z_old = state.s, state.z
    s, deg_raw, old_loop, has_loop = s_old, state.deg_raw, state.has_loop, state.has_loop
    sizes = diff.step_sizes if isinstance(diff.step_sizes, GCNStepSizes) and diff.step_sizes.spec == spec else None
    if spec.normalize:
        assert s_old is not None and deg_raw is not None and old_loop is not None
        touched = diff.touched_nodes
        deg_raw = deg_raw.index_copy(0, touched, diff.degree_after.to(dtype))
        has_loop = _loops_after(old_loop, diff)
        s = s_old.index_copy(0, touched, _inv_sqrt(deg_raw[touched] + _fill_weights(spec, has_loop[touched], dtype)))
    sets = _step_sets(diff, edges, old_loop, has_loop, spec, sizes)
    sources, fill_nodes, pos, rows, local = sets.sources, sets.fill_nodes, sets.positions, sets.rows, sets.local
    fill_old = fill_new = None
    if fill_nodes.numel():
        assert old_loop is not None and has_loop is not None
        fill_old = _fill_weights(spec, old_loop[fill_nodes], dtype)
        fill_new = _fill_weights(spec, has_loop[fill_nodes], dtype)

    def y_rows(scale: Tensor | None, feats: Tensor, rows: Tensor) -> Tensor:
        return feats[rows] if scale is None else scale[rows].unsqueeze(-1) * feats[rows]

    def scaled(weights: Tensor, scale: Tensor | None, nodes: Tensor) -> Tensor:
        weights = weights.to(dtype)
        return weights if scale is None else weights * scale[nodes]

    # Every new out-edge of a source whose y = s * z changed carries the change dy; added (+) and
    # removed (-) edges carry the old y, so that an added edge from such a source totals w * y_new,
    # a removed one -w * y_old and an unchanged one w * dy. One product over [z_old; dy].
    dy = y_rows(s, z, sources) - y_rows(s_old, z_old, sources)
    delta = spmm(
        local[torch.cat([sets.out_dst, added_dst, removed_dst])],
        torch.cat([sets.owner + n, added_src, removed_src]),
        torch.cat(
            [
                edges.weights[pos].to(dtype),
                scaled(diff.added_weights, s_old, added_src),
                -scaled(diff.removed_weights, s_old, removed_src),
            ]
        ),
        torch.cat([z_old, dy]),
        rows.numel(),
        distinct=sizes.entries if sizes else None,
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
    spec: GCNSpec,
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
    check_chain(x, first, diffs)
    z = conv.lin(x)
    if flops.counting():
        add_flops("transform", 2 * x.size(0) * x.size(1) * z.size(1))
    return _gcn_chain(z, conv.lin, first, diffs, paths, GCNSpec.of(conv.improved, conv.add_self_loops, conv.normalize), conv.bias)


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
    check_chain(x, first, diffs)
    spec = GCNSpec.of(improved, add_self_loops)
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
