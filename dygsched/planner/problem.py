"""The scheduling problem of DyGNeX (appendix C) and REAL (section 5.1). Pure Python, no torch."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from dygsched.errors import ScheduleError


@dataclass(frozen=True)
class ScheduleProblem:
    """Assign ``n`` snapshot groups to ``num_gpus`` GPUs over iterations.

    ``group_times[k]`` is the standalone execution time ``t_k`` of group ``k``; at most
    ``capacity`` groups (``L``) run on one GPU in one iteration; every iteration ends with one
    gradient all-reduce costing ``allreduce_cost`` (``alpha``). ``reuse[k1][k2]`` (optional,
    symmetric, zero diagonal) is the time saved when groups ``k1`` and ``k2`` share a GPU in one
    iteration (REAL eq. 9).
    """

    group_times: tuple[float, ...]
    num_gpus: int
    capacity: int = 2
    allreduce_cost: float = 0.0
    reuse: tuple[tuple[float, ...], ...] | None = field(default=None)
    reuse_pairs: tuple[tuple[int, int, float], ...] | None = field(default=None)
    _partners: tuple[dict[int, float], ...] = field(init=False, repr=False, compare=False, default=())
    _has_reuse: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_times", tuple(float(t) for t in self.group_times))
        if not self.group_times:
            raise ScheduleError("the scheduling problem has no groups")
        if any(not math.isfinite(t) or t < 0 for t in self.group_times):
            raise ScheduleError("group times must be finite and non-negative")
        if int(self.num_gpus) != self.num_gpus or self.num_gpus < 1:
            raise ScheduleError(f"the number of GPUs must be a positive integer, got {self.num_gpus}")
        if int(self.capacity) != self.capacity or self.capacity < 1:
            raise ScheduleError(f"capacity (groups per GPU per iteration) must be at least 1, got {self.capacity}")
        if not math.isfinite(self.allreduce_cost) or self.allreduce_cost < 0:
            raise ScheduleError(f"the all-reduce cost must be finite and non-negative, got {self.allreduce_cost}")
        if self.reuse is not None:
            n = len(self.group_times)
            rows = tuple(tuple(float(v) for v in row) for row in self.reuse)
            if len(rows) != n or any(len(row) != n for row in rows):
                raise ScheduleError(f"the reuse table must be {n}x{n} (one row and column per group)")
            if any(not math.isfinite(v) or v < 0 for row in rows for v in row):
                raise ScheduleError("reuse savings must be finite and non-negative")
            object.__setattr__(self, "reuse", rows)
        partners: list[dict[int, float]] = [{} for _ in self.group_times]
        if self.reuse is not None:
            for k1, row in enumerate(self.reuse):
                for k2, value in enumerate(row):
                    if value > 0 and k1 != k2:  # eq. 9 sums over k1 < k2; accept either triangle
                        partners[k1][k2] = max(partners[k1].get(k2, 0.0), value)
                        partners[k2][k1] = max(partners[k2].get(k1, 0.0), value)
        if self.reuse_pairs is not None:
            pairs = []
            n = len(self.group_times)
            for entry in self.reuse_pairs:
                try:
                    k1, k2, value = int(entry[0]), int(entry[1]), float(entry[2])
                except (TypeError, ValueError, IndexError):
                    raise ScheduleError(f"a reuse pair must be (group, group, saving), got {entry!r}") from None
                if not (0 <= k1 < n and 0 <= k2 < n) or k1 == k2:
                    raise ScheduleError(f"reuse pair ({k1}, {k2}) must name two different groups in 0..{n - 1}")
                if not math.isfinite(value) or value < 0:
                    raise ScheduleError("reuse savings must be finite and non-negative")
                pairs.append((k1, k2, value))
                if value > 0:
                    partners[k1][k2] = max(partners[k1].get(k2, 0.0), value)
                    partners[k2][k1] = max(partners[k2].get(k1, 0.0), value)
            object.__setattr__(self, "reuse_pairs", tuple(pairs))
        object.__setattr__(self, "_partners", tuple(partners))
        object.__setattr__(self, "_has_reuse", any(partners))

    @classmethod
    def from_pairs(
        cls,
        group_times: Iterable[float],
        num_gpus: int,
        pairs: Iterable[tuple[int, int, float]],
        capacity: int = 2,
        allreduce_cost: float = 0.0,
    ) -> ScheduleProblem:
        """A problem whose reuse table is sparse: ``pairs`` lists ``(k1, k2, saving)`` (symmetric)."""
        return cls(tuple(group_times), num_gpus, capacity, allreduce_cost, None, tuple(pairs))

    @property
    def has_reuse(self) -> bool:
        return self._has_reuse

    def partners(self, k: int) -> dict[int, float]:
        """The groups that save time when they share a GPU with ``k``, with the saving."""
        return self._partners[k]

    @property
    def num_groups(self) -> int:
        return len(self.group_times)

    def saving(self, k1: int, k2: int) -> float:
        """Time saved when groups ``k1`` and ``k2`` share a GPU in one iteration."""
        if k1 == k2 or k1 < 0 or k2 < 0:
            return 0.0
        return self._partners[k1].get(k2, 0.0)

    def load(self, groups: tuple[int, ...]) -> float:
        """Time one GPU spends on ``groups`` in one iteration, net of pairwise reuse."""
        total = sum(self.group_times[k] for k in groups)
        if not self.has_reuse:
            return total
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                total -= self.saving(groups[a], groups[b])
        return total

    def slowest_load(self, iteration: Iterable[Iterable[int]]) -> float:
        """The largest GPU load of one iteration (its time before the all-reduce)."""
        return max(self.load(tuple(groups)) for groups in iteration)
