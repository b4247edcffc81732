"""REAL-G as published: REAL Algorithm 1, DyGNeX-G's loop with pair times net of reuse."""

from __future__ import annotations

from dygsched.planner.solvers.dygnex_g import DyGNeXG


class RealGPaper(DyGNeXG):
    """REAL Algorithm 1: candidate targets ``t[i] + t[n] - R[i][n]``, two-pointer pairs on ``t + t - R``."""

    name = "real_g_paper"
    description = "REAL Algorithm 1 as published (reuse-aware target pairing)"
    use_reuse = True
