"""Small random snapshot groups for the model tests: graphs whose node sets change over time."""

from __future__ import annotations

import dataclasses

import torch

from dygsched.data.temporal_graph import Snapshot, TemporalGraph


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
    num_nodes: int = 12,
    num_features: int = 4,
    seed: int = 0,
    classes: int = 0,
    length: int = 3,
    dtype: torch.dtype = torch.float32,
) -> list[Snapshot]:
    """``length`` snapshots whose node sets change: different nodes masked and isolated each time."""
    generator = torch.Generator().manual_seed(seed)
    patterns = [((0,), (1,)), ((2, 3), ()), ((), (0, 5))]
    return [
        random_snapshot(
            num_nodes, num_features, 3 * num_nodes, generator, *patterns[t % len(patterns)], classes=classes, dtype=dtype
        )
        for t in range(length)
    ]


def in_float64(snapshots: list[Snapshot]) -> list[Snapshot]:
    """The same snapshots with float64 weights, features and (regression) targets: for tests that claim
    two computations are equal, so that their rounding (1e-16, whatever CPU kernels run) cannot decide.
    A tensor that snapshots share (sources share one feature tensor) stays shared."""
    widened: dict[int, torch.Tensor] = {}

    def widen(t: torch.Tensor) -> torch.Tensor:
        if not t.is_floating_point():
            return t
        return widened.setdefault(id(t), t.double())

    return [Snapshot(s.edge_index, widen(s.edge_weight), widen(s.x), widen(s.y), s.node_mask) for s in snapshots]


def graph_in_float64(graph: TemporalGraph) -> TemporalGraph:
    """``graph`` with its snapshots :func:`in_float64`."""
    return dataclasses.replace(graph, snapshots=tuple(in_float64(list(graph.snapshots))))


# Two computations that claim to be equal, run in float64: orders of summation differ by ~1e-16 of the
# terms' magnitudes (1e-13 after a few training steps), so 1e-9 tells rounding from a wrong term on any
# CPU kernel set, while float32 rounding (1e-7 per sum, 1e-6 to 1e-5 after training) sits near any
# fixed tolerance one could pick for it.
EXACT64 = {"rtol": 1e-9, "atol": 1e-9}
