"""A plan: for each iteration, for each GPU (rank), the units of work it trains.

A solver plans the problem's units by index (``0 .. n-1``): a snapshot group's index, a
``(group, partition)`` pair, an event batch. Units are any hashable values that JSON can hold
(ints, strings, tuples of them).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import asdict, dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any, Generic, TypeVar

from dygsched.errors import ScheduleError
from dygsched.planner.problem import ScheduleProblem


class SolverStatus(str, Enum):
    OPTIMAL = "optimal"  # proven optimal (within the requested gap)
    FEASIBLE = "feasible"  # a valid plan, optimality not proven
    HEURISTIC = "heuristic"  # a constructive algorithm, no optimality claim
    FALLBACK = "fallback"  # the REAL policy fell back to the greedy plan


# What a solver plans: for each iteration, for each rank, the indexes of the groups it trains.
Iterations = tuple[tuple[tuple[int, ...], ...], ...]
# A unit as JSON holds it (a plan read back from a file, before it is checked against a run's units).
Unit = int | str | tuple["Unit", ...]
U = TypeVar("U", bound=Hashable)


def _unit_from_json(value: Any) -> Unit:
    """A unit read back from JSON: lists become tuples (a ``(group, partition)`` pair was a tuple)."""
    if isinstance(value, list):
        return tuple(_unit_from_json(v) for v in value)
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return value
    raise TypeError(f"a plan unit must be an integer, a string or a list of them, got {value!r}")


def iterations_from_bins(bins: list[tuple[int, ...]], gpus: int) -> Iterations:
    """Consecutive runs of ``gpus`` bins as iterations, the last padded with idle ranks (``()``).

    Given bins sorted by load, this is the sorted cut: each iteration's slowest bin is as small as
    the order allows."""
    out: list[tuple[tuple[int, ...], ...]] = []
    for start in range(0, len(bins), gpus):
        chunk = list(bins[start : start + gpus])
        chunk += [()] * (gpus - len(chunk))
        out.append(tuple(chunk))
    return tuple(out)


@dataclass(frozen=True)
class Plan(Generic[U]):
    """``iterations[i][rank]`` is the tuple of units rank ``rank`` trains in iteration ``i``.

    ``Plan[int]``: a solver's plan of group indexes; ``Plan[Unit]``: one read back from JSON."""

    iterations: tuple[tuple[tuple[U, ...], ...], ...]
    num_gpus: int
    capacity: int
    predicted_epoch_time: float
    lower_bound: float
    solver: str
    solver_status: SolverStatus
    solve_time_s: float

    def __post_init__(self) -> None:
        for name in ("predicted_epoch_time", "lower_bound", "solve_time_s"):  # plain floats, never numpy scalars
            object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def gap(self) -> float:
        """Relative distance of the predicted epoch time above the lower bound."""
        if self.lower_bound <= 0:
            return 0.0
        gap = self.predicted_epoch_time / self.lower_bound - 1.0
        return 0.0 if abs(gap) < 1e-9 else gap  # equal up to floating-point rounding

    @property
    def num_iterations(self) -> int:
        return len(self.iterations)

    def rotated(self, shift: int) -> Plan[U]:
        """The same plan with rank ``r``'s groups given to rank ``(r + shift) % num_gpus``."""
        g = self.num_gpus
        iterations = tuple(tuple(iteration[(r - shift) % g] for r in range(g)) for iteration in self.iterations)
        return replace(self, iterations=iterations)

    def units(self) -> list[U]:
        """Every unit the plan trains, in iteration then rank order."""
        return [unit for iteration in self.iterations for cell in iteration for unit in cell]

    def validate(self: Plan[int], problem: ScheduleProblem) -> None:
        """Raise unless every group appears exactly once and capacity holds."""
        seen: list[int] = []
        for i, iteration in enumerate(self.iterations):
            if len(iteration) != problem.num_gpus:
                raise ScheduleError(f"iteration {i} has {len(iteration)} ranks, the problem has {problem.num_gpus} GPUs")
            for rank, groups in enumerate(iteration):
                if len(groups) > problem.capacity:
                    raise ScheduleError(f"iteration {i} gives rank {rank} {len(groups)} groups, capacity is {problem.capacity}")
                seen.extend(groups)
        if sorted(seen) != list(range(problem.num_groups)):
            raise ScheduleError("the plan does not train every group exactly once")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["solver_status"] = self.solver_status.value
        data["iterations"] = [[[_unit_to_json(u) for u in groups] for groups in iteration] for iteration in self.iterations]
        data["gap"] = self.gap
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan[Unit]:
        try:
            return Plan(  # not cls: a plan read from JSON holds JSON units whatever cls's unit type
                iterations=tuple(tuple(tuple(_unit_from_json(k) for k in groups) for groups in it) for it in data["iterations"]),
                num_gpus=int(data["num_gpus"]),
                capacity=int(data["capacity"]),
                predicted_epoch_time=float(data["predicted_epoch_time"]),
                lower_bound=float(data["lower_bound"]),
                solver=str(data["solver"]),
                solver_status=SolverStatus(data["solver_status"]),
                solve_time_s=float(data["solve_time_s"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ScheduleError(f"not a valid plan: {exc}") from None

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Plan[Unit]:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ScheduleError(f"cannot read plan {path}: {exc}") from None


def _unit_to_json(unit: object) -> Any:
    return [_unit_to_json(u) for u in unit] if isinstance(unit, tuple) else unit


def predicted_epoch_time(problem: ScheduleProblem, iterations: Iterations) -> float:
    """Sum over iterations of the slowest GPU's load (net of reuse) plus one all-reduce."""
    return sum(problem.slowest_load(iteration) + problem.allreduce_cost for iteration in iterations)
