"""Node property prediction (task=node) with every node-memory strategy, against the one-process reference.

As for link prediction (tests/engine/test_node_memory.py): every strategy on M ranks with a batch
of b events per rank must train exactly what one process trains with a batch of M b events, for
both node tasks (state labels and node affinities) and every way the model sits under the
classifier (trained by link prediction beside it, fine-tuned by its loss, frozen): the same loss
per step, the same parameters, the same node state, the same validation and test figures. And the
persistent forecast, the floor, gives on every rank count the figures its definition gives.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.distributed as dist

from dygsched.data.event_labels import churn_labels, for_node_task
from dygsched.data.events import events_from_arrays
from dygsched.data.trade import TradeStreamSource
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.node_memory.config import DepCacheConfig, DepCommConfig, SingleProcessConfig, SvenConfig
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import Artifacts, Epoch, Missing, RunContext
from dygsched.errors import ConfigError
from dygsched.metrics.node_prediction import ndcg_rows
from dygsched.models.apan import APAN
from dygsched.models.jodie import JODIE
from dygsched.models.persistent_forecast import PersistentForecast
from dygsched.models.tgn import TGN
from tests.harness import run_ranks
from tests.typed_runs import changed, default_run

CPU = torch.device("cpu")
NODES, EVENTS, GLOBAL_BATCH, EPOCHS = 40, 400, 60, 2
BASE = default_run(window=1, split={"train": 0.6, "val": 0.2}, seed=3, epochs=EPOCHS)


def settings(backbone: str) -> RunConfig:
    return changed(BASE, node_task={"backbone": backbone, "dropout": 0.0})


def labelled_stream():
    """A skewed stream with tied times (test_node_memory's), its events labelled by the generated streams' rule."""
    rng = np.random.default_rng(11)
    popularity = rng.zipf(1.6, NODES * 4) % NODES
    src = rng.choice(popularity, EVENTS)
    dst = (src + 1 + rng.choice(popularity, EVENTS)) % NODES
    times = np.sort(rng.integers(0, 200, EVENTS)).astype(float)
    stream = events_from_arrays("toy", src, dst, times, weight=rng.random(EVENTS), num_nodes=NODES)
    labels = churn_labels(stream.src.numpy(), stream.t.numpy(), 0.12, 0.5, 0, segments=5)
    return for_node_task(dataclasses.replace(stream, labels=torch.from_numpy(labels)))


def affinity_stream():
    """A small trade stream: label times at every period, several in a global batch, some batches without."""
    return for_node_task(TradeStreamSource(num_nodes=NODES, num_periods=9, partners=2, seed=1).load())


STREAMS = {"labels": labelled_stream, "affinity": affinity_stream}
MODELS = {
    "tgn": lambda edge_dim: TGN(NODES, edge_dim, memory_dim=12, time_dim=6, neighbours=3, heads=2, dropout=0.0),
    "jodie": lambda edge_dim: JODIE(NODES, edge_dim, memory_dim=12, time_dim=6, dropout=0.0),
    "apan": lambda edge_dim: APAN(NODES, edge_dim, memory_dim=12, time_dim=6, mailbox_size=3, neighbours=3, heads=2, dropout=0.0),
}
STRATEGIES = {  # build it with b events per rank
    "depcache": lambda b: NodeMemoryStrategy(DepCacheConfig(batch_size=b)),
    "depcomm": lambda b: NodeMemoryStrategy(DepCommConfig(batch_size=b, partition="interval")),
    "sven": lambda b: NodeMemoryStrategy(SvenConfig(batch_size=b, partition="reflexbicut", prefetch=False)),
    # the pipeline: each rank's batch in slices (their label rows shared out too), prepared ahead
    "sven-pipelined": lambda b: NodeMemoryStrategy(SvenConfig(batch_size=b, partition="range", micro_batches=3, prefetch=True)),
}
# (strategy, model, labels, backbone): each way a model sits under its classifier, on both tasks
CASES = [
    ("depcache", "tgn", "labels", "link"),
    ("depcomm", "tgn", "labels", "frozen"),
    ("sven", "apan", "labels", "fine_tune"),
    ("depcomm", "apan", "affinity", "link"),
    ("sven", "tgn", "affinity", "fine_tune"),
    ("sven-pipelined", "jodie", "affinity", "frozen"),
]


def train(strategy, model_name: str, labels: str, backbone: str, rank: int, world_size: int) -> dict:
    """Train for EPOCHS epochs with SGD in float64, then evaluate (float64: the check is of the
    method, not of float32 rounding over another summation order)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return _train(strategy, model_name, labels, backbone, rank, world_size)
    finally:
        torch.set_default_dtype(default)


def _train(strategy, model_name: str, labels: str, backbone: str, rank: int, world_size: int) -> dict:
    data, run = STREAMS[labels](), settings(backbone)
    strategy.check(data, run, world_size)
    strategy.setup(RunContext(data, run, rank, world_size, CPU, Artifacts(None, rank == 0)))
    torch.manual_seed(0)
    module = strategy.objective(MODELS[model_name](data.edge_dim))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    sync = GradientSync(module, world_size)
    losses, metrics = [], []
    for index in range(EPOCHS):
        seen = []
        metrics.append(
            dict(strategy.run_epoch(Epoch(index, module, optimizer, sync, CPU, rank, world_size, seen.append, lambda *r: None)))
        )
        losses.append([(s.iteration, float(s.loss_sum), s.units) for s in seen])
    val, test = strategy.evaluate("val"), strategy.evaluate("test")
    owned = (strategy.memory.ownership.owner == rank).nonzero().flatten()
    return {
        "losses": losses,
        "params": {k: v.detach().clone() for k, v in module.state_dict().items()},
        "state": (owned, strategy.memory.table.pack(strategy.memory.ownership.row[owned])),
        "val": val,
        "test": test,
        "metrics": metrics,
    }


def gather(result: dict, world_size: int) -> list[dict]:
    if world_size == 1:
        return [result]
    everyone: list = [None] * world_size
    dist.all_gather_object(everyone, result)
    return everyone


def _ranks(rank: int, world_size: int, out: str) -> None:
    results = {}
    for case in CASES:
        sched, model_name, labels, backbone = case
        result = train(STRATEGIES[sched](GLOBAL_BATCH // world_size), model_name, labels, backbone, rank, world_size)
        results[case] = gather(result, world_size)
    for labels in STREAMS:  # the floor, on every rank count
        for mode in ("last", "moving_average"):
            results[("forecast", labels, mode)] = gather(forecast(labels, mode, rank, world_size), world_size)
    if rank == 0:
        torch.save(results, out)


@pytest.fixture(scope="module", params=[1, 2])
def distributed(request, tmp_path_factory):
    world_size = request.param
    out = str(tmp_path_factory.mktemp("node_task") / "results.pt")
    if world_size == 1:
        _ranks(0, 1, out)
    else:
        run_ranks(_ranks, (world_size, out), nprocs=world_size, backend="cpu:gloo")
    return world_size, torch.load(out, weights_only=False)


@pytest.fixture(scope="module")
def references():
    wanted = {(model_name, labels, backbone) for _, model_name, labels, backbone in CASES}
    return {key: train(NodeMemoryStrategy(SingleProcessConfig(batch_size=GLOBAL_BATCH)), *key, 0, 1) for key in sorted(wanted)}


def full_table(per_rank: list[dict]) -> torch.Tensor:
    rows: list = [None] * NODES
    for result in per_rank:
        owned, packed = result["state"]
        for vertex, row in zip(owned.tolist(), packed, strict=True):
            rows[vertex] = row if rows[vertex] is None else rows[vertex]
    return torch.stack(rows)


def test_every_strategy_trains_what_one_process_trains(distributed, references):
    world_size, results = distributed
    for case, per_rank in results.items():
        if case[0] == "forecast":
            continue
        sched, model_name, labels, backbone = case
        where = f"{sched}/{model_name} on {labels} ({backbone}) on {world_size} ranks"
        want = references[(model_name, labels, backbone)]
        for epoch, steps in enumerate(want["losses"]):
            mine = [[step for step in r["losses"][epoch]] for r in per_rank]
            assert all([s[0] for s in m] == [s[0] for s in steps] for m in mine), f"{where}: the steps taken"
            np.testing.assert_allclose(
                np.sum([[s[1] for s in m] for m in mine], axis=0), [s[1] for s in steps], rtol=1e-6, err_msg=where
            )
            assert np.sum([[s[2] for s in m] for m in mine], axis=0).tolist() == [s[2] for s in steps], f"{where}: units"
        for result in per_rank:
            for key, value in want["params"].items():
                torch.testing.assert_close(result["params"][key], value, rtol=1e-6, atol=1e-7, msg=f"{where}: {key}")
            for phase in ("val", "test"):
                assert set(result[phase]) == set(want[phase]), where
                for metric, value in want[phase].items():
                    if isinstance(value, Missing):
                        assert isinstance(result[phase][metric], Missing), f"{where}: {phase} {metric}"
                    else:  # a tie among the scores may break by 1e-16 in another batch shape: AUC's rank moves by a few 1e-4
                        assert result[phase][metric] == pytest.approx(value, rel=1e-6, abs=2e-3), f"{where}: {phase} {metric}"
        torch.testing.assert_close(full_table(per_rank), full_table([want]), rtol=1e-6, atol=1e-7, msg=where)


def test_the_figures_are_measured_and_the_frozen_model_does_not_move(references):
    for (_, labels, _), result in references.items():
        names = {"loss", "auc", "ap"} if labels == "labels" else {"loss", "ndcg@10"}
        for phase in ("val", "test"):
            assert set(result[phase]) == names
            assert all(not isinstance(value, Missing) and np.isfinite(value) for value in result[phase].values()), result[phase]
        assert all(m["node_head_s"] > 0 for m in result["metrics"])
    # frozen: the model's weights are its initial ones after two epochs, the classifier's are not
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # as train() builds it
    try:
        torch.manual_seed(0)
        initial = MODELS["jodie"](affinity_stream().edge_dim).state_dict()
    finally:
        torch.set_default_dtype(default)
    frozen = references[("jodie", "affinity", "frozen")]["params"]
    for key, value in initial.items():
        assert torch.equal(frozen[f"backbone.{key}"], value), key
    assert [k for k in frozen if k.startswith("head.")]


def test_frozen_affinity_steps_only_on_label_batches():
    """TGB steps only on the batches that answer a label time; the state still streams through the others."""
    data = affinity_stream()
    strategy = NodeMemoryStrategy(SingleProcessConfig(batch_size=GLOBAL_BATCH))
    strategy.check(data, settings("frozen"), 1)
    strategy.setup(RunContext(data, settings("frozen"), 0, 1, CPU, Artifacts(None, True)))
    answering = {index for phase, index in strategy.node_task.rows_of if phase == "train"}
    batches = strategy.batches("train")
    assert 0 < len(answering) < len(batches)
    assert [strategy._trains(batch) for batch in batches] == [batch.index in answering for batch in batches]


def forecast(labels: str, mode: str, rank: int, world_size: int) -> dict:
    """The persistent forecast's test figures, evaluated by DepComm on ``world_size`` ranks."""
    data = STREAMS[labels]()
    strategy = STRATEGIES["depcomm"](GLOBAL_BATCH // world_size)
    strategy.check(data, BASE, world_size)
    strategy.setup(RunContext(data, BASE, rank, world_size, CPU, Artifacts(None, rank == 0)))
    strategy.objective(PersistentForecast(NODES, mode=mode))
    return strategy.evaluate("test")


def test_the_persistent_forecast_scores_what_its_definition_gives_on_any_rank_count(distributed):
    from sklearn.metrics import average_precision_score, roc_auc_score

    world_size, results = distributed
    for labels in ("labels", "affinity"):
        for mode in ("last", "moving_average"):
            found = results[("forecast", labels, mode)][0]
            data = STREAMS[labels]()
            phases = data.split(BASE.split.train, BASE.split.val)
            if labels == "labels":
                label, score = by_hand_states(data, phases, mode)
                assert found["auc"] == pytest.approx(roc_auc_score(label, score), rel=1e-12), mode
                assert found["ap"] == pytest.approx(average_precision_score(label, score), rel=1e-12), mode
                want = torch.nn.functional.binary_cross_entropy(torch.from_numpy(score), torch.from_numpy(label).double())
                assert found["loss"] == pytest.approx(float(want), rel=1e-9)
            else:
                assert found["ndcg@10"] == pytest.approx(by_hand_affinity(data, phases, mode), rel=1e-9), mode
                assert isinstance(found["loss"], Missing)


def fold(old, new, seen: bool, mode: str):
    """TGB's heuristics: the last label, or m (w - 1) / w + y / w with w = 7 (the first label as it is)."""
    return new if not seen or mode == "last" else old * 6 / 7 + new / 7


def by_hand_states(data, phases, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Each test event's source's forecast, labels known once their global batch is scored."""
    state, seen, scores = np.zeros(NODES), np.zeros(NODES, bool), []
    for name in ("train", "val", "test"):
        first, last = phases.phase(name)
        for lo in range(first, last, GLOBAL_BATCH):
            hi = min(lo + GLOBAL_BATCH, last)
            if name == "test":
                scores += [state[int(data.src[k])] for k in range(lo, hi)]
            for k in range(lo, hi):
                node = int(data.src[k])
                state[node], seen[node] = fold(state[node], float(data.labels[k]), bool(seen[node]), mode), True
    first, last = phases.test
    return data.labels[first:last].numpy(), np.array(scores)


def by_hand_affinity(data, phases, mode: str) -> float:
    """Each test label time's NDCG of the forecast (labels known once their time is answered), averaged."""
    labels = data.affinity
    state, seen, per_time = np.zeros((NODES, labels.num_classes)), np.zeros(NODES, bool), []
    first, last = phases.test
    for k in range(labels.num_times):
        rows = list(range(int(labels.time_rows[k]), int(labels.time_rows[k + 1])))
        answered = int(torch.searchsorted(data.t, labels.times[k], right=True))
        if answered >= data.num_events:
            continue
        dense = labels.dense(torch.tensor(rows)).double().numpy()
        nodes = labels.nodes[rows].numpy()
        if first <= answered < last:
            per_time.append(ndcg_rows(dense, state[nodes]).mean())
        for node, vector in zip(nodes, dense):
            state[node], seen[node] = fold(state[node], vector, bool(seen[node]), mode), True
    assert per_time
    return float(np.mean(per_time))


def test_what_a_node_task_cannot_train_is_refused():
    data = labelled_stream()
    zero = for_node_task(dataclasses.replace(data, labels=torch.zeros(EVENTS, dtype=torch.uint8)))
    strategy = NodeMemoryStrategy(SingleProcessConfig(batch_size=GLOBAL_BATCH))
    with pytest.raises(ConfigError, match="no training event of dataset 'toy' has label 1"):
        strategy.check(zero, BASE, 1)
    with pytest.raises(ConfigError, match="eval.inductive sets how link prediction is scored"):
        strategy.check(data, changed(BASE, eval={"inductive": "apart"}), 1)
    with pytest.raises(ConfigError, match="eval_negatives set link prediction's evaluation"):
        strategy.check(data, changed(BASE, eval_negatives=5), 1)
    strategy.check(data, changed(BASE, split={"by": "time"}), 1)  # DyGLib splits node classification by time too
    from dygsched.models.edgebank import EdgeBank

    with pytest.raises(ConfigError, match="model=edgebank scores links"):
        strategy.check_model(EdgeBank(NODES))
    late = TradeStreamSource(num_nodes=NODES, num_periods=9, partners=2, seed=1).load()
    labels = late.affinity
    after = dataclasses.replace(labels, times=labels.times + 100.0)  # every label time after the last event
    with pytest.raises(ConfigError, match="no label time of dataset 'trade_like' falls in its training events"):
        strategy.check(for_node_task(dataclasses.replace(late, affinity=after)), BASE, 1)
