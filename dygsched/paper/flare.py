"""FlareDTDG: node-partitioned training on hybrid batches with temporal decay."""

from __future__ import annotations

from dygsched.paper.target import PaperTarget, Section

SECTION = Section("flaredtdg", "FlareDTDG", "Node-partitioned training on hybrid batches with temporal decay, shrinking and overlap.")

TARGETS: tuple[PaperTarget, ...] = ()
