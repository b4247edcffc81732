"""The OmegaConf resolvers the launcher configs use (registered as the Hydra app is imported).

``conf/launcher/slurm.yaml`` must hand Hydra's submitit plugin numbers for the tasks and GPUs of
each node, computed from ``world_size`` and ``launcher.nodes`` (``world_size=auto``: one rank per
GPU of a node). Nothing here imports torch unless ``world_size=auto`` has GPUs to count.
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

from dygsched.errors import ConfigError

RESOLVERS = {
    "dygsched_slurm_tasks": "slurm_tasks_per_node",
    "dygsched_slurm_gpus": "slurm_gpus_per_node",
}


def slurm_tasks_per_node(world_size: Any, nodes: Any, gpus_per_node: Any) -> int:
    """``launcher.tasks_per_node``'s default (the ``dygsched_slurm_tasks`` resolver): ``world_size``
    over ``nodes`` (rounded up, so a world size that does not split is refused by ``check``); for
    ``world_size=auto``, one task per GPU of a node: ``launcher.gpus_per_node``, else this
    machine's GPU count (where the job is submitted from a node like those it runs on)."""
    if world_size != "auto":
        try:
            return max(1, -(-int(world_size) // max(1, int(nodes))))
        except (TypeError, ValueError):  # check_world_size says what is wrong with it
            return 1
    if gpus_per_node is not None:
        per_node = int(gpus_per_node)
    else:
        import torch

        per_node = torch.cuda.device_count()
    if per_node < 1:
        raise ConfigError(
            "world_size=auto with launcher=slurm starts one rank per GPU of each node, and "
            + ("launcher.gpus_per_node is 0" if gpus_per_node is not None else "this machine has no GPU to count")
            + ": set launcher.gpus_per_node=<GPUs per node>, or world_size=<ranks>"
        )
    return per_node


def slurm_gpus_per_node(gpus_per_node: Any, tasks_per_node: Any) -> int:
    """``launcher.gpus_per_node`` as SLURM gets it: as set, else one GPU per task."""
    return int(tasks_per_node) if gpus_per_node is None else int(gpus_per_node)


def register() -> None:
    for name, function in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, globals()[function])
