"""`dygsched predict` and `embed` on memory-model runs, through the CLI: the run's own figures.

The checkpoint keeps the node state the run's validation started from, gathered from every rank
(``dygsched/engine/node_memory/evaluation.py``), so the predictions of validation and test give
the AP the run recorded for its last epoch, for the one process and for DepCache's, DepComm's and
Sven's sharded state at two ranks (one forked process group trains all three; `make test-slow`); a
``task=node`` run's probabilities give its AUC (`make test-slow`). A pairs file's pairs at an event's time score as the event did
where its batch was not yet absorbed; a checkpoint without the state is still read (one note line);
bad input is one line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from dygsched.commands.tables import link_scores
from dygsched.data.loading import load_data
from dygsched.engine.distributed import DistEnv
from dygsched.engine.worker import _RunPlace, train_in_group
from dygsched.launch.compose import compose_run
from dygsched.metrics.link_prediction import link_prediction_metrics
from tests.cli_process import run_dygsched
from tests.harness import run_ranks

STREAM = ["dataset=bipartite", "dataset.num_users=40", "dataset.num_items=12", "dataset.num_events=360"]
LABELS = ["dataset.label_rate=0.15"]
MODELS = {
    "tgn": ["model=tgn", "model.memory_dim=8", "model.time_dim=4", "model.neighbours=2", "model.dropout=0.0"],
    "jodie": ["model=jodie", "model.memory_dim=8", "model.time_dim=4", "model.dropout=0.0"],
    "edgebank": ["model=edgebank"],
    "apan": ["model=apan", "model.memory_dim=8", "model.time_dim=4", "model.neighbours=2", "model.mailbox_size=2"],
}
BATCH = 40  # events per step, all ranks together
# at two ranks: each backend with another model (APAN's mailbox ring under Sven's owners)
TWO_RANKS = {"depcache": "jodie", "depcomm": "tgn", "sven": "apan"}
SVEN = ["sched.partition=interval", "sched.micro_batches=2", "sched.prefetch=false"]


def _config(results: Path, run_id: str, sched: str, model: str, world_size: int, *extra: str):
    return compose_run(
        [
            *STREAM, *MODELS[model], f"sched={sched}", f"sched.batch_size={BATCH // world_size}", f"world_size={world_size}",
            "epochs=2", "optim=sgd", "optim.lr=0.05", "device=cpu", "progress=false", f"results_dir={results}",
            f"run_id={run_id}", *(SVEN if sched == "sven" else []), *extra,
        ]
    )  # fmt: skip


def _two_ranks(rank: int, world_size: int, results: str) -> None:
    env = DistEnv(rank, world_size, 0)
    for sched, model in TWO_RANKS.items():
        run = _config(Path(results), sched, sched, model, 2, "dist_backend=cpu:gloo")
        train_in_group(run, env, torch.device("cpu"), load_data(run.dataset), _RunPlace(None))


def _one_rank(results: Path, run_id: str, *extra: str) -> Path:
    run = _config(results, run_id, "single", "tgn", 1, *extra)
    train_in_group(run, DistEnv(0, 1, 0), torch.device("cpu"), load_data(run.dataset), _RunPlace(None))
    return results / run_id


@pytest.fixture(scope="module")
def single_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _one_rank(tmp_path_factory.mktemp("predict_streams") / "results", "single")


@pytest.fixture(scope="module")
def sharded_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("predict_streams2") / "results"
    run_ranks(_two_ranks, (2, str(results)), nprocs=2, timeout_s=300, backend="cpu:gloo")
    return results


def _recorded(folder: Path, phase: str, metric: str) -> float:
    rows = pd.read_parquet(folder / "metrics.parquet")
    rows = rows[(rows["phase"] == phase) & (rows["metric"] == metric)]
    return float(rows.loc[rows["epoch"].idxmax(), "value"])  # the last epoch: the one the checkpoint holds


def _predicted_ap(folder: Path, phase: str) -> float:
    result = run_dygsched("predict", str(folder), "--phase", phase)
    assert result.returncode == 0, result.stderr
    assert "note:" not in result.stdout  # the run's own state, not a replay
    frame = pd.read_parquet(folder / f"predictions-{phase}.parquet")
    return float(link_prediction_metrics(link_scores(frame), with_mrr=False)["ap"])


@pytest.mark.parametrize("phase", ["val", "test"])
def test_one_process_predictions_give_the_run_s_ap(single_run: Path, phase: str):
    assert _predicted_ap(single_run, phase) == pytest.approx(_recorded(single_run, phase, "ap"), rel=1e-9)


# In `make test-slow` (its three two-rank runs take about 25 s on 2 busy cores); the default selection
# checks the gathered table itself: tests/engine/test_node_memory.py compares it with one process's
@pytest.mark.slow
@pytest.mark.parametrize("sched", list(TWO_RANKS))
def test_two_rank_predictions_give_the_run_s_val_and_test_ap(sharded_runs: Path, sched: str):
    """The two ranks' state, gathered into one table, is what one process's passes start from."""
    folder = sharded_runs / sched
    for phase in ("val", "test"):
        assert _predicted_ap(folder, phase) == pytest.approx(_recorded(folder, phase, "ap"), rel=1e-6), phase


def test_pairs_at_an_event_s_time_score_as_the_event_did(single_run: Path, tmp_path: Path):
    """An event whose batch ends later: at its time the memory is the state before its batch, as predict scored it."""
    assert run_dygsched("predict", str(single_run), "--phase", "test").returncode == 0
    frame = pd.read_parquet(single_run / "predictions-test.parquet")
    positives = frame[frame["label"] == 1].reset_index(drop=True)
    batch = positives.index // BATCH
    unabsorbed = positives[positives["time"] < positives.groupby(batch)["time"].transform("max")].head(6)
    assert len(unabsorbed) >= 3
    pairs = tmp_path / "pairs.csv"
    unabsorbed[["src", "dst", "time"]].to_csv(pairs, index=False)
    out = tmp_path / "scored.parquet"
    result = run_dygsched("predict", str(single_run), "--pairs", str(pairs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    scored = pd.read_parquet(out)
    assert list(scored.columns) == ["src", "dst", "time", "score"]
    np.testing.assert_allclose(scored["score"].to_numpy(), unabsorbed["score"].to_numpy(), rtol=1e-5, atol=1e-6)


def test_embed_reads_the_run_s_state_and_says_where_it_replays(single_run: Path, tmp_path: Path):
    out = tmp_path / "emb.parquet"
    result = run_dygsched("embed", str(single_run), "--out", str(out))
    assert result.returncode == 0 and "note:" not in result.stdout, result.stderr
    memory = pd.read_parquet(out)
    assert memory["time"].nunique() == 1 and memory.filter(like="dim_").abs().to_numpy().sum() > 0
    early = run_dygsched("embed", str(single_run), "--at", "0", "--out", str(out))
    assert early.returncode == 0 and "times before the end of training" in early.stdout, early.stderr


def test_a_checkpoint_without_the_state_is_replayed_with_a_note(single_run: Path, tmp_path: Path):
    folder = tmp_path / "old"
    shutil.copytree(single_run, folder, ignore=shutil.ignore_patterns("predictions-*", "embeddings*"))
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    state["strategy"] = {}
    torch.save(state, folder / "checkpoint.pt")
    result = run_dygsched("predict", str(folder), "--phase", "val")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("note: the checkpoint keeps no node memory") == 1
    assert (folder / "predictions-val.parquet").is_file()


@pytest.mark.slow  # a training run of its own (about 13 s on 2 busy cores)
def test_node_task_probabilities_give_the_run_s_auc(tmp_path: Path):
    from sklearn.metrics import roc_auc_score

    folder = _one_rank(tmp_path / "results", "labels", *LABELS, "task=node", "node_task.dropout=0.0")
    result = run_dygsched("predict", str(folder))
    assert result.returncode == 0, result.stderr
    frame = pd.read_parquet(folder / "predictions-test.parquet")
    assert list(frame.columns) == ["event", "time", "node", "label", "probability"]
    assert frame["probability"].between(0, 1).all() and frame["event"].is_monotonic_increasing
    assert roc_auc_score(frame["label"], frame["probability"]) == pytest.approx(_recorded(folder, "test", "auc"), rel=1e-12)
    embedded = run_dygsched("embed", str(folder), "--out", str(tmp_path / "emb.parquet"))
    assert embedded.returncode == 0, embedded.stderr
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("src,dst,time\n0,1,1\n")
    _one_error_line(run_dygsched("predict", str(folder), "--pairs", str(pairs)), "--pairs scores links; a task=node run's")


@pytest.mark.slow  # two training runs of their own
def test_runs_predict_does_not_read_yet_are_one_line(tmp_path: Path):
    """Node affinities (TGB's tgbn-*) and EdgeBank's pairs: refused in one line, nothing written."""
    affinity = compose_run(
        [
            "dataset=trade_like", "dataset.num_nodes=16", "dataset.num_periods=8", "dataset.partners=3", *MODELS["tgn"],
            "sched=single", "sched.batch_size=40", "world_size=1", "task=node", "epochs=1", "device=cpu", "progress=false",
            f"results_dir={tmp_path}", "run_id=affinity",
        ]
    )  # fmt: skip
    train_in_group(affinity, DistEnv(0, 1, 0), torch.device("cpu"), load_data(affinity.dataset), _RunPlace(None))
    _one_error_line(run_dygsched("predict", str(tmp_path / "affinity")), "node affinities (tgbn-*) are not read yet")
    bank = _config(tmp_path, "bank", "single", "edgebank", 1)
    train_in_group(bank, DistEnv(0, 1, 0), torch.device("cpu"), load_data(bank.dataset), _RunPlace(None))
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("src,dst,time\n0,1,1\n")
    _one_error_line(run_dygsched("predict", str(tmp_path / "bank"), "--pairs", str(pairs)), "model=edgebank keeps no node")
    assert not list(tmp_path.glob("*/predictions-*"))


def _one_error_line(result, expected: str) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dygsched: error: ") and expected in lines[0], result.stderr


@pytest.mark.parametrize(
    "content, expected",
    [
        ("src,dst\n0,1\n", "a memory model scores a pair at a time: give the file a column 'time'"),
        ("src,dst,time\n0,1,-5\n", "time -5 is outside the run's stream"),
        ("src,dst,time\n0,9999,1\n", "node id(s) 9999 are not in the run's data"),
        ("src,dst,time\n", "holds no pairs"),
    ],
    ids=["no-time", "outside", "unknown-id", "empty"],
)
def test_bad_pairs_for_a_memory_model_are_one_line(single_run: Path, tmp_path: Path, content: str, expected: str):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(content)
    out = tmp_path / "p.parquet"
    _one_error_line(run_dygsched("predict", str(single_run), "--pairs", str(pairs), "--out", str(out)), expected)
    assert not out.exists()
