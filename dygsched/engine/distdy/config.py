"""DistDy's configuration (``sched=distdy``): ``DistDyConfig``, every field a ``sched.<name>`` setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError

LOOPS = ("epochs", "online")


@dataclass(frozen=True)
class DistDyConfig(StrategyConfig):
    """The settings of ``DistDyStrategy``, their types and defaults (see ``dygsched.engine.strategy_config``)."""

    strategy: ClassVar[str] = "dygsched.engine.distdy.strategy:DistDyStrategy"

    name: str = "distdy"
    partition: str = "distdy"  # distdy (Algorithms 1-3) | metis | hash | greedy | metis_layer
    segments: int | None = None  # S: feature segments of additive storage; null: the paper's 4, or the feature columns if fewer
    # D^k per store: this many times the balanced window storage (tight: the tightest feasible is 1.3-1.7, docs/distdy.md)
    capacity_factor: float = 1.75
    capacity_bytes: float | None = None  # D^k per store in bytes (replaces capacity_factor when set)
    eta: float = 6.0  # the price multiplier is 2 eta
    budget: int = 300  # M: refinement passes at most
    clip_rewards: bool = False  # keep the additive-storage rewards at 0 or above (the theory's assumption)
    message_weight: float = (
        0.0  # ours, off: the balance term also prices each node's sampled messages as a target (1: as much as bytes)
    )
    fetch_weight: float = (
        0.0  # ours, off: ... and each node's strength sum_u W_uv, what the others fetch of it (1: as much as bytes)
    )
    fanouts: tuple[int, ...] = (5, 10)  # GraphSAGE neighbours per hop, one per model layer
    batch: int = 1024  # target nodes per mini-batch (all ranks together); task=link: pairs
    batches_per_step: int = 1  # mini-batches per snapshot step
    # epochs: every epoch trains every window in order | online: the paper's stream, each window
    # trains epochs_per_window epochs when its snapshot arrives (epochs = windows x that)
    loop: str = "epochs"
    epochs_per_window: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        # imported here: this module is read before torch is (its defaults are the config's),
        # the registry imports none of the partitioners
        from dygsched.data.partition import checked_partition

        checked_partition("online", self.partition)
        if self.loop not in LOOPS:
            raise ConfigError(f"unknown sched.loop '{self.loop}' (choose from {', '.join(LOOPS)})")
        if self.segments is not None and self.segments < 1:
            raise ConfigError(f"sched.segments (feature segments, S) must be at least 1, got {self.segments}")
        if not self.fanouts or any(f < 1 for f in self.fanouts):
            raise ConfigError(f"sched.fanouts must be positive neighbour counts, one per layer, got {list(self.fanouts)}")
        if self.batch < 1 or self.batches_per_step < 1:
            raise ConfigError("sched.batch and sched.batches_per_step must be at least 1")
        if self.epochs_per_window < 1:
            raise ConfigError(f"sched.epochs_per_window must be at least 1, got {self.epochs_per_window}")
        if self.capacity_factor <= 0 or (self.capacity_bytes is not None and self.capacity_bytes <= 0):
            raise ConfigError("sched.capacity_factor and sched.capacity_bytes must be positive")
        if self.message_weight < 0 or self.fetch_weight < 0:
            raise ConfigError("sched.message_weight and sched.fetch_weight must be 0 (the paper's algorithm) or more")
