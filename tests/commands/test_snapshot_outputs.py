"""`dygsched predict`, `embed` and `--pairs` of a snapshot link run under UTG's procedure, through the CLI.

Under `link.procedure=utg` the states run on from the first snapshot (each window from the state
the one before left), so the outputs a group is scored from are one stream's, not a window's from
zero states. The predictions must give the AP, AUC and MRR the run recorded for its checkpoint's
epoch; the decoder on `embed`'s rows, and a pairs file, must give the phase's own scores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dygsched.engine.link_objective import LinkObjective
from tests.cli_process import run_dygsched
from tests.commands.test_predict import _train, link_checks

UTG = [
    "model=tgcn", "sched=psg", "task=link", "link.procedure=utg", "world_size=1", "window=2", "epochs=2",
    "eval_negatives=5", "dataset.num_nodes=60", "dataset.num_snapshots=10",
]  # fmt: skip


def test_utg_scores_give_the_run_s_figures_and_embeddings_and_pairs_score_as_the_phase_does(tmp_path: Path):
    from dygsched.commands.finished_run import load_run, open_run

    folder = _train(tmp_path / "results", "utg", *UTG)
    frame = link_checks(folder, rel=1e-9)
    last = frame[frame["snapshot"] == frame["snapshot"].max()].head(4)  # a positive and its negatives
    snapshot = int(last["snapshot"].iloc[0]) - 1  # the pairs of target snapshot s + 1 are scored after s
    out = tmp_path / "emb.parquet"
    assert run_dygsched("embed", str(folder), "--at", f"0,{snapshot}", "--out", str(out)).returncode == 0
    embeddings = pd.read_parquet(out)  # snapshot 0 too: the stream starts there, no window to wait for
    assert sorted(embeddings["snapshot"].unique()) == [0, snapshot]
    z = torch.tensor(embeddings[embeddings["snapshot"] == snapshot].filter(like="dim_").to_numpy())
    objective = load_run(open_run(folder)).module
    assert isinstance(objective, LinkObjective)
    with torch.no_grad():
        scores = objective.score(z, torch.tensor(last["src"].to_numpy()), torch.tensor(last["dst"].to_numpy()))
    np.testing.assert_allclose(scores.numpy(), last["score"].to_numpy(), rtol=1e-5, atol=1e-6)
    pairs = tmp_path / "pairs.csv"
    last[["src", "dst"]].to_csv(pairs, index=False)
    assert run_dygsched("predict", str(folder), "--pairs", str(pairs)).returncode == 0
    scored = pd.read_parquet(folder / "predictions-pairs.parquet")
    np.testing.assert_allclose(scored["score"].to_numpy(), last["score"].to_numpy(), rtol=1e-5, atol=1e-6)
