"""DistDy on gloo ranks: what is trained does not depend on the partition, for node targets and for
link prediction (``task=link``); traffic adds up.

In float32, as DistDy trains (its feature store is float32): another partition sums the same
gradients in another order, a few roundings (6e-8) of each step's terms; over 2 epochs of SGD the
losses and parameters move by at most 0.4% of the 1e-5 allowed on the default, AVX2 and AVX-512 kernels.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
import torch.distributed as dist

from dygsched.data.partition import ONLINE_PARTITIONERS as PARTITIONERS
from dygsched.engine.checkpoint import load_checkpoint
from dygsched.engine.distributed import DistEnv
from dygsched.engine.worker import train_in_joined_group
from dygsched.errors import ConfigError
from dygsched.launch.compose import compose_run
from tests.harness import run_ranks

SMALL = [
    "sched=distdy",
    "model=sage_temporal",
    "dataset=uniform",
    "dataset.num_nodes=240",
    "dataset.num_snapshots=6",
    "dataset.feature_dim=16",
    "model.hidden_channels=8",
    "window=3",
    "sched.batch=48",
    "sched.batches_per_step=2",
    "optim=sgd",
    "optim.lr=0.1",
    "epochs=2",
    "device=cpu",
    "progress=false",
]


# task=link: the snapshots' pairs are the next snapshot's, and the groups split by time need 6 windows; a
# growing graph, so that pairs and negatives read nodes absent from the newest snapshot or the whole window
LINK = [
    *(o for o in SMALL if not o.startswith("dataset")),
    "dataset=synthetic",
    "dataset.num_nodes=240",
    "dataset.num_snapshots=9",
    "dataset.feature_dim=16",
    "task=link",
    "link.embedding_dim=8",
]


def config(results, *extra, base=SMALL):
    return compose_run([*base, f"results_dir={results}", *extra])


def _rank(rank, world_size, results):
    env = DistEnv(rank, world_size, 0)
    for method in PARTITIONERS:
        train_in_joined_group(
            config(results, f"sched.partition={method}", f"run_id={method}-{world_size}"), env, torch.device("cpu"), None
        )
        dist.barrier()
    online = config(results, "sched.loop=online", "epochs=4", f"run_id=online-{world_size}")  # 6 snapshots, windows of 3
    train_in_joined_group(online, env, torch.device("cpu"), None)
    for method in PARTITIONERS if world_size == 2 else ["hash"]:  # every partitioner on 2 ranks, against one process
        link = config(results, f"sched.partition={method}", f"run_id=link-{method}-{world_size}", base=LINK)
        train_in_joined_group(link, env, torch.device("cpu"), None)
        dist.barrier()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    results = tmp_path_factory.mktemp("distdy")
    run_ranks(_rank, (2, str(results)), nprocs=2)
    run_ranks(_rank, (1, str(results)), nprocs=1)
    return results


def train_losses(folder):
    metrics = pd.read_parquet(folder / "metrics.parquet")
    return (
        metrics[(metrics.metric == "loss") & (metrics.phase == "train") & (metrics.iteration == -1)]
        .sort_values("epoch")["value"]
        .tolist()
    )


@pytest.mark.slow  # every partitioner at 1 and 2 ranks: the contract battery runs DistDy in the default selection
def test_every_partitioner_trains_the_same_losses_and_parameters(runs):
    reference = runs / "hash-1"
    expected_params = load_checkpoint(reference)["model"]
    for method in PARTITIONERS:
        for world_size in (1, 2):
            folder = runs / f"{method}-{world_size}"
            assert train_losses(folder) == pytest.approx(train_losses(reference), abs=1e-5), (method, world_size)
            params = load_checkpoint(folder)["model"]
            for key, value in expected_params.items():
                assert torch.allclose(params[key], value, atol=1e-5), (method, world_size, key)


def evaluation_rows(folder):
    metrics = pd.read_parquet(folder / "metrics.parquet")
    # scores, not clocks
    evaluated = metrics.phase.isin(["val", "test"]) & (metrics["rank"] == 0) & (metrics.metric != "eval_time_s")
    rows = metrics[evaluated].sort_values(["epoch", "phase", "metric"])
    return rows[["epoch", "phase", "metric"]].values.tolist(), rows["value"].tolist()


@pytest.mark.slow  # every partitioner at 1 and 2 ranks: the contract battery runs DistDy in the default selection
def test_link_prediction_trains_the_same_losses_and_parameters_under_every_partitioner(runs):
    """task=link: each pair scored by its source's holder, the destination's row fetched from its own
    holder; every partitioner on 2 ranks trains one process's losses, parameters and evaluation."""
    from dygsched.data.loading import load_data

    graph = load_data(config(runs, base=LINK).dataset)
    assert not graph.snapshots[2].node_mask.all()  # targets absent from a window's snapshots are trained too
    reference = runs / "link-hash-1"
    expected_params = load_checkpoint(reference)["model"]
    assert any(key.startswith("decoder.") for key in expected_params)  # the pair decoder trains with the model
    names, values = evaluation_rows(reference)
    assert {"loss", "ap", "auc"} <= {name for _, _, name in names}
    for method in PARTITIONERS:
        folder = runs / f"link-{method}-2"
        assert train_losses(folder) == pytest.approx(train_losses(reference), abs=1e-5), method
        params = load_checkpoint(folder)["model"]
        for key, value in expected_params.items():
            assert torch.allclose(params[key], value, atol=1e-5), (method, key)
        got_names, got_values = evaluation_rows(folder)
        assert got_names == names and got_values == pytest.approx(values, abs=1e-5, nan_ok=True), method


@pytest.mark.slow  # every partitioner at 1 and 2 ranks: the contract battery runs DistDy in the default selection
def test_link_prediction_scores_every_drawn_pair_once_and_moves_rows_across_ranks(runs):
    """The ranks score disjoint shares of each mini-batch's pairs, together all of them (one process's
    count), and a pair whose destination another rank computed moves its row (``link_pair_rows``)."""

    def per_epoch(folder, metric):
        metrics = pd.read_parquet(folder / "metrics.parquet")
        rows = metrics[(metrics.metric == metric) & (metrics.iteration == -1) & (metrics.phase == "train")]
        return rows.groupby("epoch")["value"].sum().tolist()

    one_process = per_epoch(runs / "link-hash-1", "scored_pairs")
    assert len(one_process) == 2 and one_process[0] > 0
    for method in PARTITIONERS:
        folder = runs / f"link-{method}-2"
        assert per_epoch(folder, "scored_pairs") == one_process, method
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["comm_bytes_per_epoch"]["link_pair_rows"] > 0, method
    assert json.loads((runs / "link-hash-1" / "summary.json").read_text())["comm_bytes_per_epoch"]["link_pair_rows"] == 0


@pytest.mark.slow  # every partitioner at 1 and 2 ranks: the contract battery runs DistDy in the default selection
def test_bytes_sent_equal_bytes_received_and_distdy_fetches_least(runs):
    fetched = {}
    for method in PARTITIONERS:
        metrics = pd.read_parquet(runs / f"{method}-2" / "metrics.parquet")
        epoch = metrics[(metrics.epoch == 0) & (metrics.iteration == -1)]
        value = lambda rank, metric, epoch=epoch: float(
            epoch[(epoch["rank"] == rank) & (epoch.metric == metric)]["value"].iloc[0]
        )  # noqa: E731
        assert value(0, "feature_fetch_to_rank1_bytes") == value(1, "feature_fetch_from_rank0_bytes")
        assert value(1, "feature_fetch_to_rank0_bytes") == value(0, "feature_fetch_from_rank1_bytes")
        fetched[method] = value(0, "feature_fetch_in_bytes") + value(1, "feature_fetch_in_bytes")
        assert value(0, "store_bytes") > 0 and value(0, "store_feature_bytes") <= value(0, "store_full_snapshot_bytes")
    assert fetched["hash"] > 0 and fetched["distdy"] < fetched["hash"]


@pytest.mark.slow  # every partitioner at 1 and 2 ranks: the contract battery runs DistDy in the default selection
def test_the_online_loop_walks_the_stream_once_placing_each_snapshot_when_it_arrives(runs):
    """Epoch e trains the window ending at snapshot 2 + e; snapshot 3 + e is placed only after it."""
    frames = {n: pd.read_parquet(runs / f"online-{n}" / "metrics.parquet") for n in (1, 2)}
    for frame in frames.values():
        epochs = frame[(frame.iteration == -1) & (frame.phase == "train")]
        assert epochs[epochs.metric == "window_end"].groupby("epoch")["value"].first().tolist() == [2, 3, 4, 5]
        placed = epochs[(epochs.metric == "partition_s") & (epochs["rank"] == 0)].sort_values("epoch")
        assert placed.epoch.tolist() == [0, 1, 2, 3] and (placed.value > 0).all()
    assert train_losses(runs / "online-2") == pytest.approx(train_losses(runs / "online-1"), abs=1e-5)
    assert len(load_checkpoint(runs / "online-2")["strategy"]["placements"]) == 6


def test_a_model_or_capacity_distdy_cannot_train_is_one_line(tmp_path):
    from dygsched.data.loading import load_data
    from dygsched.engine.build import build_model, build_strategy

    cfg = config(tmp_path, "model=tgcn")
    strategy = build_strategy(cfg.sched)
    data = load_data(cfg.dataset)
    strategy.check(data, cfg, 2)
    with pytest.raises(ConfigError, match="use model=sage_temporal"):
        strategy.check_model(build_model(cfg.model, data))
    cfg = config(tmp_path, "sched.capacity_factor=0.5")
    with pytest.raises(
        ConfigError, match=r"the smallest feasible capacity is sched.capacity_factor=(\S+) \((\d+) bytes"
    ) as refused:
        build_strategy(cfg.sched).check(data, cfg, 2)
    smallest = float(refused.value.args[0].split("sched.capacity_factor=")[-1].split(" ")[0])
    build_strategy(config(tmp_path, f"sched.capacity_factor={smallest}").sched).check(data, cfg, 2)  # feasible


def test_the_online_loop_under_task_link_walks_the_training_windows(tmp_path):
    """task=link trains the training groups' windows (split by time); the online loop says how many in one line."""
    from dygsched.data.loading import for_task, load_data
    from dygsched.data.temporal_graph import TemporalGraph
    from dygsched.engine.build import build_strategy

    cfg = config(tmp_path, "sched.loop=online", "epochs=6", base=LINK)
    data = for_task(load_data(cfg.dataset), TemporalGraph, cfg)
    with pytest.raises(ConfigError, match=r"^sched.loop=online trains 1 epoch\(s\) on each of the 4 windows [^\n]*epochs=4"):
        build_strategy(cfg.sched).check(data, cfg, 2)
    strategy = build_strategy(cfg.sched)
    strategy.check(data, config(tmp_path, "sched.loop=online", "epochs=4", base=LINK), 2)


def test_segments_follow_the_features_unless_given(tmp_path):
    """A timestamped edge list has two degree features per node: S = min(4, 2) unless S is given."""
    from dygsched.data.loading import load_data
    from dygsched.engine.build import build_strategy

    small = [o for o in SMALL if not o.startswith("dataset")]
    edge_list = [*small, "dataset=edgelist", "dataset.num_snapshots=6", "sched.batch=32"]
    for overrides, columns, expected in ((SMALL, 16, 4), (edge_list, 2, 2)):
        cfg = compose_run([*overrides, f"results_dir={tmp_path}"])
        data = load_data(cfg.dataset)
        assert data.num_features == columns
        strategy = build_strategy(cfg.sched)
        strategy.check(data, cfg, 2)
        assert strategy._segments(columns) == expected
    cfg = compose_run([*edge_list, "sched.segments=3"])
    with pytest.raises(ConfigError, match="sched.segments=3 is more than the 2 feature columns"):
        build_strategy(cfg.sched).check(load_data(cfg.dataset), cfg, 2)


@pytest.mark.slow  # every partitioner at 1 and 2 ranks: the contract battery runs DistDy in the default selection
def test_the_simulated_cluster_counts_what_two_ranks_measured(runs, tmp_path):
    """``step_counts`` for K = 2, from the run's own placements, equals the bytes each rank fetched."""
    from dygsched.data.loading import load_data
    from dygsched.data.partition.snapshot_graph import SnapshotPartition
    from dygsched.engine.distdy.cluster import epoch_counts
    from dygsched.engine.distdy.config import DistDyConfig
    from dygsched.engine.distdy.strategy import node_split

    cfg = config(tmp_path)
    graph = load_data(cfg.dataset)
    train, _, _ = node_split(graph.num_nodes, cfg.split.train, cfg.split.val, cfg.seed)
    sched = cfg.strategy_settings(DistDyConfig)
    row_bytes = graph.num_features * 4
    for method in ("distdy", "hash"):
        folder = runs / f"{method}-2"
        state = load_checkpoint(folder)["strategy"]
        placements = [SnapshotPartition(np.asarray(p[0]), None, None, 0.0, 0, 0.0) for p in state["placements"]]
        counts = epoch_counts(
            graph,
            placements,
            2,
            train,
            cfg.window,
            sched.batch,
            sched.batches_per_step,
            sched.fanouts,
            cfg.seed,
        )
        remote = sum(step.remote_fetch_rows() for step in counts)
        metrics = pd.read_parquet(folder / "metrics.parquet")
        epoch = metrics[(metrics.epoch == 0) & (metrics.iteration == -1)]
        for k, q in ((0, 1), (1, 0)):
            measured = epoch[(epoch["rank"] == k) & (epoch.metric == f"feature_fetch_from_rank{q}_bytes")]["value"].iloc[0]
            assert remote[k, q] * row_bytes == measured, (method, k, q)
