"""What a run builds from its config: the strategy, the model and the optimizer.

The launcher builds them once to check them before any rank starts; every rank builds its own.
Each takes its block of the config (a ``ComponentSpec`` of ``RunConfig``, or the mapping a script
composed) and fails with one ``ConfigError`` line that names the component. No strategy is
imported here: each is the ``_target_`` its ``conf/sched`` file names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from omegaconf import DictConfig

from dygsched.components import instantiate_component
from dygsched.data.kinds import DynamicData
from dygsched.engine.run_config import RunConfig, plain_config
from dygsched.engine.strategy import RunSettings, Strategy
from dygsched.errors import ConfigError


def run_settings(cfg: Mapping[str, Any] | RunConfig) -> RunSettings:
    """The run-level settings a strategy reads, from a run config (typed or as composed)."""
    return RunConfig.of(cfg).settings


def _plain(block: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(block, DictConfig):  # as a script composes it
        return plain_config(block)
    return dict(block)


def build_strategy(sched_cfg: Mapping[str, Any]) -> Strategy:
    """The strategy ``conf/sched/<name>.yaml`` names: its ``_target_`` class, given its flat settings as
    its ``config_type`` (an unknown key or a bad value: one line), or built by Hydra from its typed blocks."""
    from hydra.utils import get_class

    sched = _plain(sched_cfg)
    name = sched.get("name")
    if "_target_" not in sched or name is None:
        raise ConfigError(f"sched '{name}' names no _target_ strategy and name")
    try:
        target = get_class(str(sched["_target_"]))
    except Exception as exc:  # not importable, or not a class
        raise ConfigError(
            f"cannot build strategy (sched={name}) '{sched['_target_']}': {str(exc).strip().splitlines()[-1]}"
        ) from None
    if not issubclass(target, Strategy):
        raise ConfigError(f"sched '{name}' is not a dygsched Strategy")
    if target.config_type is None:
        return instantiate_component({**sched, "_convert_": "all"}, f"strategy (sched={name})")
    settings = {key: value for key, value in sched.items() if key not in ("_target_", "name")}
    return target(target.config_type.from_config(settings), name)  # type: ignore[call-arg]


def build_model(model_cfg: Mapping[str, Any], data: DynamicData) -> torch.nn.Module:
    from hydra.utils import get_class

    from dygsched.data.events import EventStream
    from dygsched.models.edgebank import EdgeBank
    from dygsched.models.memory_base import MemoryModel
    from dygsched.models.persistent_forecast import PersistentForecast

    params = {k: v for k, v in _plain(model_cfg).items() if k not in ("name", "default_lr")}  # default_lr is optim.lr's default
    try:
        target = get_class(str(params.get("_target_", "")))
    except Exception:  # not a class, or not importable: instantiate_component says which, in one line
        target = None
    streaming = isinstance(data, EventStream)
    if target is not None and issubclass(target, (MemoryModel, EdgeBank, PersistentForecast)) != streaming:
        wanted = "event streams (dataset=events, sfhh_events or dataset.kind=events)" if not streaming else "snapshots"
        raise ConfigError(f"model={model_cfg.get('name')} trains on {wanted}, but the dataset gives {type(data).__name__}")
    return instantiate_component(params, "model", **data.model_dims())


def build_optimizer(optim_cfg: Mapping[str, Any], params: Any) -> torch.optim.Optimizer:
    """``cfg.optim``: an optimizer class (``_target_``) and its settings, e.g. Adam with ``lr``."""
    settings = {k: v for k, v in _plain(optim_cfg).items() if k != "name"}
    params = list(params)
    if not params:  # a model without parameters (EdgeBank): one empty placeholder, so the loop and checkpoints run unchanged
        params = [torch.nn.Parameter(torch.zeros(0))]
    return instantiate_component(settings, "optimizer", params=params)
