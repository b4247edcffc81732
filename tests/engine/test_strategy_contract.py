"""The strategy contract: every strategy in ``conf/sched`` (and a toy one that lives only in the
tests), on 1 and 2 gloo ranks, through the worker's own code path, for each task it trains: node
targets, and link prediction (``task=link``).

For each: the run finishes; where the strategy claims exactness, its parameters after every step of
two epochs equal single-process SGD on the same iterations' groups; every metric is measured or
declared missing with a reason (never a 0 for "not measured"); and a run checkpointed after one
epoch and resumed trains exactly the same losses as the uninterrupted run. A strategy that does not
train a task refuses it in one line before any rank starts.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.distributed as dist
from omegaconf import OmegaConf

from dygsched.data.loading import for_task, load_data
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.build import build_model, build_strategy
from dygsched.engine.checkpoint import load_checkpoint
from dygsched.engine.distributed import DistEnv
from dygsched.engine.objective import build_split, group_objective
from dygsched.engine.run_config import RunConfig
from dygsched.engine.snapshot_groups.config import SnapshotGroupConfig
from dygsched.engine.worker import seed_everything, train_in_joined_group
from dygsched.launch.compose import compose_run
from tests.conftest import ROOT, TINY_SYNTHETIC
from tests.engine.node_shard_strategy import NodeShardConfig, NodeShardStrategy
from tests.harness import run_ranks

TEST_CONF = ROOT / "tests" / "conf"
# The snapshot and node-partition strategies; the node-memory ones (event streams and memory models)
# have their own battery in tests/engine/test_node_memory.py.
STRATEGIES = sorted(
    p.stem for p in (ROOT / "conf" / "sched").glob("*.yaml") if "node_memory" not in OmegaConf.load(p).get("_target_", "")
) + ["node_shard"]
# The strategies that train link prediction on snapshots (task=link): every one of them.
LINK_STRATEGIES = list(STRATEGIES)
TASKS = {"node": [], "link": ["task=link", "link.embedding_dim=8"]}
EPOCHS = 2
LR = 0.05
# Every strategy's settings for a quick run; the planners still solve, the timeline still switches.
SHRINK = {
    "dygnex_g": ["sched.timeline.profile_epochs=1"],
    "dygnex_l": ["sched.timeline.profile_epochs=1", "sched.planner.time_limit=5"],
    "greedy": ["sched.timeline.profile_epochs=1", "sched.executor.reuse_path=diff"],
    "ilp": ["sched.timeline.profile_epochs=1", "sched.executor.reuse_path=diff", "sched.planner.time_limit=5"],
    "real": ["sched.timeline.profile_epochs=1", "sched.executor.reuse_path=diff", "sched.planner.time_limit=5"],
    "real_g_paper": ["sched.timeline.profile_epochs=1", "sched.executor.reuse_path=diff"],
    "flare": ["sched.chunks=4"],
    "distdy": ["model=sage_temporal", "sched.fanouts=[3]", "sched.batch=32"],
}


def config(name: str, results: Path, *extra: str) -> RunConfig:
    overrides = [
        *TINY_SYNTHETIC,
        f"hydra.searchpath=[file://{TEST_CONF}]",
        f"sched={name}",
        "optim=sgd",
        f"optim.lr={LR}",
        "device=cpu",
        f"results_dir={results}",
        *SHRINK.get(name, []),
        *extra,
    ]
    return compose_run(overrides)


# The two-rank runs start their group with a backend per device type, as a CUDA run's
# cpu:gloo,cuda:nccl group is; the one-rank runs with the default (gloo on CPU).
DEVICE_KEYED = "cpu:gloo"
BACKEND = {1: "gloo", 2: DEVICE_KEYED}


def _rank(rank: int, world_size: int, results: str, task: str) -> None:
    env = DistEnv(rank, world_size, 0)
    cpu = torch.device("cpu")
    data = None
    backend = [f"dist_backend={BACKEND[world_size]}"] if world_size == 2 else []
    for name in STRATEGIES if task == "node" else LINK_STRATEGIES:
        root = Path(results) / name
        full = config(name, root, f"epochs={EPOCHS}", "run_id=full", *backend, *TASKS[task])
        data = data or load_data(full.dataset)
        train_in_joined_group(full, env, cpu, data)
        first = config(name, root, "epochs=1", "run_id=resumed", *backend, *TASKS[task])
        train_in_joined_group(first, env, cpu, data)
        resumed = config(name, root, f"epochs={EPOCHS}", "run_id=resumed", f"resume={root / 'resumed'}", *backend, *TASKS[task])
        train_in_joined_group(resumed, env, cpu, data)
        dist.barrier()


RUNS = [(1, "node"), (2, "node"), (1, "link"), (2, "link")]
# One rank in `make test-slow`: the two-rank runs keep every promise (one process's losses, honest
# metrics, exact resume) in the default selection, and the one-rank runs add only the plain group's path
RUN_PARAMS = [pytest.param(run, marks=pytest.mark.slow) if run[0] == 1 else run for run in RUNS]


@pytest.fixture(scope="module", params=RUN_PARAMS, ids=[f"{task}-{size}rank{'s' if size > 1 else ''}" for size, task in RUNS])
def contract_runs(request, tmp_path_factory) -> tuple[Path, str]:
    world_size, task = request.param
    results = tmp_path_factory.mktemp(f"contract{world_size}{task}")
    run_ranks(_rank, (world_size, str(results), task), nprocs=world_size, timeout_s=600, backend=BACKEND[world_size])
    return results, task


def trained(contract_runs: tuple[Path, str], name: str) -> tuple[Path, str]:
    """The results folder of ``name``'s runs under the fixture's task (skipped where the strategy does not train it)."""
    results, task = contract_runs
    if task == "link" and name not in LINK_STRATEGIES:
        pytest.skip(f"sched={name} does not train task=link (it refuses it: test_a_strategy_refuses_a_task_it_does_not_train)")
    return results, task


def epoch_groups(folder: Path) -> list[list[list[int]]]:
    """The groups each iteration of each epoch trained, over all ranks (from the run's plan files)."""
    summary = json.loads((folder / "summary.json").read_text())
    switch = summary.get("switch_epoch")
    plan = json.loads((folder / "plan.json").read_text())
    profiling = json.loads((folder / "plan_profiling.json").read_text()) if (folder / "plan_profiling.json").exists() else None
    epochs = []
    for epoch in range(int(summary["epochs_completed"])):
        used = profiling if switch is not None and epoch < switch else plan
        epochs.append([[unit if isinstance(unit, int) else unit[0] for cell in it for unit in cell] for it in used["iterations"]])
    return [[sorted(set(groups)) for groups in epoch] for epoch in epochs]


def reference_parameters(name: str, folder: Path, task: str = "node", extra: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """Single-process SGD on each iteration's mean group loss, from the worker's own initial model."""
    run = config(name, folder.parent, *TASKS[task], *extra)
    graph = for_task(load_data(run.dataset), TemporalGraph, run)
    split = build_split(graph, run)
    seed_everything(run.seed)
    objective = group_objective(build_model(run.model, graph), graph, split, run)
    optimizer = torch.optim.SGD(objective.parameters(), lr=LR)
    for index, epoch in enumerate(epoch_groups(folder)):
        objective.start_epoch(index)
        for members in epoch:
            optimizer.zero_grad()
            loss = sum(objective(split.train[k].snapshots(graph)) for k in members) / len(members)
            loss.backward()
            optimizer.step()
    return objective.state_dict()


def loss_rows(folder: Path) -> list[tuple]:
    metrics = pd.read_parquet(folder / "metrics.parquet")
    rows = metrics[metrics.metric.isin(["loss", "mse", "accuracy", "ap", "auc"])].sort_values(
        ["epoch", "iteration", "rank", "phase", "metric"]
    )
    return list(rows[["epoch", "iteration", "rank", "phase", "metric", "value"]].itertuples(index=False, name=None))


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_run_finishes_and_every_metric_is_measured_or_declared_missing(contract_runs, name):
    results, task = trained(contract_runs, name)
    folder = results / name / "full"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["epochs_completed"] == EPOCHS
    metrics = pd.read_parquet(folder / "metrics.parquet")
    missing = summary["missing"]
    unexplained = set(metrics[metrics.value.isna()].metric) - set(missing)
    assert not unexplained, f"metrics recorded as NaN without a reason: {unexplained}"
    epoch_level = metrics[(metrics.iteration == -1) & (metrics.phase == "train")]
    for metric in ("epoch_time_s", "busy_s", "conv_flops", "peak_rss_bytes"):
        values = epoch_level[epoch_level.metric == metric].value
        assert len(values) and (values > 0).all(), f"{metric} must be measured (> 0): {values.tolist()}"
    assert summary["conv_flops_per_epoch"] > 0 and summary["peak_rss_bytes"] > 0
    # a CPU run has no GPU allocator: no GPU figure at all, and no figure under the old shared name
    assert summary["gpu_peak_allocated_bytes"] is None and not {"gpu_peak_allocated_bytes", "peak_mem_bytes"} & set(
        metrics.metric
    )
    if name == "flare":  # it counts what autograd saves for the backward; its training memory adds parameters and states
        saved = epoch_level[epoch_level.metric == "saved_for_backward_bytes"].sort_values(["epoch", "rank"]).value.to_numpy()
        train = epoch_level[epoch_level.metric == "train_memory_bytes"].sort_values(["epoch", "rank"]).value.to_numpy()
        assert len(saved) == len(train) > 0 and (saved > 0).all() and (saved < train).all()
        assert summary["saved_for_backward_bytes"] == saved.max()
    world_size = summary["world_size"]
    assert set(metrics["rank"]) == set(range(world_size))
    if world_size > 1:
        assert summary["comm_bytes_per_epoch"]["allreduce"] > 0
    evaluated = set(metrics[metrics.phase == "test"].metric)
    assert ({"loss", "ap", "auc"} if task == "link" else {"loss"}) <= evaluated, evaluated
    if task == "link" and name in ("flare", "distdy") and world_size > 1:  # a pair's destination row from its holder
        assert summary["comm_bytes_per_epoch"]["link_pair_rows"] > 0


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_planned_epoch_trains_every_unit_and_the_plan_files_say_how(contract_runs, name):
    """A strategy with a plan trains every unit of it each epoch; one without (FlareDTDG's random
    split leaves out the windows that cross it) trains some and never more than there are."""
    results, task = trained(contract_runs, name)
    folder = results / name / "full"
    summary = json.loads((folder / "summary.json").read_text())
    metrics = pd.read_parquet(folder / "metrics.parquet")
    units = metrics[(metrics.metric == "units") & (metrics.phase == "train")].groupby("epoch")["value"].sum()
    per_epoch = summary["training_units"] / (summary["world_size"] if name == "node_shard" else 1)
    if (folder / "plan.json").exists():
        assert units.tolist() == [per_epoch] * EPOCHS
    else:
        assert len(units) == EPOCHS and all(0 < u <= per_epoch for u in units)
    hidden = summary["comm_bytes_per_epoch"]["hidden_state"]
    assert (hidden > 0) == (name == "esdg" and summary["world_size"] > 1)  # only ESDG ships hidden states
    if summary.get("switch_epoch") is None:
        return
    assert summary["switch_epoch"] == 1 and summary["plan_solve_time_s"] >= 0
    profiling = json.loads((folder / "plan_profiling.json").read_text())
    plan = json.loads((folder / "plan.json").read_text())
    assert profiling["solver"] == "psg" and profiling["capacity"] == 1
    assert plan["solver"].startswith(config(name, results).strategy_settings(SnapshotGroupConfig).planner.solver)
    assert plan["capacity"] == 2
    profile = json.loads((folder / "profile.json").read_text())
    assert len(profile["group_times"]) == summary["training_units"] and set(profile["cost_model"]) == {"a1", "a2", "a3"}


@pytest.mark.parametrize("name", STRATEGIES)
def test_parameters_equal_single_process_training(contract_runs, name):
    results, task = trained(contract_runs, name)
    strategy = build_strategy(config(name, results).sched)
    if not strategy.exact:
        pytest.skip(f"sched={name} does not claim exactness")
    folder = results / name / "full"
    parameters = load_checkpoint(folder)["model"]
    # float32, as the worker trains (DistDy's feature store is float32): ranks and node blocks sum the same
    # gradients in another order, a few float32 roundings (6e-8) of each step's terms; 2 epochs of SGD at lr 0.05
    # carry that to a few 1e-8: at most 0.4% of 1e-5 + 1e-5 |value|, measured on the default, AVX2 and AVX-512 kernels.
    for key, value in reference_parameters(name, folder, task).items():
        assert torch.allclose(parameters[key], value, atol=1e-5), (name, key, float((parameters[key] - value).abs().max()))


@pytest.mark.parametrize("name", STRATEGIES)
def test_checkpoint_then_resume_trains_the_same_losses(contract_runs, name):
    """Resumed after epoch 0, a run trains what the uninterrupted one did. A plan solved on measured
    times may differ between the two runs (timing noise); then the first epoch still matches, and
    the resumed run kept its own plan and trained exactly by it."""
    results, task = trained(contract_runs, name)
    full, resumed = results / name / "full", results / name / "resumed"
    assert json.loads((resumed / "summary.json").read_text())["epochs_completed"] == EPOCHS
    plans = [folder / "plan.json" for folder in (full, resumed)]
    if not all(p.exists() for p in plans) or plans[0].read_text() == plans[1].read_text():
        assert loss_rows(resumed) == loss_rows(full)
        return
    assert [row for row in loss_rows(resumed) if row[0] == 0] == [row for row in loss_rows(full) if row[0] == 0]
    parameters = load_checkpoint(resumed)["model"]
    for key, value in reference_parameters(name, resumed, task).items():
        assert torch.allclose(parameters[key], value, atol=1e-5), (name, key)


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_run_files_say_which_backend_carried_the_collectives(contract_runs, name):
    """The two-rank runs (whose parameters the tests above hold to single-process SGD, and whose
    resumes to the uninterrupted losses) ran in a group routing collectives by device type
    (``cpu:gloo``); the one-rank runs in plain gloo. The run's files say which."""
    results, _ = trained(contract_runs, name)
    for run_id in ("full", "resumed"):
        folder = results / name / run_id
        summary = json.loads((folder / "summary.json").read_text())
        expected = BACKEND[int(summary["world_size"])]
        assert summary["status"] == "ok" and summary["dist_backend"] == expected
        assert [rank["dist_backend"] for rank in json.loads((folder / "ranks.json").read_text())] == [expected] * summary[
            "world_size"
        ]


STRATEGY_PACKAGES = ("snapshot_groups", "node_partition", "flare", "distdy", "node_memory")


def test_the_worker_knows_no_strategy():
    """``worker.py`` imports the strategy interface only: no package under ``dygsched/engine/`` (the
    strategies and the node-partition layer some of them share; one added later is covered too) and
    no planner, and importing it loads no strategy package through the modules it imports either."""
    packages = sorted(path.parent.name for path in (ROOT / "dygsched" / "engine").glob("*/__init__.py"))
    assert set(STRATEGY_PACKAGES) <= set(packages), packages
    strategies = tuple(f"dygsched.engine.{package}" for package in packages)

    def within(module: str, prefixes: tuple[str, ...]) -> bool:
        return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)

    tree = ast.parse((ROOT / "dygsched" / "engine" / "worker.py").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level], "relative import"
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "dygsched.engine.strategy" in modules
    direct = sorted(m for m in modules if within(m, (*strategies, "dygsched.planner")) or m == "dygsched.engine")
    assert not direct, direct

    probe = "import sys\nimport dygsched.engine.worker\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    loaded = sorted(m for m in done.stdout.split() if within(m, strategies))
    assert not loaded, loaded


def test_a_strategy_that_cannot_train_on_the_data_is_one_line(tmp_path):
    from dygsched.errors import ConfigError

    run = compose_run(["sched=psg", "dataset=edgelist", "dataset.kind=events"])
    data = load_data(run.dataset)
    with pytest.raises(ConfigError, match="trains on TemporalGraph data, but the dataset gives EventStream"):
        build_strategy(run.sched).check(data, run, 1)


class NodeTargetsOnly(NodeShardStrategy):
    """A strategy that does not say it predicts links (``predicts_links`` left False), as a new one may."""

    predicts_links = False


def test_a_strategy_refuses_a_task_it_does_not_train():
    """Every strategy in ``conf/sched`` that trains snapshots trains both tasks; one that does not declare
    link prediction refuses ``task=link`` in one line before any rank starts, and the node-memory
    strategies, which train event streams, refuse snapshots cut for links in one line too."""
    from dygsched.errors import ConfigError

    run = config("node_shard", Path("unused"), *TASKS["link"])
    data = for_task(load_data(run.dataset), TemporalGraph, run)
    build_strategy(run.sched).check(data, run, 1)  # the toy strategy declares it
    with pytest.raises(ConfigError, match=r"^sched=node_only does not train link prediction \(task=link\)[^\n]*$"):
        NodeTargetsOnly(NodeShardConfig(name="node_only")).check(data, run, 1)
    for name in sorted(p.stem for p in (ROOT / "conf" / "sched").glob("*.yaml") if p.stem not in STRATEGIES):
        with pytest.raises(ConfigError, match=rf"^sched={name} trains on EventStream data, but the dataset gives TemporalGraph"):
            build_strategy(config(name, Path("unused"), *TASKS["link"]).sched).check(data, run, 1)


# ---- GC-LSTM: a model whose layer 0 convolves its hidden state, not its input ---------------------------
GCLSTM_MODEL = ["model=gclstm"]  # one layer of width 16 (TINY_SYNTHETIC), K = 2: one propagation of H per step
# The strategies that cannot apply their mechanics to it refuse it before any rank starts, in one line:
# REAL's reuse engine (nothing to reuse), node partitions (the convolution reads every node's H at each step).
REAL_REUSE = "REAL's reuse engine computes layer 0's convolution of its input once per chain of snapshots"
GCLSTM_REFUSED = {
    "greedy": REAL_REUSE,
    "ilp": REAL_REUSE,
    "real": REAL_REUSE,
    "real_g_paper": REAL_REUSE,
    "flare": "GCLSTMLayer cannot run on a part of them",
    "distdy": "use model=sage_temporal",
}
# REAL's planners train it with the reuse engine off; every strategy that does not split nodes trains it as it is.
GCLSTM_TRAINED = {
    name: ["sched.executor.reuse=false"] if GCLSTM_REFUSED.get(name) == REAL_REUSE else []
    for name in STRATEGIES
    if name not in ("flare", "distdy")
}
# One strategy per executor in the fast suite (group by group, ESDG, BLAD, REAL's with reuse off: 6 s on
# 2 idle cores); the others only plan differently and run in `make test-slow`.
GCLSTM_FAST = ("esdg", "greedy", "psg")
GCLSTM_SLOW = tuple(sorted(set(GCLSTM_TRAINED) - set(GCLSTM_FAST)))


def gclstm_config(name: str, results: Path, *extra: str) -> RunConfig:
    return config(name, results, *GCLSTM_MODEL, *GCLSTM_TRAINED.get(name, []), *extra)


@pytest.mark.parametrize("name", STRATEGIES)
def test_gclstm_is_trained_or_refused_in_one_line_before_any_rank(name, tmp_path):
    from dygsched.errors import ConfigError

    run = config(name, tmp_path, *GCLSTM_MODEL)
    data = load_data(run.dataset)
    strategy = build_strategy(run.sched)
    if name in GCLSTM_REFUSED:
        with pytest.raises(ConfigError, match=GCLSTM_REFUSED[name]) as refused:
            strategy.check_model(build_model(run.model, data))
        assert "\n" not in str(refused.value)
    if name in GCLSTM_TRAINED:
        run = gclstm_config(name, tmp_path)
        build_strategy(run.sched).check_model(build_model(run.model, data))


def _gclstm_rank(rank: int, world_size: int, results: str, names: tuple[str, ...]) -> None:
    env = DistEnv(rank, world_size, 0)
    data = None
    for name in names:
        run = gclstm_config(name, Path(results) / name, f"epochs={EPOCHS}", "run_id=full", f"dist_backend={DEVICE_KEYED}")
        data = data or load_data(run.dataset)
        train_in_joined_group(run, env, torch.device("cpu"), data)
        dist.barrier()


def gclstm_runs(tmp_path_factory, names: tuple[str, ...]) -> Path:
    """``names`` trained on GC-LSTM, two epochs on two ranks (one rank runs the same code)."""
    results = tmp_path_factory.mktemp("gclstm")
    run_ranks(_gclstm_rank, (2, str(results), names), nprocs=2, timeout_s=600, backend=DEVICE_KEYED)
    return results


@pytest.fixture(scope="module")
def gclstm_fast_runs(tmp_path_factory) -> Path:
    return gclstm_runs(tmp_path_factory, GCLSTM_FAST)


@pytest.fixture(scope="module")
def gclstm_slow_runs(tmp_path_factory) -> Path:
    return gclstm_runs(tmp_path_factory, GCLSTM_SLOW)


def assert_gclstm_trained_exactly(results: Path, name: str) -> None:
    folder = results / name / "full"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["epochs_completed"] == EPOCHS and summary["world_size"] == 2
    assert summary["conv_flops_per_epoch"] > 0
    assert build_strategy(gclstm_config(name, results).sched).exact
    trained = load_checkpoint(folder)["model"]
    assert any(".conv.lins.1." in key for key in trained)  # the Chebyshev filter's propagated term was trained
    for key, value in reference_parameters(name, folder, extra=(*GCLSTM_MODEL, *GCLSTM_TRAINED[name])).items():
        assert torch.allclose(trained[key], value, atol=1e-5), (name, key, float((trained[key] - value).abs().max()))


@pytest.mark.parametrize("name", GCLSTM_FAST)
def test_gclstm_trains_exactly_under_each_executor(gclstm_fast_runs, name):
    assert_gclstm_trained_exactly(gclstm_fast_runs, name)


@pytest.mark.slow  # the same executors as above under the other planners
@pytest.mark.parametrize("name", GCLSTM_SLOW)
def test_gclstm_trains_exactly_under_every_other_strategy_that_takes_it(gclstm_slow_runs, name):
    assert_gclstm_trained_exactly(gclstm_slow_runs, name)
