"""Sven: memory-based continuous-time models with distributed node memory."""

from __future__ import annotations

from dygsched.paper.target import PaperTarget, Section

SECTION = Section("sven", "Sven", "Memory-based continuous-time models (TGN, JODIE, APAN) with distributed node memory.")

TARGETS: tuple[PaperTarget, ...] = ()
