"""`dygsched predict` and `embed` of DistDy runs through the CLI: the figures the run recorded.

DistDy's evaluation reads representations of sampled neighbourhoods, computed on whichever rank
holds a node; `predict` rebuilds them on one store. The node run's predictions must give the MSE
it recorded, and the link run's scores its AP, AUC and MRR, for the epoch its checkpoint holds.
The node run trains on two ranks (whose partition predict does not rebuild), the link run on one;
the other two pairings are slow. `sched.batch` covers every node, so the evaluation samples each
node with the key `embed` and a pairs file use (a sample depends on its chunk's start): their rows
must be the evaluation's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tests.cli_process import run_dygsched
from tests.commands.test_predict import _recorded, _train, link_checks

TINY = [
    "sched=distdy", "model=sage_temporal", "model.hidden_channels=8", "window=2", "sched.batch=256",
    "dataset.num_nodes=80", "dataset.feature_dim=8", "optim=sgd", "optim.lr=0.1", "epochs=2",
]  # fmt: skip
NODE = [*TINY, "dataset=uniform", "dataset.num_snapshots=5"]
LINK = [*TINY, "dataset=synthetic", "dataset.num_snapshots=8", "task=link", "link.embedding_dim=8", "eval_negatives=5"]


def _node_checks(folder: Path) -> pd.DataFrame:
    """The val and test MSE of `predict`'s rows equal the run's; returns the test rows."""
    for phase in ("val", "test"):
        result = run_dygsched("predict", str(folder), "--phase", phase)
        assert result.returncode == 0, result.stderr
        frame = pd.read_parquet(folder / f"predictions-{phase}.parquet")
        assert list(frame.columns) == ["snapshot", "node", "prediction", "target"] and len(frame) > 0
        mse = float(((frame["prediction"].astype(float) - frame["target"].astype(float)) ** 2).mean())
        assert mse == pytest.approx(_recorded(folder, phase, "mse"), rel=1e-6), phase
    return frame


@pytest.fixture(scope="module")
def node_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _train(tmp_path_factory.mktemp("distdy") / "results", "node", *NODE, "world_size=2")


def test_node_predictions_give_the_two_rank_run_s_recorded_mse(node_run: Path):
    """Each evaluated node counted once however many ranks evaluated it (each rank holds every chunk)."""
    frame = _node_checks(node_run)
    assert (frame["snapshot"] == 4).all()  # the newest snapshot the last epoch trained on


def test_node_embeddings_are_what_the_head_reads(node_run: Path, tmp_path: Path):
    """The head on `embed`'s rows (the temporal model's output) gives `predict`'s predictions."""
    out = tmp_path / "emb.parquet"
    result = run_dygsched("embed", str(node_run), "--at", "3,4", "--out", str(out))
    assert result.returncode == 0, result.stderr
    embeddings = pd.read_parquet(out)
    assert sorted(embeddings["snapshot"].unique()) == [3, 4] and len(embeddings) == 2 * 80
    predictions = pd.read_parquet(node_run / "predictions-test.parquet")
    rows = embeddings[embeddings["snapshot"] == 4].set_index("node").loc[predictions["node"]]
    state = torch.load(node_run / "checkpoint.pt", weights_only=True)["model"]
    z = torch.tensor(rows.filter(like="dim_").to_numpy())
    head = z @ state["head.weight"].t() + state["head.bias"]
    np.testing.assert_allclose(head.squeeze(-1).numpy(), predictions["prediction"].to_numpy(), rtol=1e-5, atol=1e-6)


def test_an_embedding_before_the_first_window_is_one_line(node_run: Path):
    result = run_dygsched("embed", str(node_run), "--at", "0")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "dygsched: error: --at 0: choose snapshots 1 .. 4 (a window of 2 snapshots ends at each)"
    ]


def test_link_scores_give_the_run_s_figures_and_pairs_score_as_the_phase_does(tmp_path: Path):
    folder = _train(tmp_path / "results", "link", *LINK, "world_size=1")
    frame = link_checks(folder)
    last = frame[(frame["snapshot"] == frame["snapshot"].max()) & (frame["label"] == 1)].head(3)
    pairs = tmp_path / "pairs.csv"
    last[["src", "dst"]].to_csv(pairs, index=False)
    result = run_dygsched("predict", str(folder), "--pairs", str(pairs))
    assert result.returncode == 0, result.stderr
    scored = pd.read_parquet(folder / "predictions-pairs.parquet")
    np.testing.assert_allclose(scored["score"].to_numpy(), last["score"].to_numpy(), rtol=1e-5)


@pytest.mark.slow  # two more trainings
def test_a_one_rank_node_run_and_a_two_rank_link_run_give_their_recorded_figures(tmp_path: Path):
    _node_checks(_train(tmp_path / "results", "node1", *NODE, "world_size=1"))
    link_checks(_train(tmp_path / "results", "link2", *LINK, "world_size=2"))
