"""Hydra sweeps write every run into the shared runs table, even two sweeps at once."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.cli_process import run_dygsched
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


@pytest.mark.slow  # a three-run sweep
def test_each_run_of_a_sweep_says_which_of_how_many_it_is(tmp_path):
    """One line per run as it starts, with what the sweep varies; none for a run with progress=false,
    and no bar characters when the output is not a terminal (one line per epoch)."""
    tiny = [o for o in TINY_SYNTHETIC if not o.startswith("progress=")]
    done = run_dygsched(
        "run",
        "-m",
        *tiny,
        "epochs=2",
        "world_size=1",
        "checkpoint=false",
        "progress=true,false",
        f"results_dir={tmp_path / 'results'}",
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("sweep:")] == ["sweep: run 1 of 2: progress=True"]  # as Hydra spells it
    assert [line.split()[:2] for line in lines if line.startswith("epoch ")] == [
        ["epoch", "1/2"],
        ["epoch", "2/2"],
    ]  # the first run's only
    assert "\r" not in done.stdout + done.stderr and "step/s" not in done.stderr
    assert len(pd.read_parquet(tmp_path / "results" / "runs.parquet")) == 2


def test_sweep_run_lines():
    from dygsched.launch.sweeps import sweep_run_line, sweep_shape

    shape = sweep_shape(["sched=psg,greedy", "model=tgcn", "seed=range(0,3)", "+experiment=a,b"])
    assert shape is not None and shape.runs == 12 and shape.varied == ("sched", "seed", "+experiment")
    line = sweep_run_line(4, ["sched=greedy", "model=tgcn", "seed=1", "+experiment=b"], shape)
    assert line == "sweep: run 5 of 12: sched=greedy seed=1 +experiment=b"
    assert sweep_run_line(0, ["model=tgcn"], None) == "sweep: run 1: model=tgcn"
