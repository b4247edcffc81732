"""``node_task.init_from``: a node task's model starts from a finished link-prediction run's weights.

DyGLib trains node classification on top of the link-prediction model it saved (its
``train_node_classification.py`` loads the backbone, then freezes it); TGN's code does the same.
Here a run names the earlier run's folder (or its run id in ``results_dir``), and its model's
weights are loaded from that run's ``checkpoint.pt`` before training starts.

``check_init_from`` refuses, before any rank starts, in one line each: a folder that holds no
finished run (no summary, a failed run, no checkpoint because it ran with ``checkpoint=false``), a
run that trained a node task itself, and a run of another model or another dataset (any setting of
the ``model`` block but its dropout and default learning rate, or of the ``dataset`` block, that
differs: the weights would not fit, or would have learned another stream).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from dygsched.engine.run_config import RunConfig

WEIGHTLESS_MODEL_KEYS = ("dropout", "default_lr")  # settings of the model block that no weight depends on


def check_init_from(run: RunConfig) -> Path | None:
    """The run folder ``run.node_task.init_from`` names, checked against ``run``; ``None`` without one."""
    from dygsched.engine.checkpoint import checkpoint_path
    from dygsched.engine.run_config import saved_run
    from dygsched.typed_config import differences

    given = run.node_task.init_from
    if not given:
        return None
    init = run.resolved_node_task.init_from
    folder = Path(str(init))
    what = f"node_task.init_from={given}"
    if not (folder / "config.yaml").is_file():
        raise ConfigError(f"{what}: no run folder there ({folder}, nor {Path(run.results_dir) / str(given)})")
    status = _status(folder)
    if status != "ok":
        raise ConfigError(f"{what}: {folder.name} is not a finished run (its status: {status}); name one that finished")
    if not checkpoint_path(folder).is_file():
        raise ConfigError(f"{what}: {folder.name} kept no checkpoint.pt (it ran with checkpoint=false): its weights are gone")
    try:
        saved = saved_run(folder)
    except ConfigError as exc:
        raise ConfigError(f"{what}: {exc}") from None
    if saved.task == "node":
        raise ConfigError(f"{what}: {folder.name} trained a node task itself; name the link-prediction run it started from")
    for block, theirs, ours in (("model", saved.model, run.model), ("dataset", saved.dataset, run.dataset)):
        if theirs.name != ours.name:
            raise ConfigError(f"{what}: {folder.name} trained {block}={theirs.name}, this run {block}={ours.name}")
        ignored = tuple(f"{block}.{key}" for key in WEIGHTLESS_MODEL_KEYS) if block == "model" else ()
        changed = differences(dict(theirs), dict(ours), block, skip=ignored)  # a run folder's config.yaml is kept resolved
        if changed:
            raise ConfigError(f"{what}: {folder.name}'s {block} differs: {'; '.join(changed[:4])}")
    return folder


def _status(folder: Path) -> str:
    try:
        return str(json.loads((folder / "summary.json").read_text()).get("status", "unknown"))
    except (OSError, ValueError):
        return "not finished (no summary.json)"


def initial_weights(folder: str) -> dict[str, Any]:
    """The model weights of the run in ``folder`` (its ``checkpoint.pt``)."""
    from dygsched.engine.checkpoint import load_checkpoint

    try:
        state = load_checkpoint(Path(folder))
    except ConfigError as exc:
        raise ConfigError(f"node_task.init_from: {str(exc).replace('cannot resume: ', '')}") from None
    return dict(state["model"])
