"""The incremental kernels: exact incremental first-layer convolutions over a chain of snapshots (REAL 4.1, IncreConv).

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

A GCN step's sets (the nodes whose scaled features change, the rows it rewrites, their edges)
depend on the graph alone: ``gcn_step_sizes`` finds their sizes on the host, where the diff maps
are built, and a diff map carries them (``DiffMap.step_sizes``) to the device, which then finds
the same sets without reading a size back (``GCNStepSizes``); the outputs are the same bits.

One module each: ``gcn.py`` (the three GCN chains and their steps' sizes), ``gat.py`` (the GAT
chain), ``spmm.py`` (the sparse-dense product and node sets the GCN update and the engine's
aggregation timing share), ``chain.py`` (a chain's ``paths`` and its checks).
"""

from dygsched.models.incremental_kernels.chain import PATHS, resolve_paths
from dygsched.models.incremental_kernels.gat import gat_conv_chain
from dygsched.models.incremental_kernels.gcn import (
    GCNSpec,
    GCNStepSizes,
    gcn_aggregate_chain,
    gcn_conv_chain,
    gcn_step_sizes,
    projected_gcn_chain,
)
from dygsched.models.incremental_kernels.spmm import node_set, spmm

__all__ = [
    "PATHS",
    "GCNSpec",
    "GCNStepSizes",
    "gat_conv_chain",
    "gcn_aggregate_chain",
    "gcn_conv_chain",
    "gcn_step_sizes",
    "node_set",
    "projected_gcn_chain",
    "resolve_paths",
    "spmm",
]
