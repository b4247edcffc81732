"""The interface of an ILP backend: it solves an ``IlpModel`` and maps its status to ours."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from dygsched.planner.ilp_model import IlpModel
from dygsched.planner.plan import Iterations


@dataclass(frozen=True)
class BackendResult:
    iterations: Iterations | None  # None: no feasible solution found
    converged: bool  # optimal within the requested gap
    proven_bound: float | None  # lower bound on the model objective, in time units
    raw_status: str


class IlpBackend(ABC):
    name: str = ""
    package: str = ""  # what to install when it is missing

    @classmethod
    @abstractmethod
    def available(cls) -> bool: ...

    @abstractmethod
    def solve(
        self, model: IlpModel, warm: Iterations | None, time_limit: float, gap: float, seed: int, workers: int
    ) -> BackendResult: ...
