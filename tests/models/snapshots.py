"""Small random snapshot groups for the model tests: graphs whose node sets change over time."""

from __future__ import annotations

import torch

from dygsched.data.temporal_graph import Snapshot


def random_snapshot(
    num_nodes: int,
    num_features: int,
    num_edges: int,
    generator: torch.Generator,
    inactive: tuple[int, ...] = (),
    isolated: tuple[int, ...] = (),
    classes: int = 0,
    dtype: torch.dtype = torch.float32,
) -> Snapshot:
    """A random directed graph over ``num_nodes`` ids, with weights, features and targets in ``dtype``.

    ``inactive`` nodes do not exist at this time (masked, zero features, no edges); ``isolated``
    nodes exist but have no edges. float64 values are the same under every CPU capability (torch's
    vectorised float32 ``randn`` gives other values under ``ATEN_CPU_CAPABILITY=default``).
    """
    mask = torch.ones(num_nodes, dtype=torch.bool)
    mask[list(inactive)] = False
    connectable = mask.clone()
    connectable[list(isolated)] = False
    ids = connectable.nonzero().flatten()
    src = ids[torch.randint(len(ids), (num_edges,), generator=generator)]
    dst = ids[torch.randint(len(ids), (num_edges,), generator=generator)]
    keep = src != dst
    edge_index = torch.stack([src[keep], dst[keep]])
    edge_weight = torch.rand(edge_index.size(1), generator=generator, dtype=dtype) + 0.5
    x = torch.randn(num_nodes, num_features, generator=generator, dtype=dtype) * mask.unsqueeze(-1)
    if classes:
        y = torch.randint(classes, (num_nodes,), generator=generator)
    else:
        y = torch.randn(num_nodes, generator=generator, dtype=dtype)
    return Snapshot(edge_index=edge_index, edge_weight=edge_weight, x=x, y=y, node_mask=mask)


def changing_group(
    num_nodes: int = 12, num_features: int = 4, seed: int = 0, classes: int = 0, length: int = 3, dtype: torch.dtype = torch.float32
) -> list[Snapshot]:
    """``length`` snapshots whose node sets change: different nodes masked and isolated each time."""
    generator = torch.Generator().manual_seed(seed)
    patterns = [((0,), (1,)), ((2, 3), ()), ((), (0, 5))]
    return [
        random_snapshot(num_nodes, num_features, 3 * num_nodes, generator, *patterns[t % len(patterns)], classes=classes, dtype=dtype)
        for t in range(length)
    ]
