"""Scheduling core of DyGNeX and REAL: problems, solvers, plans, bounds. Imports no torch."""

from dygsched.sched.bounds import lower_bound
from dygsched.sched.plan import Plan, SolverStatus, predicted_epoch_time
from dygsched.sched.problem import ScheduleProblem
from dygsched.sched.solve import SOLVERS, solve

__all__ = ["SOLVERS", "Plan", "ScheduleProblem", "SolverStatus", "lower_bound", "predicted_epoch_time", "solve"]
