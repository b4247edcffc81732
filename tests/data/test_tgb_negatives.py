"""TGB's fixed evaluation negatives: files in its format, matched to a stream's events by its ids and
times, read without running anything a pickle asks for, and scored as TGB's evaluator does."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

from dygsched.data.events import EventStream
from dygsched.data.tgb_negatives import negative_files, read_negatives, read_phase_negatives
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.node_memory.config import SingleProcessConfig
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
from dygsched.engine.strategy import Artifacts, Epoch, RunContext
from dygsched.errors import ConfigError, DataError
from dygsched.models.tgn import TGN
from tests.engine.test_node_memory import NODES, SETTINGS, stream
from tests.typed_runs import changed


def write_tgb_file(path, events: EventStream, first: int, stop: int, count, ids=None, rng=None):
    """``{(src, dst, t): negatives}`` with numpy keys and arrays, as TGB writes them; ``count(k)``
    negatives for the k-th event of the phase."""
    rng = rng or np.random.default_rng(0)
    ids = ids if ids is not None else np.arange(events.num_nodes)
    table = {}
    for k in range(first, stop):
        key = (np.int64(ids[int(events.src[k])]), np.int64(ids[int(events.dst[k])]), np.int64(int(events.t[k])))
        table[key] = ids[rng.integers(0, events.num_nodes, count(k - first))]
    with open(path, "wb") as handle:
        pickle.dump(table, handle)
    return table


def relabelled(events: EventStream, ids: np.ndarray) -> EventStream:
    """The same stream, read from a file whose node ids were ``ids`` (the reader compacts them)."""
    return EventStream(events.name, events.src, events.dst, events.t, events.num_nodes, node_ids=torch.as_tensor(ids))


def test_negatives_are_matched_by_the_files_ids_and_times_even_when_uneven(tmp_path):
    ids = np.arange(NODES) * 7 + 1000  # the ids the edge list had
    data = relabelled(stream(), ids)
    first, stop = 350, 420
    table = write_tgb_file(tmp_path / "x_val_ns.pkl", data, first, stop, lambda k: 5 if k % 3 else 3, ids)
    fixed = read_negatives(tmp_path / "x_val_ns.pkl", data, first, stop)
    assert fixed.destinations.shape == (70, 5) and fixed.uneven
    for k in (0, 1, 69):
        key = (ids[int(data.src[first + k])], ids[int(data.dst[first + k])], int(data.t[first + k]))
        expected = table[tuple(np.int64(v) for v in key)]
        got = fixed.destinations[k][fixed.present[k]]
        assert ids[got.numpy()].tolist() == expected.tolist()
    keys = [(ids[int(data.src[k])], ids[int(data.dst[k])], int(data.t[k])) for k in range(first, stop)]
    assert int(fixed.present.sum()) == sum(
        len(table[tuple(np.int64(v) for v in key)]) for key in keys
    )  # a repeated event shares its key


def test_a_pickle_that_asks_for_code_is_refused_without_running_it(tmp_path):
    probe = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {probe}",))

    path = tmp_path / "evil_val_ns.pkl"
    path.write_bytes(pickle.dumps({(1, 2, 3): Payload()}))
    with pytest.raises(DataError, match="is not a TGB negatives file .*asks for (posix|os).system"):
        read_negatives(path, stream(), 0, 1)
    assert not probe.exists()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p, d: p.write_bytes(b"\x80\x04not a pickle"), "is not a TGB negatives file"),
        (lambda p, d: p.write_bytes(pickle.dumps([1, 2, 3])), "holds a list, not a dictionary"),
        (
            lambda p, d: write_tgb_file(p, d, 351, 420, lambda k: 4),
            "no negatives for event 350 .*another stream or another split",
        ),
        (
            lambda p, d: pickle.dump(
                {k: np.array([NODES + 5]) for k in write_tgb_file(p, d, 350, 420, lambda k: 1)}, open(p, "wb")
            ),
            f"names node {NODES + 5}, which the stream does not have",
        ),
    ],
)
def test_files_that_do_not_fit_are_one_line(tmp_path, make, message):
    data, path = stream(), tmp_path / "x_val_ns.pkl"
    make(path, data)
    with pytest.raises(DataError, match=message):
        read_negatives(path, data, 350, 420)
    with pytest.raises(DataError, match="no file .*nowhere_val_ns.pkl"):
        read_phase_negatives(tmp_path / "nowhere", data, {"val": (350, 420), "test": (420, 500)})


def test_a_run_scores_every_event_against_the_files_negatives(tmp_path):

    data = stream()
    split = data.split(SETTINGS.split.train, SETTINGS.split.val)
    prefix = tmp_path / "tgbl-toy"
    files = negative_files(prefix)
    write_tgb_file(files["val"], data, *split.val, lambda k: 20)  # more than 10: hits@10 can miss
    write_tgb_file(files["test"], data, *split.test, lambda k: 6 if k % 2 else 2)  # uneven: loss not comparable
    settings = changed(SETTINGS, tgb_negatives=str(prefix))
    strategy = NodeMemoryStrategy(SingleProcessConfig(batch_size=60))
    strategy.check(data, settings, 1)
    strategy.setup(RunContext(data, settings, 0, 1, torch.device("cpu"), Artifacts(None, True)))
    module = strategy.objective(TGN(NODES, 1, memory_dim=8, time_dim=4, neighbours=3, heads=2, dropout=0.0))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    strategy.run_epoch(
        Epoch(0, module, optimizer, GradientSync(module, 1), torch.device("cpu"), 0, 1, lambda s: None, lambda *r: None)
    )
    import dygsched.engine.node_memory.evaluation as node_memory

    seen = []
    scored = node_memory.link_prediction_metrics

    def keep(scores, **kwargs):
        seen.append(scores)
        return scored(scores, **kwargs)

    node_memory.link_prediction_metrics = keep
    try:
        val, test = strategy.evaluate("val"), strategy.evaluate("test")
    finally:
        node_memory.link_prediction_metrics = scored
    assert 0 < val["mrr"] <= 1 and 0 < test["mrr"] <= 1 and isinstance(val["loss"], float)
    assert 0 < val["hits@10"] < 1 and 0 <= test["hits@10"] <= 1  # with 20 negatives the top 10 can miss
    evaluate = pytest.importorskip("tgb.linkproppred.evaluate")
    evaluator = evaluate.Evaluator(name="tgbl-wiki", k_value=10)
    positive, negative = seen[0].positive, seen[0].negative  # validation: 20 negatives for every event
    theirs = [
        evaluator.eval({"y_pred_pos": positive[i : i + 1], "y_pred_neg": negative[i : i + 1], "eval_metric": ["mrr"]})
        for i in range(positive.size)
    ]
    assert val["mrr"] == pytest.approx(np.mean([r["mrr"] for r in theirs]))
    assert val["hits@10"] == pytest.approx(np.mean([r["hits@10"] for r in theirs]))
    assert "fewer negatives" in test["loss"].reason
    batch = strategy.batches("val")[0]
    negatives = strategy.negatives.destinations(batch, epoch=0).view(20, batch.events).t()
    assert torch.equal(negatives, strategy.negatives.fixed["val"].destinations[batch.start : batch.stop])
    with pytest.raises(ConfigError, match="not both"):
        NodeMemoryStrategy(SingleProcessConfig(batch_size=60)).check(data, changed(settings, eval_negatives=3), 1)
    with pytest.raises(ConfigError, match="tgb_negatives gives TGB's fixed negatives"):
        NodeMemoryStrategy(SingleProcessConfig(batch_size=60)).check(data, changed(settings, eval={"negatives": "historical"}), 1)


def test_the_files_of_tgbs_later_releases_are_found_by_the_same_prefix(tmp_path):
    """TGB's second release of a stream names its files ``<name>_val_ns_v2.pkl``."""
    for name in ("tgbl-wiki_val_ns_v2.pkl", "tgbl-wiki_test_ns_v2.pkl", "tgbl-uci_val_ns.pkl", "tgbl-uci_test_ns.pkl"):
        (tmp_path / name).write_bytes(b"")
    assert {phase: path.name for phase, path in negative_files(tmp_path / "tgbl-wiki").items()} == {
        "val": "tgbl-wiki_val_ns_v2.pkl",
        "test": "tgbl-wiki_test_ns_v2.pkl",
    }
    assert negative_files(tmp_path / "tgbl-uci")["val"].name == "tgbl-uci_val_ns.pkl"
