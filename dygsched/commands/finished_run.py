"""A finished run folder opened again in this process: its configuration, data, model and checkpoint.

``open_run`` checks the folder (its ``config.yaml`` and ``checkpoint.pt``), in one line each when
something is wrong, before anything is loaded. ``load_run`` rebuilds what the run trained, in one
process on the CPU: the data as the run's strategy read it (snapshots, or an event stream), the
model inside the objective the strategy trained (the module the checkpoint's ``model`` holds), and
the checkpoint's weights loaded into it.

Every strategy saves the same checkpoint: rank 0 writes the trained module's state, which the
gradient all-reduce keeps identical on every rank (``dygsched/engine/checkpoint.py``), so there is
no partitioned or sharded parameter to gather. The node-memory strategies' state table (DepCache's
replicas, DepComm's and Sven's owned rows) is gathered by the run itself into one table on rank 0,
the one its validation started from, which the checkpoint keeps (``stream_outputs`` starts from
it); FlareDTDG's chunk orders, REAL's reuse tables and the snapshot strategies' plans do not change
a prediction, nor do DistDy's placements (``distdy_outputs`` rebuilds its evaluation on one store).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dygsched.data.events import EventStream
from dygsched.data.kinds import DynamicData
from dygsched.data.loading import for_task, load_data
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.build import build_model, build_strategy
from dygsched.engine.checkpoint import CHECKPOINT_FILE, load_checkpoint
from dygsched.engine.node_memory.config import NodeMemoryConfig, SingleProcessConfig
from dygsched.engine.run_config import CONFIG_FILE, RunConfig, saved_run
from dygsched.engine.strategy import Strategy
from dygsched.errors import ConfigError


@dataclass(frozen=True)
class RunFiles:
    """A run folder that holds a configuration and a checkpoint."""

    path: Path
    run: RunConfig
    checkpoint: dict[str, Any]

    @property
    def epoch(self) -> int:
        """The epoch the checkpoint completed (counted from 0, as the metric rows count it)."""
        return int(self.checkpoint["epoch"])


@dataclass(frozen=True)
class LoadedRun:
    """What the run trained, rebuilt: its data, its strategy (set up as one rank), the trained module."""

    files: RunFiles
    data: DynamicData
    strategy: Strategy
    module: nn.Module
    model: nn.Module

    @property
    def node_ids(self) -> torch.Tensor:
        """``node_ids[v]``: the id node ``v`` has in the user's file (the loader's compaction undone)."""
        ids = self.data.node_ids
        return ids if ids is not None else torch.arange(self.data.num_nodes)


def open_run(folder: str | Path) -> RunFiles:
    """The run folder ``folder``, checked: one ``ConfigError`` line when it is not one or holds no checkpoint."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise ConfigError(f"no run folder {path}")
    if not (path / CONFIG_FILE).is_file():
        raise ConfigError(f"{path} is not a run folder (no {CONFIG_FILE}; give results/<run id>)")
    run = saved_run(path)  # one line naming the file when it is not a run's configuration
    if not (path / CHECKPOINT_FILE).is_file():
        why = "it ran with checkpoint=false" if run.checkpoint is False else "no epoch completed"
        raise ConfigError(f"{path} has no {CHECKPOINT_FILE} ({why}): train it again with checkpoint=true to predict from it")
    try:
        state = load_checkpoint(path)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("cannot resume: ", "cannot read the run's weights: ")) from None
    return RunFiles(path, run, state)


def load_run(files: RunFiles) -> LoadedRun:
    """Rebuild ``files``' run as one rank on the CPU and load its trained weights."""
    from dygsched.engine.strategy import Artifacts, RunContext

    run = files.run
    strategy = build_strategy(run.sched)
    data = for_task(load_data(run.dataset), strategy.data_kind, run)
    if isinstance(data, EventStream):
        strategy = _one_rank_memory_strategy(files)  # the global batch of the run's ranks, in one process
    elif not isinstance(data, TemporalGraph):
        raise ConfigError(f"predict reads snapshots or event streams, not {type(data).__name__}")
    device = torch.device("cpu")
    strategy.setup(RunContext(data, run, 0, 1, device, Artifacts(None, True)))
    model = build_model(run.model, data)
    module = strategy.objective(model)
    try:
        module.load_state_dict(files.checkpoint["model"])
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"{files.path / CHECKPOINT_FILE} does not fit the model its config.yaml builds ({first})") from None
    module.eval()
    return LoadedRun(files, data, strategy, module, model)


def _one_rank_memory_strategy(files: RunFiles) -> Strategy:
    """The one-process reference (``sched=single``) stepping the run's global batch: a node-memory
    run on ``M`` ranks of ``B`` events each takes the steps of one process with ``B x M`` events
    (``dygsched/engine/node_memory/strategy.py``), and its evaluation writes the state per global batch."""
    world = _world_size(files)
    batch = files.run.strategy_settings(NodeMemoryConfig).batch_size * world
    return build_strategy(SingleProcessConfig(batch_size=batch))


def _world_size(files: RunFiles) -> int:
    """The ranks the run trained on (``config.yaml`` may keep ``auto``; the summary has the count)."""
    if isinstance(files.run.world_size, int):
        return files.run.world_size
    return 1 if files.run.sched.name == "single" else int(_summary(files.path).get("world_size") or 1)


def _summary(folder: Path) -> dict[str, Any]:
    path = folder / "summary.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        raise ConfigError(f"the run's world size is 'auto' and {path} does not say what it was") from None
