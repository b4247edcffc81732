"""A model that trains on event streams, given a strategy that trains on snapshots: name the fix.

``dygsched run model=tgn dataset=events`` keeps the default ``sched=psg``, which trains snapshot
groups. The run is refused, as before, but in words about the strategy: the strategies that train
event streams are listed from ``conf/sched/`` (each file's ``_target_`` class and the data kind it
declares), so a new one is named without a change here.

Why a refusal rather than switching to ``sched=single`` when no strategy was named: ``single`` is the
one-process reference (``world_size=1``), so picking it would change two settings the user did not
write, and a sweep over models would mix strategies in its runs' table without saying so. The
refusal prints the command line to type instead.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from dygsched.data.kinds import DynamicData
    from dygsched.engine.strategy import Strategy
    from dygsched.typed_config import Part


def event_strategies() -> list[str]:
    """The ``sched=`` names whose strategy trains on ``EventStream`` data, in name order (each file's
    ``_target_`` is its configuration class, whose ``strategy`` names the strategy class)."""
    from omegaconf import DictConfig, OmegaConf

    from dygsched.components import load_target
    from dygsched.data.events import EventStream
    from dygsched.engine.strategy_config import StrategyConfig
    from dygsched.typed_config import load_class

    names = []
    for entry in sorted(resources.files("dygsched.conf").joinpath("sched").iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        node = OmegaConf.create(entry.read_text(encoding="utf-8"))
        target = node.get("_target_") if isinstance(node, DictConfig) else None
        try:
            config_class = load_class(str(target), "sched")
            strategy = load_target(config_class.strategy) if issubclass(config_class, StrategyConfig) else None
            kind = getattr(strategy, "data_kind", None)
        except Exception:  # noqa: BLE001 (a file without a strategy of its own: not one to name)
            continue
        if isinstance(kind, type) and issubclass(kind, EventStream):
            names.append(entry.name.removesuffix(".yaml"))
    return names


def check_event_model_strategy(model: Part, strategy: Strategy, data: DynamicData) -> None:
    """Refuse an event-stream model under a snapshot strategy, naming the strategies that train it."""
    from dygsched.data.events import EventStream

    if not isinstance(data, EventStream) or isinstance(data, strategy.data_kind):
        return
    try:
        model_class = model.built_class()
    except ConfigError:  # the model's own check names a bad target
        return
    from dygsched.models.memory_base import MemoryModel

    if not issubclass(model_class, MemoryModel):
        return
    names = event_strategies()
    reference = " (sched=single world_size=1: the one-process reference)" if "single" in names else ""
    raise ConfigError(
        f"model={model.name} is a memory model for event streams, which sched={strategy.name} does not "
        f"train (it trains snapshots): choose sched={', '.join(names)}{reference}"
    )
