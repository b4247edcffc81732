"""``dygsched run resume=<run folder>``: the run as its folder's own ``config.yaml`` describes it.

The folder holds the run's configuration as it ran (``saved_run``), so ``resume=results/<id>`` alone
is the whole command. Overrides given beside it say what the user takes the run to be: one of a
setting a resumed run may change (``epochs``, ``progress``, ``device``, ``launcher``, ...:
``RESUMABLE_CHANGES``) is applied; any other must match the run's own value, else the command is
refused before anything is written, with one line listing every setting that differs. A group
choice is compared by the file it chose (``model=tgn`` against the run's ``model.name``, so the
run's own ``model.*`` settings need not be retyped), a key by its value (``optim.lr=0.1``), a
global group (``+experiment=...``) by every setting it changes from the defaults.

``resume=true`` and ``resume=auto`` compose as any run does (``find_resume`` looks for the run with
these settings; ``resume=true`` with none is refused here already, before the results folder is
made), and so does every point of a ``-m`` sweep.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from dygsched.engine.resumable import (
    NEW_IF_NONE,
    RESUMABLE_CHANGES,
    latest_resumable,
    nothing_to_resume,
    require_checkpoint,
    resume_folder,
    saved_config,
)
from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from dygsched.launch.compose import compose_run, config_groups
from dygsched.typed_config import differences

UNSET = "unset"  # how a setting the run's own configuration lacks is shown


def compose_resumed(overrides: list[str]) -> RunConfig:
    """The run ``dygsched run <overrides>`` describes: with ``resume=<run folder>``, that run's own
    settings and the resumable ones given; otherwise the overrides composed (``compose_run``)."""
    composed = compose_run(overrides)
    if composed.resume is True and latest_resumable(composed) is None:  # refused before anything is written
        raise ConfigError(nothing_to_resume(composed))
    if not isinstance(composed.resume, str) or composed.resume == NEW_IF_NONE:
        return composed
    folder = resume_folder(composed.resume)
    require_checkpoint(folder)
    saved = saved_config(folder).to_container()
    given = composed.to_container()
    paths = given_settings([o for o in overrides if override_key(o) != "resume"])
    changed = [
        f"{path} ({_shown(saved, path)} -> {_shown(given, path)})"
        for path in paths
        if path.split(".")[0] not in RESUMABLE_CHANGES and _at(saved, path) != _at(given, path)
    ]
    if changed:
        raise ConfigError(
            f"cannot resume {folder.name}: its settings differ: {'; '.join(changed)} "
            f"(resume={composed.resume} alone continues it with its own settings)"
        )
    for path in paths:
        if path.split(".")[0] in RESUMABLE_CHANGES:
            _put(saved, path, _at(given, path))
    return RunConfig.from_saved({**saved, "resume": composed.resume})


def override_key(override: str) -> str:
    """The key an override sets, without Hydra's ``+``, ``++`` or ``~``."""
    return override.split("=", 1)[0].lstrip("+~")


def given_settings(overrides: list[str]) -> list[str]:
    """The settings ``overrides`` name, as dotted paths: a key as itself; a choice of a group that is
    one block of the run (``model=tgn``) as the file it chose (``model.name``), or the whole block
    where the block may change on resume (``launcher``); a global group as each setting it changes."""
    blocks = {item.name for item in fields(RunConfig)}
    groups = set(config_groups())
    paths: list[str] = []
    for override in overrides:
        key = override_key(override)
        if "." in key or key not in groups:
            found = [key]
        elif key in blocks:
            found = [key if key in RESUMABLE_CHANGES else f"{key}.name"]
        else:  # e.g. +experiment=...: what it sets, compared with the defaults
            found = [line.split(" (", 1)[0] for line in differences(compose_run([]), compose_run([override]))]
        paths += [path for path in found if path not in paths]
    return paths


_ABSENT = object()


def _at(values: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(values, dict) or part not in values:
            return _ABSENT
        values = values[part]
    return values


def _shown(values: dict[str, Any], path: str) -> str:
    value = _at(values, path)
    return UNSET if value is _ABSENT else repr(value)


def _put(values: dict[str, Any], path: str, value: Any) -> None:
    *blocks, last = path.split(".")
    for part in blocks:
        values = values.setdefault(part, {})
    if value is _ABSENT:
        values.pop(last, None)
    else:
        values[last] = value
