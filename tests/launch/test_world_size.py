"""How many ranks and threads a launcher starts: ``world_size=auto`` on one node and on several
(local, torchrun, SLURM, with the GPU count faked), threads per rank, and the settings refused before
any rank starts (``device=cuda`` without a CUDA device, overlapped buckets with a strategy whose
backward communicates): one ``dygsched: error:`` line, exit 1, no run folder."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from dygsched.launch.base import threads_per_rank
from dygsched.launch.checks import check_point, check_run, resolve_world_size
from dygsched.launch.compose import compose_run
from dygsched.launch.local import LocalLauncher
from dygsched.launch.resolvers import slurm_tasks_per_node
from dygsched.launch.slurm import SlurmLauncher
from dygsched.launch.torchrun import TorchrunLauncher
from tests.conftest import TINY_SYNTHETIC
from tests.launch.test_launchers import run_main


@pytest.fixture
def gpus(monkeypatch):
    """``gpus(n)``: this machine has ``n`` CUDA devices, as torch counts them."""

    def fake(count: int) -> None:
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)

    return fake


def test_auto_on_one_machine_is_one_rank_per_gpu_else_two_processes(gpus):
    gpus(4)
    assert resolve_world_size("auto", LocalLauncher()) == 4
    assert resolve_world_size("auto", TorchrunLauncher()) == 4
    assert resolve_world_size("3", LocalLauncher()) == 3  # a number stays that number
    gpus(0)
    assert resolve_world_size("auto", LocalLauncher()) == 2
    assert resolve_world_size("auto", TorchrunLauncher()) == 2


def test_auto_under_torchrun_counts_every_machine(gpus):
    gpus(8)
    several = TorchrunLauncher(nnodes=3, rdzv_endpoint="node0:29500")
    assert resolve_world_size("auto", several) == 24
    several.check(24)
    assert several.command(24, "r", [], "node0:29500")[4] == "--nproc-per-node=8"
    assert resolve_world_size("auto", TorchrunLauncher(nnodes=2, nproc_per_node=3, rdzv_endpoint="h:1")) == 6
    gpus(0)
    assert resolve_world_size("auto", TorchrunLauncher(nnodes=2, rdzv_endpoint="h:1")) == 4  # 2 CPU processes per machine


def slurm_point(*overrides: str) -> tuple[list[str], RunConfig]:
    point = [*TINY_SYNTHETIC, "launcher=slurm", *overrides]
    return point, compose_run(point)


@pytest.mark.parametrize(
    "overrides, gpus_here, tasks, ranks",
    [
        (["world_size=auto"], 4, 4, 4),  # one node, its GPUs counted here
        (["world_size=auto", "launcher.nodes=3"], 4, 4, 12),
        (["world_size=auto", "launcher.nodes=2", "launcher.gpus_per_node=8"], 0, 8, 16),  # from a login node without GPUs
        (["world_size=8", "launcher.nodes=2"], 0, 4, 8),  # a number: world_size / nodes per node
        (["world_size=6", "launcher.nodes=3", "launcher.tasks_per_node=2"], 0, 2, 6),
    ],
)
def test_auto_under_slurm_is_gpus_per_node_times_nodes(gpus, overrides, gpus_here, tasks, ranks):
    gpus(gpus_here)
    point, config = slurm_point(*overrides)
    assert config.launcher.settings["tasks_per_node"] == tasks and isinstance(config.launcher.settings["tasks_per_node"], int)
    checked, world_size = check_point(config)
    assert isinstance(checked.launcher, SlurmLauncher) and world_size == ranks


def test_slurm_submits_numbers_for_auto(gpus):
    """What the submitit plugin gets: numbers for the tasks and GPUs of a node, never the string 'auto'."""
    from hydra import compose, initialize_config_module

    gpus(0)
    with initialize_config_module(config_module="dygsched.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[*TINY_SYNTHETIC, "launcher=slurm", "world_size=auto", "launcher.nodes=2", "launcher.gpus_per_node=4"],
            return_hydra_config=True,
        )
    plugin = OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    assert (plugin["nodes"], plugin["tasks_per_node"], plugin["gpus_per_node"]) == (2, 4, 4)
    assert f"export OMP_NUM_THREADS={plugin['cpus_per_task']}" in plugin["setup"]


def test_slurm_tasks_round_up_so_an_uneven_world_size_is_refused():
    assert slurm_tasks_per_node(3, 2, None) == 2
    with pytest.raises(ConfigError, match="2 x 2 ranks, world_size is 3"):
        SlurmLauncher(nodes=2, tasks_per_node=2).check(3)


def no_run_folder(tmp_path) -> bool:
    results = tmp_path / "results"
    return not results.exists() or not [p for p in results.iterdir() if p.is_dir()]


@pytest.mark.parametrize(
    "gpus_per_node, message", [(None, "this machine has no GPU to count"), (0, "launcher.gpus_per_node is 0")]
)
def test_slurm_auto_without_a_gpu_count_is_refused(tmp_path, capsys, gpus, gpus_per_node, message):
    gpus(0)
    extra = [] if gpus_per_node is None else [f"launcher.gpus_per_node={gpus_per_node}"]
    code, lines = run_main(tmp_path, capsys, "-m", *TINY_SYNTHETIC, "launcher=slurm", "world_size=auto", *extra)
    assert code == 1 and len(lines) == 1 and message in lines[0] and "set launcher.gpus_per_node" in lines[0], lines
    assert not (tmp_path / "results").exists()


def test_threads_per_rank_share_the_node():
    assert threads_per_rank(cores=64, local_ranks=8) == 8
    assert threads_per_rank(cores=16, local_ranks=3) == 5
    assert threads_per_rank(cores=4, local_ranks=8) == 1  # never none
    assert threads_per_rank(cores=4, local_ranks=0) == 4


def test_torchrun_ranks_get_the_cores_of_their_machine(monkeypatch):
    import dygsched.launch.torchrun as torchrun

    monkeypatch.setattr(torchrun, "cores_here", lambda: 32)
    launcher = TorchrunLauncher(nnodes=2, rdzv_endpoint="h:1")
    env = launcher.rank_env(16, {"PATH": "/bin"})
    assert env["OMP_NUM_THREADS"] == "4" and env["PATH"] == "/bin" and env[torchrun.SUPERVISED_ENV] == "1"
    assert launcher.rank_env(16, {"OMP_NUM_THREADS": "2"})["OMP_NUM_THREADS"] == "2"  # the user's setting stays


def test_device_cuda_without_a_cuda_device_is_refused_before_any_rank(tmp_path, capsys, gpus):
    gpus(0)
    code, lines = run_main(tmp_path, capsys, *TINY_SYNTHETIC, "device=cuda", "epochs=1")
    assert code == 1 and len(lines) == 1, lines
    assert "device=cuda but this machine has no CUDA device visible" in lines[0] and "device=cpu" in lines[0]
    assert no_run_folder(tmp_path)


@pytest.mark.parametrize("sched", ["flare", "depcomm", "distdy"])
def test_overlapped_buckets_with_a_strategy_that_communicates_in_backward_are_refused(tmp_path, capsys, sched):
    extra = ["model=sage_temporal", "sched.fanouts=[3]"] if sched == "distdy" else []
    code, lines = run_main(tmp_path, capsys, *TINY_SYNTHETIC, f"sched={sched}", *extra, "grad_sync.overlap=true")
    assert code == 1 and len(lines) == 1, lines
    assert f"grad_sync.overlap=true cannot be used with sched={sched}" in lines[0] and "grad_sync.overlap=false" in lines[0]
    assert no_run_folder(tmp_path)


@pytest.mark.parametrize("sched", ["psg", "depcache", "sven"])
def test_overlapped_buckets_stay_allowed_where_backward_is_local(sched):
    point = [*TINY_SYNTHETIC, f"sched={sched}", "grad_sync.overlap=true"]
    assert check_run(compose_run(point)).strategy.name == sched


def test_overlapped_buckets_with_stale_gradients_are_refused(tmp_path, capsys):
    # staleness=1 launches every bucket's all-reduce at the step's end; buckets overlapped with the
    # backward would be launched a second time, so each gradient would be sent twice
    code, lines = run_main(tmp_path, capsys, *TINY_SYNTHETIC, "sched=sven", "sched.staleness=1", "grad_sync.overlap=true")
    assert code == 1 and len(lines) == 1, lines
    assert "grad_sync.overlap=true cannot be used with sched=sven with staleness 1" in lines[0], lines
    assert no_run_folder(tmp_path)
