"""Launchers without starting a run: torchrun's command, SLURM's submission, and everything that
must fail before any worker starts (one ``dygsched: error:`` line, no run folder)."""

import shlex
import sys

import pytest

from dygsched.errors import ConfigError, DygschedError
from dygsched.launch.compose import compose_config, compose_run
from dygsched.launch.run_command import main
from dygsched.launch.slurm import SlurmLauncher
from dygsched.launch.sweeps import sweep_points
from dygsched.launch.torchrun import TorchrunLauncher, quote_override, root_cause, worker_overrides
from dygsched.metrics.run_folder import RunFolder
from tests.conftest import TINY_SYNTHETIC

DISTDY = ["sched=distdy", "model=sage_temporal", "sched.fanouts=[3]"]


def test_torchrun_command_c10d_and_static():
    launcher = TorchrunLauncher(nnodes=2, rdzv_endpoint="node0:29500")
    launcher.check(8)
    cmd = launcher.command(8, "run-1", ["model=wdgcn", "run_id=run-1"], "node0:29500")
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert {
        "--nnodes=2",
        "--nproc-per-node=4",
        "--max-restarts=0",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=node0:29500",
        "--rdzv-id=run-1",
    } <= set(cmd)
    assert cmd[-5:] == ["-m", "dygsched", "run", "model=wdgcn", "run_id=run-1"]
    static = TorchrunLauncher(nnodes=2, node_rank=1, rdzv_backend="static", rdzv_endpoint="10.0.0.1:1234")
    cmd = static.command(4, "r", [], "10.0.0.1:1234")
    assert {"--node-rank=1", "--master-addr=10.0.0.1", "--master-port=1234", "--nproc-per-node=2"} <= set(cmd)
    assert not any(arg.startswith("--rdzv") for arg in cmd)


@pytest.mark.parametrize(
    "kwargs, world_size, message",
    [
        ({"nnodes": 3}, 4, "does not split evenly"),
        ({"nnodes": 2}, 4, "rdzv_endpoint=HOST:PORT is needed"),
        ({"nnodes": 2, "rdzv_endpoint": "nohost"}, 4, "must be HOST:PORT"),
        ({"nproc_per_node": 3}, 4, "makes 3 ranks, world_size is 4"),
        ({"rdzv_backend": "etcd"}, 2, "unknown launcher.rdzv_backend"),
        ({"nnodes": 0}, 2, "at least 1"),
        ({"nnodes": 2, "node_rank": 2, "rdzv_endpoint": "h:1"}, 4, "node_rank must be in"),
    ],
)
def test_torchrun_settings_that_cannot_run(kwargs, world_size, message):
    with pytest.raises(ConfigError, match=message):
        TorchrunLauncher(**kwargs).check(world_size)


def test_ranks_get_the_same_overrides_with_this_runs_folder(tmp_path):
    folder = RunFolder(tmp_path / "my results", "run-1")
    args = worker_overrides(
        ["model=wdgcn", "run_id=old", "resume=true", "+experiment=x", "launcher=torchrun"], folder, "/r/run 1"
    )
    assert args[:3] == ["model=wdgcn", "+experiment=x", "launcher=torchrun"]
    assert args[3:] == [f"results_dir='{tmp_path}/my results'", "run_id=run-1", "resume='/r/run 1'"]
    assert compose_run(args[3:]).resume == "/r/run 1"  # the quoting survives Hydra's parser
    assert quote_override("k", "it's") == "k='it\\'s'"
    assert compose_config([quote_override("run_id", "it's")]).run_id == "it's"  # Hydra's parser alone (not a plain name)


def test_root_cause_from_torchrun_report():
    log = """
Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 11)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-01-01_00:00:00
  host      : node3
  rank      : 5 (local_rank: 1)
  exitcode  : -9 (pid: 12)  (SIGKILL)
  error_file: <N/A>
"""
    assert root_cause(log) == "rank 5 was killed by SIGKILL (killed, or out of memory)"
    assert root_cause(log.replace("-9 (pid: 12)  (SIGKILL)", "3 (pid: 12)")) == "rank 5 exited with code 3"
    assert root_cause("nothing useful") is None


def hydra_config(overrides):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="dygsched.conf", version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=True)


def test_slurm_config_submits_one_rank_per_task():
    from hydra.utils import instantiate
    from omegaconf import OmegaConf
    from submitit.slurm.slurm import SlurmExecutor, _make_sbatch_string

    cfg = hydra_config(
        [
            "launcher=slurm",
            "world_size=8",
            "launcher.nodes=2",
            "launcher.tasks_per_node=4",
            "hydra.launcher.partition=gpu",
            "hydra.launcher.timeout_min=90",
        ]
    )
    OmegaConf.resolve(cfg)
    SlurmLauncher(**{k: v for k, v in cfg.launcher.items() if k not in {"name", "_target_"}}).check(cfg.world_size)
    plugin = instantiate(cfg.hydra.launcher)  # the submitit plugin's own launcher, as `-m` builds it
    assert type(plugin).__name__ == "SlurmLauncher" and type(plugin).__module__.startswith(
        "hydra_plugins.hydra_submitit_launcher"
    )
    params = plugin.params
    assert (params["nodes"], params["tasks_per_node"], params["gpus_per_node"]) == (2, 4, 4)
    # What submitit turns those into: the plugin passes them through AutoExecutor's generic names.
    names = {"timeout_min": "time", "tasks_per_node": "ntasks_per_node", "mem_gb": "mem", "name": "job_name"}
    sbatch = {names.get(k, k): v for k, v in params.items() if k in SlurmExecutor._valid_parameters() or k in names}
    sbatch["mem"] = f"{sbatch['mem']}GB"
    script = _make_sbatch_string(command="python -u -m submitit.core._submit", folder="/tmp/submitit", **sbatch)
    for line in (
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --gpus-per-node=4",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=90",
        "export SLURM_KILL_BAD_EXIT=1",
    ):
        assert line in script


def test_slurm_world_size_must_match_the_allocation():
    with pytest.raises(ConfigError, match="2 x 4 ranks, world_size is 4"):
        SlurmLauncher(nodes=2, tasks_per_node=4).check(4)
    with pytest.raises(ConfigError, match="gpus_per_node=2"):
        SlurmLauncher(nodes=1, tasks_per_node=4, gpus_per_node=2).check(4)
    SlurmLauncher(nodes=1, tasks_per_node=4, gpus_per_node=0).check(4)  # CPU nodes


def test_sweep_points_expand_like_hydra():
    points = sweep_points(["sched=psg,greedy", "model=tgcn,wdgcn", "seed=range(0,2)", "epochs=1"])
    assert len(points) == 8 and ["sched=greedy", "model=wdgcn", "seed=1", "epochs=1"] in points


def run_main(tmp_path, capsys, *args):
    """``dygsched run ARGS`` in this process: (exit code, stderr lines); an error raised up front counts as
    exit 1, as ``dygsched`` reports it."""
    try:
        code = main([*args, f"results_dir={tmp_path / 'results'}"])
    except DygschedError as exc:
        print(f"dygsched: error: {exc}", file=sys.stderr)
        code = 1
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["sched.planner.time_limit=-1"], "sched.planner.time_limit must be positive"),
        (["sched=ilp", "sched.planner.time_limit=0"], "sched.planner.time_limit must be positive"),
        (["optim.weight_decay=-1"], "optim.weight_decay must be non-negative"),
        (["dist_timeout_s=0"], "dist_timeout_s must be positive"),
        (["dist_backend=nccl2"], "dist_backend must be auto, a backend (gloo, nccl"),
        (["dist_backend=nccl", "device=cpu"], "dist_backend=nccl has no backend for CPU tensors, and device=cpu"),
        (["dist_backend=cuda:nccl", "device=cpu"], "dist_backend=cuda:nccl has no backend for CPU tensors"),
        (['dist_backend="cpu:gloo,cuda"'], "dist_backend must be auto"),
        (['dist_backend="cpu:gloo,cpu:gloo"'], "dist_backend names a device type twice"),
        (["seed=-1"], "seed must be in"),
        (["sched.planner.capacity=0"], "capacity"),
        (["sched=greedy", "sched.timeline.lr_scaling=cubic"], "unknown sched.timeline.lr_scaling"),
        (["sched=greedy", "sched.planner.solver=nope"], "unknown solver 'nope'"),
        (["sched=ilp", "+sched.planner.options.backend=nope"], "unknown ILP backend 'nope'"),
        (["sched=greedy", "+sched.planner.options.bogus=1"], "has no option bogus"),
        (["world_size=7"], "larger than the 6 training groups"),
        (["launcher=nope"], "launcher/nope"),
        (["launcher=torchrun", "world_size=3", "launcher.nnodes=2"], "does not split evenly"),
        (["launcher=slurm"], "dygsched run -m launcher=slurm"),
        (["resume=/nonexistent/run"], "no run folder"),
        (["dataset.num_nodes=1"], "num_nodes must be at least 2"),
        (["sched=flare", "sched.partition=spectral"], "unknown sched.partition 'spectral'"),
        (["sched=flare", "sched.full=9"], "must be at most the window (W=4)"),
        (["sched=flare", "sched.alpha=1.5"], "sched.alpha must lie in [0, 1]"),
        (["sched=flare", "sched.chunks=100"], "more chunks than the graph's 120 nodes"),
        (["sched=flare", "model=evolvegcn_h"], "EvolveGCNHLayer cannot run on a part of them"),
        (["sched=flare", "model=gclstm"], "GCLSTMLayer cannot run on a part of them"),
        (["sched=real", "model=gclstm"], "sched=real: REAL's reuse engine computes layer 0's convolution of its input once"),
        (["sched=flare", "sched.schedule=[3,5]"], "non-increasing"),
        ([*DISTDY, "sched.partition=spectral"], "unknown sched.partition 'spectral'"),
        ([*DISTDY, "sched.capacity_factor=0.5"], "the smallest feasible capacity is sched.capacity_factor="),
        ([*DISTDY, "sched.capacity_bytes=100"], "sched.capacity_bytes=100 is too small"),
        ([*DISTDY, "sched.segments=9", "dataset.feature_dim=4"], "sched.segments=9 is more than the 4 feature columns"),
        ([*DISTDY, "sched.segments=0"], "sched.segments (feature segments, S) must be at least 1"),
        ([*DISTDY, "world_size=121"], "121 stores are more than the graph's 120 nodes"),
        ([*DISTDY, "window=13"], "window (13) is larger than the number of snapshots (12)"),
        ([*DISTDY, "model=tgcn"], "use model=sage_temporal"),
        ([*DISTDY, "sched.fanouts=[3,3]"], "sched.fanouts has 2 entries for a model of 1 layers"),
        ([*DISTDY, "sched.loop=online"], "set epochs=9"),
        # a strategy's typed configuration (FlareConfig, DistDyConfig; SvenConfig's in test_run), checked as the run starts
        (["sched=flare", "sched.chunks=0"], "sched.chunks (chunks per rank) must be a positive integer, got 0"),
        (["sched=flare", "sched.schedule=[4,x]"], "sched.schedule must be a string or a list of integers"),
        ([*DISTDY, "sched.loop=sometimes"], "unknown sched.loop 'sometimes'"),
    ],
)
def test_impossible_configurations_fail_before_any_worker(tmp_path, capsys, overrides, message):
    code, lines = run_main(tmp_path, capsys, *TINY_SYNTHETIC, *overrides)
    assert code == 1 and len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "results").exists() or not [p for p in (tmp_path / "results").iterdir() if p.is_dir()]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model=tgcn,nope"], "model/nope"),
        (
            ["sched=psg,greedy", "sched.planner.capacity=1,0"],
            "capacity (units per rank per iteration) must be a positive integer, got 0 (sweep point: ",
        ),
        (["launcher=slurm", "world_size=8", "launcher.tasks_per_node=4"], "1 x 4 ranks, world_size is 8 (sweep point: "),
    ],
)
def test_a_sweep_is_checked_point_by_point_before_the_first_job(tmp_path, capsys, overrides, message):
    code, lines = run_main(tmp_path, capsys, "-m", *TINY_SYNTHETIC, *overrides)
    assert code == 1 and len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "results").exists()


def test_printed_torchrun_command_is_valid_shell(tmp_path):
    launcher = TorchrunLauncher()
    cmd = launcher.command(
        2, "r", worker_overrides(["dataset.path='/data/a b.csv'"], RunFolder(tmp_path, "r"), None), "127.0.0.1:1"
    )
    assert shlex.split(shlex.join(cmd)) == cmd
