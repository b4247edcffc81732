"""What a run builds from its typed configuration: the strategy, the model and the optimizer.

The launcher builds them once to check them before any rank starts; every rank builds its own.
Each takes its block of the run's ``RunConfig`` and fails with one ``ConfigError`` line that names
the component. No strategy is imported here: each is the class its configuration names.
"""

from __future__ import annotations

from typing import Any

import torch

from dygsched.data.kinds import DynamicData
from dygsched.engine.run_config import OptimizerConfig
from dygsched.engine.strategy import Strategy
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError
from dygsched.typed_config import Part

MODEL_ONLY_SETTINGS = ("default_lr",)  # read by the optimizer's config (optim.lr's default), not a model argument


def build_strategy(config: StrategyConfig) -> Strategy:
    """The strategy ``conf/sched/<name>.yaml`` configures (``StrategyConfig.build``)."""
    return config.build()


def build_model(model: Part, data: DynamicData) -> torch.nn.Module:
    """``model``: a model class (``_target_``) and its settings, built for ``data``'s dimensions."""
    from dygsched.data.events import EventStream
    from dygsched.models.edgebank import EdgeBank
    from dygsched.models.memory_base import MemoryModel
    from dygsched.models.persistent_forecast import PersistentForecast

    target = model.check(MODEL_ONLY_SETTINGS)
    streaming = isinstance(data, EventStream)
    if issubclass(target, (MemoryModel, EdgeBank, PersistentForecast)) != streaming:
        wanted = "event streams (dataset=events, sfhh_events or dataset.kind=events)" if not streaming else "snapshots"
        raise ConfigError(f"model={model.name} trains on {wanted}, but the dataset gives {type(data).__name__}")
    return model.build("model", MODEL_ONLY_SETTINGS, **data.model_dims())


def build_optimizer(optim: OptimizerConfig, params: Any) -> torch.optim.Optimizer:
    """``optim``: an optimizer class (``_target_``) and its settings, e.g. Adam with ``lr``."""
    params = list(params)
    if not params:  # a model without parameters (EdgeBank): one empty placeholder, so the loop and checkpoints run unchanged
        params = [torch.nn.Parameter(torch.zeros(0))]
    return optim.build("optimizer", params=params)
