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
from typing import Any

from dygsched.errors import ConfigError


def event_strategies() -> list[str]:
    """The ``sched=`` names whose strategy trains on ``EventStream`` data, in name order."""
    from hydra.utils import get_class
    from omegaconf import OmegaConf

    from dygsched.data.events import EventStream

    names = []
    for entry in sorted(resources.files("dygsched.conf").joinpath("sched").iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        target = OmegaConf.to_container(OmegaConf.create(entry.read_text(encoding="utf-8"))).get("_target_")  # type: ignore[union-attr]
        try:
            kind = getattr(get_class(str(target)), "data_kind", None)
        except Exception:  # noqa: BLE001 (a file without a target of its own: not a strategy to name)
            continue
        if isinstance(kind, type) and issubclass(kind, EventStream):
            names.append(entry.name.removesuffix(".yaml"))
    return names


def check_event_model_strategy(model_cfg: Any, strategy: Any, data: Any) -> None:
    """Refuse an event-stream model under a snapshot strategy, naming the strategies that train it."""
    from hydra.utils import get_class

    from dygsched.data.events import EventStream

    if not isinstance(data, EventStream) or isinstance(data, strategy.data_kind):
        return
    try:
        model = get_class(str(model_cfg.get("_target_", "")))
    except Exception:  # noqa: BLE001 (the model's own check names a bad target)
        return
    from dygsched.models.memory_base import MemoryModel

    if not issubclass(model, MemoryModel):
        return
    names = event_strategies()
    reference = " (sched=single world_size=1: the one-process reference)" if "single" in names else ""
    raise ConfigError(
        f"model={model_cfg.get('name')} is a memory model for event streams, which sched={strategy.name} does not "
        f"train (it trains snapshots): choose sched={', '.join(names)}{reference}"
    )
