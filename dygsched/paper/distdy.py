"""DistDy: online partitioning of a growing graph and additive storage."""

from __future__ import annotations

from dygsched.paper.target import PaperTarget, Section

SECTION = Section("distdy", "DistDy", "Online partitioning of a growing graph, additive storage, sampled training over graph stores.")

TARGETS: tuple[PaperTarget, ...] = ()
