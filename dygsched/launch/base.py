"""What every launcher does: check its settings, then start the ranks of one run and wait for them.

A launcher is named by ``conf/launcher/<name>.yaml`` (``_target_`` plus its settings). ``check``
runs before anything starts; ``launch`` starts ``world_size`` ranks of the same worker
(``dygsched.engine.worker.train_rank``), waits for them, and raises ``LaunchFailed`` with the
first cause when one fails; the caller then marks the run failed. ``worker_env`` says whether
this process already *is* one rank of a job something else started (a SLURM task).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence

from dygsched.data.kinds import DynamicData
from dygsched.engine.distributed import DistEnv
from dygsched.engine.run_config import RunConfig
from dygsched.metrics.run_folder import RunFolder


def threads_per_rank(cores: int, local_ranks: int) -> int:
    """CPU threads each rank on a node may start: the node's cores shared by its ranks (at least one)."""
    return max(1, cores // max(1, local_ranks))


def cores_here() -> int:
    """The cores this process may run on (its affinity, which SLURM and containers narrow), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class LaunchFailed(Exception):
    """A rank failed; ``reason`` is the first cause found (one line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Launcher(ABC):
    name: str = ""

    def check(self, world_size: int) -> None:
        """Raise ``ConfigError`` if this launcher cannot start ``world_size`` ranks as configured."""

    def check_here(self) -> None:
        """Raise ``ConfigError`` if this process cannot start the ranks itself (before any data is loaded)."""

    def auto_world_size(self, gpus_here: int) -> int:
        """The ranks ``world_size=auto`` means under this launcher, given this machine's GPU count:
        one per GPU, else 2 CPU processes (this machine only)."""
        return gpus_here or 2

    def worker_env(self) -> DistEnv | None:
        """This process's rank when it runs inside a job this launcher submitted, else ``None``."""
        return None

    @abstractmethod
    def launch(
        self, config: RunConfig, data: DynamicData, folder: RunFolder, world_size: int, overrides: Sequence[str] | None
    ) -> None:
        """Run every rank to completion; raise ``LaunchFailed`` if one fails."""
