"""`dygsched predict` and `embed` through the CLI: equal to what the run evaluated, and one line for bad input.

One tiny snapshot run on two ranks (PSG) is trained once for the module; its test predictions'
MSE must equal the test MSE the run recorded for the epoch its checkpoint holds, and the model's
head applied to `embed`'s rows must give the same predictions. The memory models (slow: they
train on Enron's stream) are compared the same way: EdgeBank's AP with the run's own (it trains
nothing, so a replay reads the same state), TGN's too (the checkpoint keeps the state its validation
started from; tests/commands/test_predict_streams.py checks every node-memory strategy on a tiny
stream); so is the link-prediction snapshot run (slow too: a second training run).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from dygsched.commands.tables import link_scores
from dygsched.metrics.link_prediction import link_prediction_metrics
from tests.cli_process import run_dygsched


def _train(results: Path, run_id: str, *overrides: str) -> Path:
    result = run_dygsched(
        "run", *overrides, "progress=false", f"results_dir={results}", f"run_id={run_id}", cwd=results.parent, timeout=600
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return results / run_id


def _recorded(folder: Path, phase: str, metric: str) -> float:
    rows = pd.read_parquet(folder / "metrics.parquet")
    rows = rows[(rows["phase"] == phase) & (rows["metric"] == metric)]
    return float(rows.loc[rows["epoch"].idxmax(), "value"])  # the last epoch: the one the checkpoint holds


def link_checks(folder: Path, rel: float = 1e-6) -> pd.DataFrame:
    """The val and test AP, AUC and MRR of `predict`'s rows equal the run's; returns the test rows."""
    for phase in ("val", "test"):
        result = run_dygsched("predict", str(folder), "--phase", phase)
        assert result.returncode == 0, result.stderr
        frame = pd.read_parquet(folder / f"predictions-{phase}.parquet")
        found = link_prediction_metrics(link_scores(frame), with_mrr=True)
        for metric in ("ap", "auc", "mrr"):
            assert found[metric] == pytest.approx(_recorded(folder, phase, metric), rel=rel), (phase, metric)
    return frame


@pytest.fixture(scope="module")
def psg_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("predict") / "results"
    return _train(
        results, "psg", "model=tgcn", "sched=psg", "world_size=2", "epochs=2",
        "dataset.num_nodes=60", "dataset.num_snapshots=10",
    )  # fmt: skip


def test_predictions_give_the_run_s_recorded_test_mse(psg_run: Path):
    result = run_dygsched("predict", str(psg_run), "--phase", "test")
    assert result.returncode == 0, result.stderr
    frame = pd.read_parquet(psg_run / "predictions-test.parquet")
    assert list(frame.columns) == ["snapshot", "node", "prediction", "target"]
    mse = float(((frame["prediction"].astype(float) - frame["target"].astype(float)) ** 2).mean())
    assert mse == pytest.approx(_recorded(psg_run, "test", "mse"), rel=1e-6)


def test_embeddings_are_what_the_head_reads(psg_run: Path, tmp_path: Path):
    """The model's head on `embed`'s rows of the last snapshot gives `predict`'s predictions there."""
    out = tmp_path / "emb.parquet"
    assert run_dygsched("embed", str(psg_run), "--at", "7,9", "--out", str(out)).returncode == 0
    embeddings = pd.read_parquet(out)
    assert sorted(embeddings["snapshot"].unique()) == [7, 9]
    predictions = pd.read_parquet(psg_run / "predictions-test.parquet")
    last = embeddings[embeddings["snapshot"] == 9].set_index("node").loc[predictions["node"]]
    state = torch.load(psg_run / "checkpoint.pt", weights_only=True)["model"]
    z = torch.tensor(last.filter(like="dim_").to_numpy())
    head = z @ state["model.head.weight"].t() + state["model.head.bias"]
    np.testing.assert_allclose(head.squeeze(-1).numpy(), predictions["prediction"].to_numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_link_scores_give_the_run_s_test_ap_and_pairs_score_as_the_phase_does(tmp_path: Path):
    """A snapshot model on task=link over two ranks: the table's AP is the run's; a pairs file's
    pairs get the scores the phase's own rows give them (no time: after the last snapshot)."""
    folder = _train(
        tmp_path / "results", "link", "model=tgcn", "sched=psg", "task=link", "world_size=2", "epochs=1",
        "dataset.num_nodes=60", "dataset.num_snapshots=10",
    )  # fmt: skip
    assert run_dygsched("predict", str(folder)).returncode == 0
    frame = pd.read_parquet(folder / "predictions-test.parquet")
    found = link_prediction_metrics(link_scores(frame), with_mrr=False)
    assert found["ap"] == pytest.approx(_recorded(folder, "test", "ap"), rel=1e-9)
    last = frame[(frame["snapshot"] == frame["snapshot"].max()) & (frame["label"] == 1)].head(3)
    pairs = tmp_path / "pairs.parquet"
    last[["src", "dst"]].to_parquet(pairs)
    assert run_dygsched("predict", str(folder), "--pairs", str(pairs)).returncode == 0
    scored = pd.read_parquet(folder / "predictions-pairs.parquet")
    np.testing.assert_allclose(scored["score"].to_numpy(), last["score"].to_numpy(), rtol=1e-5)


def _nothing_written(folder: Path) -> None:
    written = [p.name for p in folder.iterdir() if p.suffix == ".parquet" and p.name.startswith(("predictions", "embed"))]
    temporaries = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert written == [] and temporaries == []


def _one_error_line(result, expected: str) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dygsched: error: ") and expected in lines[0], result.stderr


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path: Path):
    _one_error_line(run_dygsched("predict", str(tmp_path)), "is not a run folder (no config.yaml")
    _one_error_line(run_dygsched("embed", str(tmp_path / "absent")), "no run folder")
    _nothing_written(tmp_path)


def test_a_run_without_checkpoint_is_one_line(psg_run: Path, tmp_path: Path):
    """A run trained with checkpoint=false: its folder has no checkpoint.pt and its config says why."""
    folder = tmp_path / "no-checkpoint"
    shutil.copytree(psg_run, folder, ignore=shutil.ignore_patterns("checkpoint.pt", "predictions-*", "embeddings*"))
    config = folder / "config.yaml"
    config.write_text(config.read_text().replace("checkpoint: true", "checkpoint: false"))
    _one_error_line(run_dygsched("predict", str(folder)), "it ran with checkpoint=false")
    _nothing_written(folder)


def test_an_unknown_phase_is_one_line(psg_run: Path, tmp_path: Path):
    out = tmp_path / "p.parquet"
    _one_error_line(run_dygsched("predict", str(psg_run), "--phase", "tset", "--out", str(out)), "unknown phase 'tset'")
    assert not out.exists()


def test_pairs_with_unknown_ids_are_one_line(psg_run: Path, tmp_path: Path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("src,dst\n0,1\n5,999\n")
    out = tmp_path / "p.parquet"
    result = run_dygsched("predict", str(psg_run), "--pairs", str(pairs), "--out", str(out))
    _one_error_line(result, "node id(s) 999 are not in the run's data")
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["pairs.csv"]


@pytest.mark.slow
def test_edgebank_s_scores_give_the_run_s_test_ap(tmp_path: Path):
    folder = _train(
        tmp_path / "results", "bank", "model=edgebank", "sched=single", "dataset=events", "world_size=1", "epochs=1",
        "sched.batch_size=1000",
    )  # fmt: skip
    assert run_dygsched("predict", str(folder)).returncode == 0
    frame = pd.read_parquet(folder / "predictions-test.parquet")
    found = link_prediction_metrics(link_scores(frame), with_mrr=False)
    assert found["ap"] == pytest.approx(_recorded(folder, "test", "ap"), rel=1e-9)


@pytest.mark.slow
def test_tgn_after_depcache_gives_the_run_s_val_ap(tmp_path: Path):
    """TGN trained on two DepCache ranks: the scores' AP is the run's own (the checkpoint keeps the
    state its validation started from)."""
    folder = _train(
        tmp_path / "results", "tgn", "model=tgn", "sched=depcache", "dataset=events", "world_size=2", "epochs=1",
        "sched.batch_size=1000",
    )  # fmt: skip
    assert run_dygsched("predict", str(folder), "--phase", "val").returncode == 0
    assert run_dygsched("embed", str(folder), "--at", "1e12").returncode == 0
    frame = pd.read_parquet(folder / "predictions-val.parquet")
    found = link_prediction_metrics(link_scores(frame), with_mrr=False)
    assert found["ap"] == pytest.approx(_recorded(folder, "val", "ap"), rel=1e-6)
    memory = pd.read_parquet(folder / "embeddings.parquet")
    assert memory["node"].nunique() == len(memory) and memory.filter(like="dim_").abs().to_numpy().sum() > 0
