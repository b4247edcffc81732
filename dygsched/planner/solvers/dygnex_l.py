"""DyGNeX-L: the reuse-agnostic ILP of DyGNeX appendix C, sharing REAL-L's model with reuse ignored.

DyGNeX linearizes the max with big-M indicators (eqs. 17-20); the epigraph form used here
(``T_i >= load_ij + alpha``) has the same optimum with a tighter relaxation.
"""

from __future__ import annotations

from dygsched.planner.solvers.ilp import RealL


class DyGNeXL(RealL):
    name = "dygnex_l"
    description = "DyGNeX-L: the reuse-agnostic ILP (DyGNeX appendix C)"
    use_reuse = False
