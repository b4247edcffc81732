"""Node-partitioned ranks, shared by FlareDTDG and DistDy: what a rank holds of each snapshot (its
owned nodes, their incoming edges, its halo), the halo exchange with its gradient, and the layer
hooks that run a model's spatial parts with it. Partitions themselves are ``dygsched.data.partition.nodes``."""

from dygsched.engine.node_partition.exchange import HaloAccounting, PartitionedOps, exchange_halo, sum_over_ranks
from dygsched.engine.node_partition.hooks import PartitionHooks
from dygsched.engine.node_partition.layout import GCNNorm, PartitionedSnapshot, RankLayout, gcn_degrees

__all__ = [
    "GCNNorm",
    "HaloAccounting",
    "PartitionHooks",
    "PartitionedOps",
    "PartitionedSnapshot",
    "RankLayout",
    "exchange_halo",
    "gcn_degrees",
    "sum_over_ranks",
]
