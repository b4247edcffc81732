"""REAL: cross-group scheduling with snapshot- and group-level reuse."""

from __future__ import annotations

from dygsched.paper.target import PaperTarget, Section

SECTION = Section("real", "REAL", "Cross-group scheduling with snapshot- and group-level reuse: the ablation, the reuse memory and the reuse speedups.")

TARGETS: tuple[PaperTarget, ...] = ()
