"""The one check pipeline every entry point runs once, in a fixed order, before any rank trains.

1. types and values: the config composed and typed (``compose_run``): every setting of the run,
   of its strategy's configuration and of its dataset and optimizer is checked as the typed
   ``RunConfig`` is built, before torch is imported;
2. the files: the results folder can be written, a catalogued dataset file is there (``precheck``,
   still without torch, so ``dygsched run`` refuses a mistyped value or a missing download in the
   time Python and Hydra take to start);
3. components: the strategy built from its configuration, the model's, the data source's and the
   launcher's settings checked against their classes, the launcher built, and what the pair of
   them refuses (``check_run`` returns them, as ``CheckedRun``); the world size and what the
   launcher refuses of it (``check_ranks``);
4. data: the strategy's own ``check`` of the data, and the model and optimizer built on it
   (``check_data``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dygsched.engine.run_config import RunConfig, check_world_size
from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from dygsched.data.kinds import DynamicData
    from dygsched.engine.strategy import Strategy
    from dygsched.launch.base import Launcher


def precheck(run: RunConfig) -> None:
    """Stage 2, before torch is imported: the results folder, a catalogued dataset file."""
    check_results_dir(Path(run.results_dir), keep=False)
    if run.dataset.path is not None:
        from dygsched.data.download import ensure_readable

        ensure_readable(run.dataset.path)  # a catalogued download: there, and its bytes intact


def check_results_dir(results: Path, keep: bool = True) -> None:
    """``results_dir`` must be a folder this process can create and write, checked before any rank
    starts; with ``keep=False`` the folders the check had to create are removed again (a run
    refused later leaves nothing behind)."""
    missing = [folder for folder in [results, *results.parents] if not folder.exists()]
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"results_dir {results} cannot be used: {exc.strerror or exc}") from None
    writable = os.access(results, os.W_OK | os.X_OK)
    if not keep:
        for folder in missing:  # deepest first
            folder.rmdir()
    if not writable:
        raise ConfigError(f"results_dir {results} cannot be used: not writable")


@dataclass(frozen=True)
class CheckedRun:
    """A run that passed stages 1 to 3: its typed configuration, its strategy and its launcher, built once."""

    run: RunConfig
    strategy: Strategy
    launcher: Launcher


def check_run(run: RunConfig) -> CheckedRun:
    """Stage 3: the strategy, the components' settings against their classes, the launcher."""
    from dygsched.engine.build import MODEL_ONLY_SETTINGS

    strategy = run.sched.build()
    check_overlap(run, strategy)
    run.model.check(MODEL_ONLY_SETTINGS)
    run.dataset.check()
    return CheckedRun(run, strategy, build_launcher(run))


def check_overlap(run: RunConfig, strategy: Strategy) -> None:
    """``grad_sync.overlap=true`` starts bucket all-reduces inside the last backward; a strategy whose
    backward runs collectives of its own would interleave the two in each rank's own order (under
    NCCL: a hang), so the pair is refused. So is a strategy that applies stale gradients (Sven's
    ``staleness=1``): its all-reduce already overlaps the next step, and the buckets launched in
    the backward would be launched again by the stale synchronisation, every gradient sent twice."""
    if run.grad_sync.overlap and strategy.gradient_staleness:
        raise ConfigError(
            f"grad_sync.overlap=true cannot be used with sched={strategy.name} with staleness "
            f"{strategy.gradient_staleness}: its stale all-reduce already overlaps the next step "
            "(set grad_sync.overlap=false, or the strategy's staleness to 0)"
        )
    if run.grad_sync.overlap and strategy.communicates_in_backward:
        raise ConfigError(
            f"grad_sync.overlap=true cannot be used with sched={strategy.name}: its backward pass exchanges data "
            "between ranks, which overlapped gradient buckets would interleave in a different order on each rank "
            "(set grad_sync.overlap=false)"
        )


def build_launcher(run: RunConfig) -> Launcher:
    from dygsched.launch.base import Launcher

    launcher = run.launcher.build("launcher")
    if not isinstance(launcher, Launcher):
        raise ConfigError(f"launcher '{run.launcher.name}' is not a dygsched Launcher")
    return launcher


def resolve_world_size(value: Any, launcher: Launcher) -> int:
    """``world_size``: its number, or for ``auto`` one rank per GPU of every node the launcher runs
    ranks on (this machine's GPU count; 2 CPU processes per node where it has none)."""
    import torch

    check_world_size(value)
    return launcher.auto_world_size(torch.cuda.device_count()) if value == "auto" else int(value)


def check_ranks(checked: CheckedRun) -> int:
    """Stage 3's last step where this process starts the ranks: the world size, and what the launcher refuses of it."""
    world_size = resolve_world_size(checked.run.world_size, checked.launcher)
    checked.launcher.check(world_size)
    return world_size


def check_point(run: RunConfig) -> tuple[CheckedRun, int]:
    """Everything that can be checked without the data (stages 1 to 3): what a sweep checks of every point."""
    checked = check_run(run)
    return checked, check_ranks(checked)


def check_data(checked: CheckedRun, data: DynamicData, world_size: int) -> None:
    """Stage 4: the strategy's own check of the data, and the model and optimizer it builds."""
    from dygsched.engine.build import build_model, build_optimizer
    from dygsched.engine.node_memory.init_from import check_init_from

    check_strategy_data(checked, data, world_size)
    check_early_stop_metric(checked, data)
    model = build_model(checked.run.model, data)  # a model that cannot be built fails here, before any worker starts
    checked.strategy.check_model(model)
    build_optimizer(checked.run.optim, model.parameters())
    check_init_from(checked.run)  # task=node: the link-prediction run it starts from (node_task.init_from)


def check_strategy_data(checked: CheckedRun, data: DynamicData, world_size: int) -> None:
    """The strategy's own check of the data; a stream cut into too few snapshots for the window and
    the split is refused in words about the cut (``dataset.snapshot``)."""
    from dygsched.data.groups import TooFewSnapshots, fewest_snapshots
    from dygsched.data.temporal_graph import TemporalGraph
    from dygsched.data.time_cut import parse_snapshot
    from dygsched.launch.event_strategies import check_event_model_strategy

    run = checked.run
    check_event_model_strategy(run.model, checked.strategy, data)
    try:
        checked.strategy.check(data, run, world_size)
    except TooFewSnapshots as exc:
        cut = parse_snapshot(run.dataset.snapshot)
        if cut is None or not isinstance(data, TemporalGraph):
            raise
        needed = fewest_snapshots(run.window, run.split.train, run.split.val)
        raise ConfigError(
            f"{cut.label} cuts dataset '{run.dataset.name}' into {data.num_snapshots} snapshots, fewer than the "
            f"{needed} that window={run.window} and a {run.split.train}/{run.split.val}/rest split "
            f"need ({exc}): cut finer or shorten the window"
        ) from None


def check_early_stop_metric(checked: CheckedRun, data: DynamicData) -> None:
    """``early_stop.metric`` must name a validation metric this strategy records on this data."""
    from dygsched.metrics.early_stop import watched_metric

    early_stop = checked.run.early_stop
    if early_stop.metric is None:
        return
    recorded = checked.strategy.evaluation_metrics(data, checked.run)
    try:
        watched_metric(early_stop.metric, recorded)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("the run does not", f"sched={checked.strategy.name} does not", 1)) from None


def check_device_here(device: str) -> None:
    """``device=cuda`` on a machine without a visible CUDA device: refused before any rank starts."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        raise ConfigError(f"device=cuda but this machine has no CUDA device visible{why}: use device=cpu or device=auto")


def wants_fork_server(run: RunConfig) -> bool:
    """Whether a checked run's ranks start from the local launcher's fork server (this process starts them, on CPU)."""
    if run.launcher.name != "local" or "RANK" in os.environ:
        return False
    from dygsched.launch.fork_server import serves

    return serves(run.device)
