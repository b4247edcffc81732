"""The planner (DyGNeX, REAL and the other snapshot-group plans): scheduling problems, solvers,
plans, lower bounds, cost models and the simulator. Imports no torch.

Partitioners (which rank owns which node) are not planning: they are ``dygsched.data.partition``.
"""

from dygsched.sched.bounds import lower_bound
from dygsched.sched.plan import Plan, SolverStatus, predicted_epoch_time
from dygsched.sched.problem import ScheduleProblem
from dygsched.sched.solve import SOLVERS, solve

__all__ = ["SOLVERS", "Plan", "ScheduleProblem", "SolverStatus", "lower_bound", "predicted_epoch_time", "solve"]
