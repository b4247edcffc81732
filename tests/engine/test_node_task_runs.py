"""task=node through the worker, on every node-memory strategy: the run finishes, every figure is
measured or declared missing, a run checkpointed after one epoch and resumed trains exactly the
losses of the uninterrupted run, and a node task started from a finished link-prediction run
(``node_task.init_from``) keeps that run's model frozen under its classifier."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.distributed as dist

from dygsched.data.loading import load_data
from dygsched.engine.checkpoint import load_checkpoint
from dygsched.engine.distributed import DistEnv
from dygsched.engine.run_config import RunConfig
from dygsched.engine.worker import train_in_joined_group
from dygsched.launch.compose import compose_run
from tests.harness import run_ranks

EPOCHS = 2
DATASETS = {  # tiny labelled streams: state labels, and node affinities
    "labels": [
        "dataset=bipartite",
        "dataset.num_users=60",
        "dataset.num_items=15",
        "dataset.num_events=600",
        "dataset.label_rate=0.1",
    ],
    "affinity": ["dataset=trade_like", "dataset.num_nodes=16", "dataset.num_periods=8", "dataset.partners=3"],
}
MODEL = ["model=tgn", "model.memory_dim=8", "model.time_dim=4", "model.neighbours=2", "model.dropout=0.0"]
SCHEDS = {1: ["single"], 2: ["depcache", "depcomm", "sven"]}


def config(results: Path, labels: str, sched: str, *extra: str) -> RunConfig:
    overrides = [
        *DATASETS[labels],
        *MODEL,
        f"sched={sched}",
        "sched.batch_size=40",
        "task=node",
        "node_task.dropout=0.0",
        "optim=sgd",
        "optim.lr=0.05",
        "device=cpu",
        "progress=false",
        f"results_dir={results}",
        *extra,
    ]
    return compose_run(overrides)


def _rank(rank: int, world_size: int, results: str, labels: str) -> None:
    env, cpu = DistEnv(rank, world_size, 0), torch.device("cpu")
    backend = ["dist_backend=cpu:gloo"] if world_size == 2 else []
    for sched in SCHEDS[world_size]:
        root = Path(results) / labels / sched
        full = config(root, labels, sched, f"epochs={EPOCHS}", "run_id=full", *backend)
        data = load_data(full.dataset)
        train_in_joined_group(full, env, cpu, data)
        train_in_joined_group(config(root, labels, sched, "epochs=1", "run_id=resumed", *backend), env, cpu, data)
        resumed = config(root, labels, sched, f"epochs={EPOCHS}", "run_id=resumed", f"resume={root / 'resumed'}", *backend)
        train_in_joined_group(resumed, env, cpu, data)
        if world_size > 1:
            dist.barrier()


def trained(tmp_path_factory, world_size: int, labels: str) -> Path:
    """Every strategy of ``world_size`` on the ``labels`` stream: a full run, one epoch, and that run resumed."""
    results = tmp_path_factory.mktemp(f"node_task_runs{world_size}")
    if world_size == 1:
        _rank(0, 1, str(results), labels)
    else:
        run_ranks(_rank, (world_size, str(results), labels), nprocs=world_size, timeout_s=600, backend="cpu:gloo")
    return results


def rows(folder: Path) -> list[tuple]:
    metrics = pd.read_parquet(folder / "metrics.parquet")
    kept = metrics[metrics.metric.isin(["loss", "auc", "ap", "ndcg@10"])].sort_values(
        ["epoch", "iteration", "rank", "phase", "metric"]
    )
    return list(kept[["epoch", "iteration", "rank", "phase", "metric", "value"]].itertuples(index=False, name=None))


# Two ranks run in `make test-slow`: in the default selection, DepComm and Sven train what one process
# trains at two ranks (test_node_task.py), and resuming is exact on labels and affinities at one rank
@pytest.mark.parametrize(
    "world_size, labels",
    [(1, "labels"), (1, "affinity"), *(pytest.param(2, labels, marks=pytest.mark.slow) for labels in ("labels", "affinity"))],
    ids=["1rank-labels", "1rank-affinity", "2ranks-labels", "2ranks-affinity"],
)
def test_every_strategy_finishes_honestly_and_resumes_exactly(tmp_path_factory, world_size, labels):
    results = trained(tmp_path_factory, world_size, labels)
    for sched in SCHEDS[world_size]:
        full = results / labels / sched / "full"
        summary = json.loads((full / "summary.json").read_text())
        assert summary["status"] == "ok" and summary["epochs_completed"] == EPOCHS and summary["world_size"] == world_size
        assert summary["node_task"] == ("classification" if labels == "labels" else "affinity")
        metrics = pd.read_parquet(full / "metrics.parquet")
        assert not set(metrics[metrics.value.isna()].metric) - set(summary["missing"]), "a NaN without a reason"
        tested = set(metrics[metrics.phase == "test"].metric)
        assert tested == ({"loss", "auc", "ap"} if labels == "labels" else {"loss", "ndcg@10"}) | {"eval_time_s"}
        assert (metrics[(metrics.metric == "node_head_s") & (metrics.iteration == -1)].value > 0).all()
        assert rows(results / labels / sched / "resumed") == rows(full), f"{sched}: resumed losses differ"


def test_a_frozen_model_from_a_link_run_keeps_its_weights_and_the_classifier_learns(tmp_path):
    """DyGLib's protocol: link prediction first, then the classifier on the frozen model it saved."""
    env, cpu = DistEnv(0, 1, 0), torch.device("cpu")
    overrides = [*DATASETS["labels"], *MODEL, "sched=single", "sched.batch_size=40", "device=cpu", "progress=false"]
    link_cfg = compose_run([*overrides, "epochs=1", "run_id=link", f"results_dir={tmp_path}"])
    data = load_data(link_cfg.dataset)
    train_in_joined_group(link_cfg, env, cpu, data)
    node_cfg = config(tmp_path, "labels", "single", "epochs=2", "run_id=node", "node_task.init_from=link")
    train_in_joined_group(node_cfg, env, cpu, data)
    linked, node = load_checkpoint(tmp_path / "link")["model"], load_checkpoint(tmp_path / "node")["model"]
    for key, value in linked.items():
        assert torch.equal(node[f"backbone.{key}"], value), key
    summary = json.loads((tmp_path / "node" / "summary.json").read_text())
    assert summary["node_backbone"] == "frozen" and summary["init_from"] == str((tmp_path / "link").resolve())
    trained = pd.read_parquet(tmp_path / "node" / "metrics.parquet")
    losses = trained[(trained.phase == "train") & (trained.metric == "loss") & (trained.iteration == -1)].sort_values("epoch")
    assert losses.value.iloc[-1] < losses.value.iloc[0]
