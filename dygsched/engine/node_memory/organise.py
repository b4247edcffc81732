"""Sven's redundancy-free organisation (Algorithm 2) of a batch's vertex series.

A batch reads the node state of a time-ordered series of vertices ``V_o`` (roots, negatives and
sampled neighbours) and writes that of its positive endpoints; both series repeat vertices heavily
(the paper measures over 80% repeats). ``organise(series)`` gives the unique vertices ``V_u``, the
restore index ``Psi`` with ``V_o = V_u[Psi]``, and ``Phi``, each unique vertex's last position in
``V_o``. Only what crosses ranks is deduplicated: a rank fetches ``V_u``'s rows once and expands
them with ``Psi``, and sends each updated vertex once, its last (latest) occurrence ``Phi``; every
computed value is the same as without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RedundancyFree:
    """``unique`` (V_u, sorted), ``restore`` (Psi: ``series == unique[restore]``) and ``last``
    (Phi: ``series[last[i]] == unique[i]`` at its greatest position)."""

    unique: torch.Tensor
    restore: torch.Tensor
    last: torch.Tensor

    @property
    def redundancy(self) -> float:
        """The share of the series that repeats an earlier vertex (eta in the paper); 0 for an empty series."""
        total = int(self.restore.numel())
        return 1.0 - int(self.unique.numel()) / total if total else 0.0


def organise(series: torch.Tensor) -> RedundancyFree:
    unique, restore = torch.unique(series, return_inverse=True)
    positions = torch.arange(series.numel(), device=series.device)
    last = torch.full((unique.numel(),), -1, dtype=torch.int64, device=series.device)
    last.scatter_reduce_(0, restore, positions, reduce="amax")
    return RedundancyFree(unique, restore, last)


def latest_per_vertex(vertices: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Positions of each distinct vertex's entry with the greatest key (keys are unique event
    slots, so ties cannot happen): the write that wins when several events update one vertex."""
    order = torch.argsort(keys, stable=True)
    by_key = vertices[order]
    return order[organise(by_key).last]
