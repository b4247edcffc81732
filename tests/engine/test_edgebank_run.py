"""`dygsched run model=edgebank sched=single`: evaluated by the node-memory strategy's own code, end to end."""

import json

import pandas as pd

from tests.cli_process import run_dygsched


def test_edgebank_runs_end_to_end_on_collegemsg(tmp_path):
    result = run_dygsched(
        "run", "model=edgebank", "sched=single", "dataset=collegemsg", "world_size=1", "epochs=1", "progress=false",
        "model.memory=repeat_threshold", f"results_dir={tmp_path / 'results'}", cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (folder,) = [p for p in (tmp_path / "results").iterdir() if p.is_dir() and not p.name.startswith(".")]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["model"] == "edgebank" and summary["eval"]["metric"] == "ap"
    assert 0.5 < summary["eval"]["value"] < 1.0 and summary["test_metrics"]["auc"] > 0.5
    assert summary["final_train_loss"] is None or summary["final_train_loss"] != summary["final_train_loss"]  # nothing trained
    assert "no training step" in summary["missing"]["loss"]
    runs = pd.read_parquet(tmp_path / "results" / "runs.parquet")
    assert runs["model"].tolist() == ["edgebank"]  # in the runs table like every learned model
