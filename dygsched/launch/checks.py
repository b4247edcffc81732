"""The one check pipeline every entry point runs once, in a fixed order, before any rank trains.

1. schema: the config composed against ``RunSchema`` (``compose_config``) and resolved; every
   component setting keeps the type of its default;
2. settings: what their values alone refuse (``config_checks``), the results folder, the dataset's
   file; stages 1 and 2 are ``precheck``, which imports no torch, so ``dygsched run`` refuses a
   mistyped value in the time Python and Hydra take to start;
3. components: the typed ``RunConfig``, the strategy built from its own config class, the launcher,
   and what the pair of them refuses (``check_run`` returns them, as ``CheckedRun``); the world
   size and what the launcher refuses of it (``check_ranks``);
4. data: the strategy's own ``check`` of the data, and the model and optimizer built on it
   (``check_data``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from dygsched.engine.run_config import plain_config
from dygsched.errors import ConfigError
from dygsched.launch.compose import compose_config, group_choices, resolved, resolver_refusal
from dygsched.launch.config_checks import check_group_types, check_results_dir, check_settings, check_world_size

if TYPE_CHECKING:
    from dygsched.data.kinds import DynamicData
    from dygsched.engine.run_config import RunConfig
    from dygsched.engine.strategy import Strategy
    from dygsched.launch.base import Launcher


def precheck(cfg: DictConfig, overrides: Sequence[str] | None) -> dict[str, Any] | None:
    """Stages 1 and 2, before torch is imported: the resolved config, or ``None`` when an
    interpolation cannot resolve (``check_run`` then says so in its own words). ``overrides``: the
    command line's, whose group choices the component types are checked against (``None``: not
    known, e.g. a config composed by a script, whose components keep their classes' checks)."""
    try:
        config = plain_config(cfg)
        defaults = plain_config(compose_config(group_choices(list(overrides)))) if overrides is not None else None
    except Exception as exc:  # an interpolation that cannot resolve: the run says so in its own words
        refusal = resolver_refusal(exc)
        if refusal is not None:
            raise refusal from None
        return None
    check_settings(config)
    if defaults is not None:
        check_group_types(config, defaults)
    check_results_dir(Path(str(config["results_dir"])), keep=False)
    from dygsched.data.time_cut import parse_snapshot

    parse_snapshot((config.get("dataset") or {}).get("snapshot"))  # an unknown unit, a length of 0: refused now
    dataset_path = (config.get("dataset") or {}).get("path")
    if isinstance(dataset_path, str):
        from dygsched.data.download import ensure_readable

        ensure_readable(dataset_path)  # a catalogued download: there, and its bytes intact
    return config


@dataclass(frozen=True)
class CheckedRun:
    """A config that passed stages 1 to 3: its typed settings, its strategy and its launcher, built once."""

    run: RunConfig
    strategy: Strategy
    launcher: Launcher


def check_run(cfg: DictConfig, overrides: Sequence[str] | None = None, settings_checked: bool = False) -> CheckedRun:
    """Stages 1 to 3 (1 and 2 only where ``settings_checked`` is false: the caller ran ``precheck``)."""
    if not settings_checked:
        precheck(cfg, overrides)
    from dygsched.engine.build import build_strategy
    from dygsched.engine.run_config import RunConfig

    run = RunConfig.of(resolved(cfg))
    strategy = build_strategy(run.sched)
    check_overlap(run, strategy)
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
    from dygsched.components import instantiate_component
    from dygsched.launch.base import Launcher

    params = run.launcher.params
    if "_target_" not in params:
        raise ConfigError(f"launcher '{run.launcher.name}' names no _target_")
    launcher = instantiate_component(params, "launcher")
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


def check_point(
    cfg: DictConfig, overrides: Sequence[str] | None = None, settings_checked: bool = False
) -> tuple[CheckedRun, int]:
    """Everything that can be checked without the data (stages 1 to 3): what a sweep checks of every point."""
    checked = check_run(cfg, overrides, settings_checked)
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

    check_event_model_strategy(checked.run.model, checked.strategy, data)
    try:
        checked.strategy.check(data, checked.run.settings, world_size)
    except TooFewSnapshots as exc:
        cut = parse_snapshot(checked.run.dataset.get("snapshot"))
        if cut is None or not isinstance(data, TemporalGraph):
            raise
        settings = checked.run.settings
        needed = fewest_snapshots(settings.window, settings.train_fraction, settings.val_fraction)
        raise ConfigError(
            f"{cut.label} cuts dataset '{checked.run.dataset.name}' into {data.num_snapshots} snapshots, fewer than the "
            f"{needed} that window={settings.window} and a {settings.train_fraction}/{settings.val_fraction}/rest split "
            f"need ({exc}): cut finer or shorten the window"
        ) from None


def check_early_stop_metric(checked: CheckedRun, data: DynamicData) -> None:
    """``early_stop.metric`` must name a validation metric this strategy records on this data."""
    from dygsched.metrics.early_stop import watched_metric

    early_stop = checked.run.early_stop
    if early_stop.metric is None:
        return
    recorded = checked.strategy.evaluation_metrics(data, checked.run.settings)
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


def wants_fork_server(config: Mapping[str, Any]) -> bool:
    """Whether a checked config's ranks start from the local launcher's fork server (this process starts them, on CPU)."""
    if (config.get("launcher") or {}).get("name") != "local" or "RANK" in os.environ:
        return False
    from dygsched.launch.fork_server import serves

    return serves(str(config.get("device", "auto")))
