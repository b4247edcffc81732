"""FlareDTDG's configuration (``sched=flare``): ``FlareConfig``, every field a ``sched.<name>`` setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dygsched.engine.flare.decay import SCHEDULES
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError

LOSS_ON = ("last", "all")


@dataclass(frozen=True)
class FlareConfig(StrategyConfig):
    """The settings of ``FlareStrategy``, their types and defaults (see ``dygsched.engine.strategy_config``)."""

    strategy: ClassVar[str] = "dygsched.engine.flare.strategy:FlareStrategy"

    name: str = "flare"
    partition: str = "metis"  # metis | hash | range: which rank owns each node (chunked in two levels)
    chunks: int = 16  # C: chunks per rank (the unit of decay)
    full: int = 2  # K: the most recent snapshots of a window trained in full (K = window: Full-History)
    alpha: float = 0.1  # the oldest decayed block keeps about alpha of the chunks (0: Recent-Only)
    schedule: str | tuple[int, ...] = "paper"  # paper | artifact | [N_1, ..., N_m]: chunks kept per decayed block, newest first
    inherit: bool = True  # hidden states carried from window to window (reset each epoch and at the split)
    loss_on: str = "last"  # last | all: the loss on the last block, or the mean over every block
    random_split: bool = True  # each epoch cuts the training snapshots at a random point and trains the later part first
    shrink: bool = True  # renumber nodes once per epoch so decayed blocks are prefix slices (false: every step)
    overlap: str = "none"  # none (each exchange waits) | rr | mlp: exchanges posted ahead, local blocks computed meanwhile
    autotune_every: int = 0  # every this many epochs, try the neighbouring (K, alpha) and keep the best (0: off)
    autotune_windows: int = 4  # windows each autotune candidate trains before its validation loss is compared

    def __post_init__(self) -> None:
        super().__post_init__()
        # imported here: this module is read before torch is (its defaults are the config's), these import it
        from dygsched.data.partition import checked_partition
        from dygsched.engine.node_partition.overlap import OVERLAPS

        checked_partition("node", self.partition)
        for key, value, choices in (
            ("loss_on", self.loss_on, LOSS_ON),
            ("overlap", self.overlap, OVERLAPS),
        ):
            if value not in choices:
                raise ConfigError(f"unknown sched.{key} '{value}' (choose from {', '.join(choices)})")
        if isinstance(self.schedule, str) and self.schedule not in SCHEDULES:
            raise ConfigError(
                f"unknown sched.schedule '{self.schedule}' (choose from {', '.join(SCHEDULES)}, or a list of counts)"
            )
        if self.chunks < 1:
            raise ConfigError(f"sched.chunks (chunks per rank) must be a positive integer, got {self.chunks}")
        if self.full < 1:
            raise ConfigError(f"sched.full (K, full snapshots per window) must be a positive integer, got {self.full}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"sched.alpha must lie in [0, 1], got {self.alpha}")
        if self.autotune_every < 0 or self.autotune_windows < 1:
            raise ConfigError("sched.autotune_every must be 0 (off) or more, and sched.autotune_windows at least 1")
