"""``launcher=slurm``: Hydra's submitit launcher submits one SLURM job per sweep point.

``dygsched run -m launcher=slurm ...`` hands the sweep to ``hydra-submitit-launcher``
(``conf/launcher/slurm.yaml`` sets ``hydra/launcher`` to ``submitit_slurm``): every sweep point
becomes one job of ``launcher.nodes`` nodes with ``launcher.tasks_per_node`` tasks and
``launcher.gpus_per_node`` GPUs each. SLURM starts every task; each task is one rank, which
reads its rank, the world size and the master address from submitit's job environment.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dygsched.data.kinds import DynamicData
from dygsched.engine.distributed import DistEnv
from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from dygsched.launch.base import Launcher
from dygsched.metrics.run_folder import RunFolder

SUBMITIT_EXECUTORS = ("slurm", "local")  # SUBMITIT_EXECUTOR inside a job: a SLURM job, or submitit's local test executor


def in_submitit_job() -> bool:
    return os.environ.get("SUBMITIT_EXECUTOR", "") in SUBMITIT_EXECUTORS


class SlurmLauncher(Launcher):
    name = "slurm"

    def __init__(self, nodes: int = 1, tasks_per_node: int = 1, gpus_per_node: int | None = None) -> None:
        self.nodes = int(nodes)
        self.tasks_per_node = int(tasks_per_node)
        self.gpus_per_node = None if gpus_per_node is None else int(gpus_per_node)

    def check(self, world_size: int) -> None:
        if self.nodes < 1 or self.tasks_per_node < 1:
            raise ConfigError(
                f"launcher.nodes and launcher.tasks_per_node must be at least 1, got {self.nodes} and {self.tasks_per_node}"
            )
        if self.nodes * self.tasks_per_node != world_size:
            raise ConfigError(
                f"launcher=slurm starts launcher.nodes x launcher.tasks_per_node = {self.nodes} x {self.tasks_per_node} ranks, "
                f"world_size is {world_size}"
            )
        if self.gpus_per_node is not None and self.gpus_per_node not in (0, self.tasks_per_node):
            raise ConfigError(
                f"launcher.gpus_per_node={self.gpus_per_node}: one rank per GPU needs {self.tasks_per_node} (or 0 on CPU nodes)"
            )

    def auto_world_size(self, gpus_here: int) -> int:
        """``world_size=auto``: the allocation's tasks, ``nodes`` x ``tasks_per_node`` (which
        ``slurm_tasks_per_node`` made one per GPU of a node)."""
        return self.nodes * self.tasks_per_node

    def worker_env(self) -> DistEnv | None:
        if not in_submitit_job():
            return None
        from submitit.helpers import TorchDistributedEnvironment

        # Devices stay as SLURM gave them; each rank picks LOCAL_RANK's.
        TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
        return DistEnv.from_environ()

    def check_here(self) -> None:
        raise ConfigError(
            "launcher=slurm submits jobs through Hydra's submitit launcher, which runs for sweeps: "
            "use `dygsched run -m launcher=slurm ...` (a single point is a sweep of one)"
        )

    def launch(
        self, config: RunConfig, data: DynamicData, folder: RunFolder, world_size: int, overrides: Sequence[str] | None
    ) -> None:
        self.check_here()
