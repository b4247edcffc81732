"""A chain of snapshots as the incremental kernels take it: the first snapshot's features and
``EdgeSet``, a ``DiffMap`` per later snapshot, and per diff map the path (``"full"``: rebuilt and
aggregated whole; ``"diff"``: updated from the diff map)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from dygsched.data.diffmap import DiffMap, EdgeSet

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


def check_chain(x: Tensor, first: EdgeSet, diffs: Sequence[DiffMap]) -> None:
    if x.size(0) != first.num_nodes:
        raise ValueError(f"x has {x.size(0)} rows for a graph of {first.num_nodes} nodes")
    for t, diff in enumerate(diffs, start=1):
        if diff.num_nodes != first.num_nodes:
            raise ValueError(f"diff map {t} is over {diff.num_nodes} nodes, the chain's first graph over {first.num_nodes}")


def split_keys(keys: Tensor, n: int) -> tuple[Tensor, Tensor]:
    return torch.div(keys, n, rounding_mode="floor"), torch.remainder(keys, n)
