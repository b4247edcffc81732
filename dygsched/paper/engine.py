"""The engine's own benchmarks: speed against hand-written loops, scaling, stream accuracy."""

from __future__ import annotations

from dygsched.paper.target import PaperTarget, Section

SECTION = Section("engine", "Engine speed", "One rank against the loops users write by hand, what instrumentation costs, and how time and memory grow with the graph.")

TARGETS: tuple[PaperTarget, ...] = ()
