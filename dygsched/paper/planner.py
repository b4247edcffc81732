"""The planner's own benchmarks: gaps to the bounds, solve times, the scaling simulation."""

from __future__ import annotations

from dygsched.paper.target import PaperTarget, Section

SECTION = Section("planner", "Planner", "The solvers against their bounds and against the published DyGNeX-G on every instance family; parallel efficiency from 4 to 1,024 simulated GPUs.")

TARGETS: tuple[PaperTarget, ...] = ()
