"""``dygsched run -m``: a sweep's points, its shape for the progress lines, and every point composed,
typed and checked before the first job starts (or is submitted): the typed runs that Hydra's jobs,
and the paper's sweeps, then run."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError, DygschedError
from dygsched.launch.checks import check_point, precheck
from dygsched.launch.compose import compose_config, typed_run


@dataclass(frozen=True)
class SweepShape:
    """A ``-m`` sweep as its progress lines name it: how many runs, and the keys that vary."""

    runs: int
    varied: tuple[str, ...]


def sweep_run_line(number: int, overrides: list[str], sweep: SweepShape | None) -> str:
    """``sweep: run 3 of 8: sched=greedy model=tgcn``, as the sweep's run ``number`` (from 0) starts:
    the overrides of the keys the sweep varies (all of them where the sweep could not be expanded)."""
    if sweep is None:
        return f"sweep: run {number + 1}: {' '.join(overrides) or 'defaults'}"
    shown = [o for o in overrides if o.split("=", 1)[0] in sweep.varied] or overrides
    return f"sweep: run {number + 1} of {sweep.runs}: {' '.join(shown) or 'defaults'}"


def sweep_choices(overrides: list[str]) -> list[tuple[str, list[str]]]:
    """Each override's key and its values as overrides (several for an ``a,b`` or ``range()`` sweep)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    choices = []
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.get_key_element()
        if override.is_sweep_override():
            values = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            assert override.input_line is not None  # parse_overrides keeps each override's text
            values = [override.input_line]
        choices.append((key, values))
    return choices


def sweep_points(overrides: list[str]) -> list[list[str]]:
    """The override lists of every job a ``-m`` sweep runs (``a,b`` and ``range()`` sweeps expanded)."""
    return [list(point) for point in itertools.product(*(values for _, values in sweep_choices(overrides)))]


def sweep_shape(overrides: list[str]) -> SweepShape | None:
    """How many runs a ``-m`` sweep has and which keys vary; ``None`` for a form only Hydra expands."""
    try:
        choices = sweep_choices(overrides)
    except Exception:  # a glob or another sweeper's syntax
        return None
    runs = 1
    for _, values in choices:
        runs *= len(values)
    return SweepShape(runs, tuple(key for key, values in choices if len(values) > 1))


def check_sweep(overrides: list[str]) -> list[tuple[list[str], RunConfig]] | None:
    """Compose and check every point of a sweep before the first job starts (or is submitted);
    ``None`` for a sweep form only Hydra's sweeper expands (glob, ...), which reports its own errors."""
    try:
        points = sweep_points(overrides)
    except Exception:
        return None
    return checked_points(points)


def checked_points(points: list[list[str]]) -> list[tuple[list[str], RunConfig]]:
    """Every point composed, typed and checked (its values and files, then what the launcher and the
    strategy refuse without data), before any of them runs; a refusal is one line naming its point."""
    composed = []
    for point in points:  # what the settings alone refuse, for every point, before torch is imported
        cfg = compose_config(point)  # Hydra's refusal (an unknown key or file) names the key itself
        try:
            run = typed_run(cfg)
            precheck(run)
        except DygschedError as exc:
            raise ConfigError(f"{exc} (sweep point: {' '.join(point) or 'defaults'})") from None
        composed.append((point, run))
    for point, run in composed:
        try:
            check_point(run)
        except DygschedError as exc:
            raise ConfigError(f"{exc} (sweep point: {' '.join(point) or 'defaults'})") from None
    return composed
