"""Building one target in this process: its sweep first (reused when complete), then its builder
with its settings; the outputs it promised must then exist."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import yaml

from dygsched.errors import ConfigError, DygschedError
from dygsched.paper.sweep import command_lines, run_sweep
from dygsched.paper.target import Overrides, PaperTarget

log = logging.getLogger("dygsched")
SMOKE_DIR = "smoke"  # --smoke writes under <results>/smoke, beside the full-size results


class TargetFailed(DygschedError):
    """A target's builder finished without writing what it promised."""


def results_root(results: Path, smoke: bool) -> Path:
    return Path(results) / SMOKE_DIR if smoke else Path(results)


def builder_settings(paper_target: PaperTarget) -> dict[str, inspect.Parameter]:
    """Every keyword argument the builder takes (the results root aside): what ``--set`` may set."""
    parameters = list(inspect.signature(paper_target.build).parameters.values())[1:]
    return {p.name: p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def split_overrides(paper_target: PaperTarget, smoke: bool, overrides: Overrides) -> tuple[dict[str, Any], Overrides]:
    """A user's ``KEY=VALUE`` overrides: those naming one of the builder's arguments set it (the value
    read as YAML, ``a,b`` as a tuple), the rest go to every run of the sweep; one that is neither is
    one error line naming the settings."""
    settings = paper_target.settings.at(smoke)
    arguments = builder_settings(paper_target)
    for override in overrides:
        if "=" not in override:
            raise ConfigError(f"{paper_target.name}: an override is KEY=VALUE, got {override!r}")
    own = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] in arguments}
    rest = tuple(o for o in overrides if o.split("=", 1)[0] not in arguments)
    if rest and paper_target.sweep is None:
        known = ", ".join(arguments) or "none"
        raise ConfigError(f"{paper_target.name} runs no training sweep; its settings are: {known} (got {', '.join(rest)})")
    for key, text in own.items():
        default = settings.get(key, arguments[key].default)
        values = [yaml.safe_load(part) for part in text.split(",")] if text else [""]
        settings[key] = tuple(values) if "," in text or isinstance(default, tuple) else values[0]
    return settings, rest


def recipe(paper_target: PaperTarget, root: Path, smoke: bool, overrides: Overrides = ()) -> tuple[str, ...]:
    """What building the target runs, as lines a reader can follow by hand."""
    values, extra = split_overrides(paper_target, smoke, overrides)
    lines = command_lines(paper_target.sweep, root, smoke, extra) if paper_target.sweep else []
    settings = ", ".join(f"{key}={value!r}" for key, value in values.items())
    builder = paper_target.build
    lines.append(f"{builder.__module__}.{builder.__qualname__}({str(root)!r}{', ' + settings if settings else ''})")
    return tuple(lines)


def build_target(paper_target: PaperTarget, root: Path, smoke: bool, overrides: Overrides = ()) -> None:
    """Run the target's sweep (when it has one and it is not complete) and its builder, into ``root``."""
    settings, extra = split_overrides(paper_target, smoke, overrides)
    root.mkdir(parents=True, exist_ok=True)
    if paper_target.sweep is not None:
        run_sweep(paper_target.sweep, root, smoke, extra)
    paper_target.build(root, **settings)
    missing = paper_target.missing_outputs(root)
    if missing:
        raise TargetFailed(f"{paper_target.name} finished without writing {', '.join(missing)}")
