"""The linear cost model of DyGNeX appendix H / REAL eq. 16: ``t = a1*nodes + a2*edges + a3``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dygsched.errors import ScheduleError


@dataclass(frozen=True)
class CostModel:
    """Seconds per node (``a1``), per edge (``a2``) and fixed per snapshot (``a3``).

    The defaults are illustrative (a GCN+RNN layer on a recent GPU: 0.1 us per node, 20 ns per
    edge, 1 ms fixed); fit your own with a profile JSON ``{"a1": ..., "a2": ..., "a3": ...}``.
    ``reuse_ratio`` is RATIO of REAL eq. 17 and ``allreduce_cost`` is ``alpha``.
    """

    a1: float = 1e-7
    a2: float = 2e-8
    a3: float = 1e-3
    reuse_ratio: float = 0.5
    allreduce_cost: float = 1e-3

    def __post_init__(self) -> None:
        for name in ("a1", "a2", "a3", "reuse_ratio", "allreduce_cost"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ScheduleError(f"cost model coefficient {name} must be a non-negative number, got {value!r}")
        if self.reuse_ratio > 1:
            raise ScheduleError(f"reuse_ratio must be in [0, 1], got {self.reuse_ratio}")

    def time(self, nodes: float, edges: float) -> float:
        return self.a1 * nodes + self.a2 * edges + self.a3

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> CostModel:
        known = {"a1", "a2", "a3", "reuse_ratio", "allreduce_cost"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ScheduleError(f"unknown cost model keys {', '.join(unknown)}; valid keys: {', '.join(sorted(known))}")
        return cls(**{k: float(v) if isinstance(v, (int, float)) else v for k, v in data.items()})

    @classmethod
    def from_json(cls, path: str | Path) -> CostModel:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ScheduleError(f"cannot read cost profile {path}: {exc}") from None
        if not isinstance(data, dict):
            raise ScheduleError(f"cost profile {path} must be a JSON object with a1, a2, a3")
        return cls.from_mapping(data)


# what ``group_times_from_sizes`` accepts as the model: a CostModel, {"a1": .., "a2": .., "a3": ..} or (a1, a2, a3)
Coefficients = CostModel | Mapping[str, Any] | Sequence[float]


def _coerce(coefficients: Coefficients) -> CostModel:
    if isinstance(coefficients, CostModel):
        return coefficients
    if isinstance(coefficients, Mapping):
        return CostModel.from_mapping(coefficients)
    if isinstance(coefficients, Sequence) and len(coefficients) == 3:
        return CostModel(*(float(c) for c in coefficients))
    raise ScheduleError("coefficients must be a CostModel, a mapping with a1, a2, a3, or a triple (a1, a2, a3)")


def group_times_from_sizes(
    nodes_per_group: Sequence[float], edges_per_group: Sequence[float], coefficients: Coefficients
) -> list[float]:
    """Group execution times from node and edge counts with the linear cost model.

    ``nodes_per_group[k]`` and ``edges_per_group[k]`` are the nodes and edges group ``k`` processes
    (summed over its snapshots, or per snapshot diff maps already folded in by the caller);
    ``coefficients`` is a ``CostModel``, ``{"a1":..,"a2":..,"a3":..}`` or ``(a1, a2, a3)``.
    """
    model = _coerce(coefficients)
    if len(nodes_per_group) != len(edges_per_group):
        raise ScheduleError(f"{len(nodes_per_group)} node counts but {len(edges_per_group)} edge counts")
    times = []
    for nodes, edges in zip(nodes_per_group, edges_per_group):
        if nodes < 0 or edges < 0:
            raise ScheduleError("node and edge counts must be non-negative")
        times.append(model.time(nodes, edges))
    return times
