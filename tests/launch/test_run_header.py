"""The run header and the summary say what a run predicts and count snapshots and epochs the same
way as the log (issue 57): ``task: node regression of the next snapshot's log-degree``, ``19
snapshots: 20 cut, ...``, and the epoch the test figure is read at is the log's last ``epoch 2/2``."""

import json

import pandas as pd

from dygsched.metrics.runs_table import epochs_from_one
from tests.cli_process import run_dygsched


def test_an_edge_list_run_says_its_task_metric_snapshots_and_epochs(tmp_path):
    done = run_dygsched(
        "run", "dataset=edgelist", "world_size=1", "epochs=2", "model.hidden_channels=8", "model.num_layers=1",
        "run_id=header", f"results_dir={tmp_path / 'results'}", timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "143 nodes, 19 snapshots: 20 cut, the last only gives the 19th's targets" in out
    assert "task: node regression of the next snapshot's log-degree; metric: mse" in out
    assert "epoch 2/2" in out and "test mse (epoch 2)" in out
    summary = json.loads((tmp_path / "results" / "header" / "summary.json").read_text())
    assert summary["task"] == "node regression of the next snapshot's log-degree"
    assert summary["num_snapshots"] == 19 and summary["eval_epoch"] == 2 and summary["epochs_counted_from"] == 1
    row = pd.read_parquet(tmp_path / "results" / "runs.parquet").iloc[0]
    assert row["task"] == summary["task"] and row["eval_epoch"] == 2 and row["num_snapshots"] == 19


def test_rows_written_before_epochs_counted_from_one_read_the_same_way():
    old = pd.DataFrame({"run_id": ["old"], "eval_epoch": [4], "early_stop.best_epoch": [2.0]})
    new = pd.DataFrame({"run_id": ["new"], "eval_epoch": [5], "early_stop.best_epoch": [3.0], "epochs_counted_from": [1]})
    both = epochs_from_one(pd.concat([old, new], ignore_index=True)).set_index("run_id")
    assert both.loc["old", "eval_epoch"] == 5 and both.loc["old", "early_stop.best_epoch"] == 3
    assert both.loc["new", "eval_epoch"] == 5 and both.loc["new", "early_stop.best_epoch"] == 3
    assert (both["epochs_counted_from"] == 1).all()
