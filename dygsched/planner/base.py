"""The solver interface: every planner is a ``Solver`` that registers itself by name.

A solver is one file: a ``Solver`` subclass decorated with ``@register_solver``. The built-in
ones live in ``dygsched.planner.solvers`` (every module there is imported when the registry is
first read); another package's solver registers when its module is imported, which naming it
as ``package.module:Class`` (or through the ``dygsched.solvers`` entry point group) does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

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


S = TypeVar("S", bound=type[Solver])
_REGISTRY: dict[str, type[Solver]] = {}


def register_solver(cls: S) -> S:
    """Class decorator: make ``cls`` available to ``solve`` under ``cls.name``."""
    if not cls.name:
        raise ScheduleError(f"solver class {cls.__qualname__} has no name")
    known = _REGISTRY.get(cls.name)
    if known is not None and f"{known.__module__}.{known.__qualname__}" != f"{cls.__module__}.{cls.__qualname__}":
        raise ScheduleError(
            f"two solvers are named {cls.name!r}: {known.__module__}.{known.__qualname__} and {cls.__module__}.{cls.__qualname__}"
        )
    _REGISTRY[cls.name] = cls
    return cls


def registered_solvers() -> dict[str, type[Solver]]:
    """Every solver registered so far, by name."""
    return dict(_REGISTRY)


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
