"""A typed run for tests that need a run's settings without a config of their own: the default run
(composed once, as ``dygsched run`` with no overrides would) with some settings changed."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

from dygsched.engine.run_config import RunConfig


@cache
def _default() -> RunConfig:
    from dygsched.launch.compose import compose_run

    return compose_run([])


def default_run(**changes: Any) -> RunConfig:
    """The default run with ``changes`` (``changed``)."""
    return changed(_default(), **changes)


def changed(run: RunConfig, **changes: Any) -> RunConfig:
    """``run`` with ``changes``: a top-level setting (``window=3``), a block's settings as a mapping
    (``split={"train": 0.5}``, ``eval={"negatives": "inductive"}``), or a whole block (``sched=...``).
    Every value is checked as the run is built, as a composed one is."""
    values: dict[str, Any] = {}
    for name, value in changes.items():
        current = getattr(run, name)
        values[name] = dataclasses.replace(current, **value) if isinstance(value, dict) else value
    return dataclasses.replace(run, **values)
