"""The planner (DyGNeX, REAL and the other snapshot-group plans): scheduling problems, solvers,
plans, lower bounds, cost models and the simulator. Imports no torch.

Partitioners (which rank owns which node) are not planning: they are ``dygsched.data.partition``.
"""

from dygsched.planner.bounds import lower_bound
from dygsched.planner.plan import Plan, SolverStatus, predicted_epoch_time
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solve import SOLVERS, solve

__all__ = ["SOLVERS", "Plan", "ScheduleProblem", "SolverStatus", "lower_bound", "predicted_epoch_time", "solve"]
