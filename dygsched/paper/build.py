"""Building one target in this process: its sweep first (reused when complete), then its builder
with its settings; the outputs it promised must then exist."""

from __future__ import annotations

import logging
from pathlib import Path

from dygsched.errors import DygschedError
from dygsched.paper.sweep import command_lines, run_sweep
from dygsched.paper.target import Overrides, PaperTarget

log = logging.getLogger("dygsched")
SMOKE_DIR = "smoke"  # --smoke writes under <results>/smoke, beside the full-size results


class TargetFailed(DygschedError):
    """A target's builder finished without writing what it promised."""


def results_root(results: Path, smoke: bool) -> Path:
    return Path(results) / SMOKE_DIR if smoke else Path(results)


def recipe(paper_target: PaperTarget, root: Path, smoke: bool, extra: Overrides = ()) -> tuple[str, ...]:
    """What building the target runs, as lines a reader can follow by hand."""
    lines = command_lines(paper_target.sweep, root, smoke, extra) if paper_target.sweep else []
    settings = ", ".join(f"{key}={value!r}" for key, value in paper_target.settings.at(smoke).items())
    builder = paper_target.build
    lines.append(f"{builder.__module__}.{builder.__qualname__}({str(root)!r}{', ' + settings if settings else ''})")
    return tuple(lines)


def build_target(paper_target: PaperTarget, root: Path, smoke: bool, extra: Overrides = ()) -> None:
    """Run the target's sweep (when it has one and it is not complete) and its builder, into ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    if paper_target.sweep is not None:
        run_sweep(paper_target.sweep, root, smoke, extra)
    paper_target.build(root, **paper_target.settings.at(smoke))
    missing = paper_target.missing_outputs(root)
    if missing:
        raise TargetFailed(f"{paper_target.name} finished without writing {', '.join(missing)}")
