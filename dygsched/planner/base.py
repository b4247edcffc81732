"""The solver interface: every planner is a ``Solver`` with a ``name``.

The built-in ones live in ``dygsched.planner.solvers``, one module each, named in its
``BUILTIN_SOLVERS`` table; ``dygsched.planner.solve`` adds the ``dygsched.solvers`` entry points and
reads ``package.module:Class`` names.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dygsched.errors import ScheduleError
from dygsched.planner.plan import Iterations, SolverStatus
from dygsched.planner.problem import ScheduleProblem


@dataclass(frozen=True)
class SolverResult:
    """What a solver hands back; ``solve`` turns it into a ``Plan``."""

    iterations: Iterations
    status: SolverStatus
    proven_bound: float | None = None  # a lower bound the solver proved (ILP), if any
    solver: str | None = None  # the solver that produced the plan, when it differs (policy fallback)


class Solver(ABC):
    """A planner. ``available()`` says whether its native dependencies can be imported."""

    name: str = ""
    description: str = ""

    @classmethod
    def available(cls) -> bool:
        return True

    @abstractmethod
    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        """Plan ``problem``; ``options`` are solver-specific (unknown ones raise ``ScheduleError``)."""


def empty_iteration(num_gpus: int) -> list[tuple[int, ...]]:
    return [() for _ in range(num_gpus)]


def pack(bins: list[list[int]], num_gpus: int) -> Iterations:
    """Lay out ``bins`` (one per GPU slot, in order) as iterations of ``num_gpus`` ranks, dropping empty iterations."""
    iterations = []
    for start in range(0, len(bins), num_gpus):
        chunk = [tuple(b) for b in bins[start : start + num_gpus]]
        chunk += [()] * (num_gpus - len(chunk))
        if any(chunk):
            iterations.append(tuple(chunk))
    return tuple(iterations)


def check_options(name: str, options: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        valid = ", ".join(allowed) if allowed else "none"
        raise ScheduleError(f"solver {name!r} has no option {', '.join(unknown)}; valid options: {valid}")
