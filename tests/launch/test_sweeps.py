"""Hydra sweeps write every run into the shared runs table, even two sweeps at once."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import ROOT, TINY_SYNTHETIC


@pytest.mark.slow
def test_concurrent_sweeps_share_the_runs_table(tmp_path):
    results = tmp_path / "results"
    common = [sys.executable, "-m", "dygsched", "run", "-m", *TINY_SYNTHETIC, "epochs=1", f"results_dir={results}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    sweeps = [
        subprocess.Popen(
            [*common, "sched=psg,greedy", "model=tgcn,wdgcn"], cwd=tmp_path, env=env, text=True, stderr=subprocess.PIPE
        ),
        subprocess.Popen([*common, "seed=1,2"], cwd=tmp_path, env=env, text=True, stderr=subprocess.PIPE),
    ]
    for sweep in sweeps:
        _, stderr = sweep.communicate(timeout=600)
        assert sweep.returncode == 0, stderr[-2000:]
    runs = pd.read_parquet(results / "runs.parquet")
    assert len(runs) == 6 and runs["run_id"].is_unique and set(runs["status"]) == {"ok"}
    assert sorted(zip(runs["sched"], runs["model"]))[:4] == [
        ("greedy", "tgcn"),
        ("greedy", "wdgcn"),
        ("psg", "tgcn"),
        ("psg", "tgcn"),
    ]
    for run_id in runs["run_id"]:
        summary = json.loads((results / run_id / "summary.json").read_text())
        assert summary["status"] == "ok" and (results / run_id / "metrics.parquet").exists()
    assert not list(results.glob(".*.tmp"))
