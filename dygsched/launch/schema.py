"""Typed schema of the top-level run config: Hydra checks every override's type at compose time.

The values live in ``conf/config.yaml``; this only says what type each key has, so
``epochs=abc`` is one clear error before anything starts. The groups (dataset, model, sched,
optim, launcher) stay free-form: each names its own ``_target_`` and arguments, typed by the
class it builds (a strategy's ``PlannerConfig``, ``TimelineConfig`` and executor check theirs). A
strategy with flat settings types them with its ``StrategyConfig`` dataclass, whose defaults are
registered here as ``strategy_config/<name>``, the config its ``conf/sched`` file starts from.
Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore

from dygsched.engine.distdy.config import DistDyConfig
from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.node_memory.config import NodeMemoryConfig, ShardedMemoryConfig, SvenConfig
from dygsched.engine.strategy_config import StrategyConfig

# strategy_config/<name>: what each conf/sched file with flat settings starts from
STRATEGY_CONFIGS: dict[str, type[StrategyConfig]] = {
    "flare": FlareConfig,
    "distdy": DistDyConfig,
    "node_memory": NodeMemoryConfig,
    "sharded_memory": ShardedMemoryConfig,
    "sven": SvenConfig,
}


@dataclass
class SplitSchema:
    train: float = 0.7
    val: float = 0.15
    new_nodes: float = 0.0


@dataclass
class GradSyncSchema:
    bucket_mb: float = 25.0
    overlap: bool = False


@dataclass
class MetricsSchema:
    count_flops: bool = True


@dataclass
class RunSchema:
    dataset: Any = None
    model: Any = None
    sched: Any = None
    optim: Any = None
    launcher: Any = None
    world_size: Any = 2  # an integer or "auto"
    epochs: int = 5
    seed: int = 0
    window: int = 4
    eval_negatives: int = 1
    tgb_negatives: str | None = None  # <folder>/<name>: TGB's <name>_val_ns.pkl and <name>_test_ns.pkl
    split: SplitSchema = field(default_factory=SplitSchema)
    grad_sync: GradSyncSchema = field(default_factory=GradSyncSchema)
    metrics: MetricsSchema = field(default_factory=MetricsSchema)
    device: str = "auto"
    dist_timeout_s: float = 300.0
    checkpoint: bool = True
    resume: Any = None  # null, true/false, or a run folder
    results_dir: str = "results"
    run_id: str | None = None
    overwrite: bool = False
    progress: bool = True


def register() -> None:
    store = ConfigStore.instance()
    store.store(name="run_schema", node=RunSchema)
    for name, config_type in STRATEGY_CONFIGS.items():
        store.store(group="strategy_config", name=name, node=config_type.defaults())
