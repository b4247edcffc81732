"""`dygsched runs --aggregate seed`: runs that differ only in seed, as mean ± std, honest about what is missing."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from dygsched.cli import main
from dygsched.metrics.runs_table import append_run
from dygsched.metrics.seeds import config_key, over_seeds, shown


def config(seed, lr=0.0001, model="tgn", run_id="x"):
    return {
        "dataset": {"name": "collegemsg"},
        "model": {"name": model},
        "sched": {"name": "single"},
        "optim": {"name": "adam", "lr": lr},
        "epochs": 3,
        "seed": seed,
        "run_id": run_id,
        "results_dir": "somewhere",
        "progress": False,
    }


RUNS = {  # run id -> (seed, lr, model, test AP, inductive AP or None)
    "tgn-0": (0, 0.0001, "tgn", 0.80, 0.70),
    "tgn-1": (1, 0.0001, "tgn", 0.90, None),  # no new node in its test part: missing, not 0
    "tgn-2": (2, 0.0001, "tgn", 0.85, 0.60),
    "tgn-lr": (0, 0.001, "tgn", 0.50, 0.40),  # another learning rate: another group
    "jodie-0": (0, 0.0001, "jodie", 0.70, 0.65),
}


@pytest.fixture
def results(tmp_path):
    for run_id, (seed, lr, model, ap, inductive) in RUNS.items():
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "config.yaml").write_text(yaml.safe_dump(config(seed, lr, model, run_id)))
        append_run(
            tmp_path,
            {
                "run_id": run_id,
                "status": "ok",
                "dataset": "collegemsg",
                "model": model,
                "sched": "single",
                "world_size": 1,
                "epochs": 3,
                "seed": seed,
                "eval": {"split": "test", "metric": "ap", "value": ap},
                "test_metrics": {"ap": ap, "ap_inductive": inductive},
            },
        )
    return tmp_path


def test_only_the_seed_and_bookkeeping_may_differ_within_a_group():
    assert config_key(config(0, run_id="a")) == config_key(config(7, run_id="b"))
    assert config_key(config(0)) != config_key(config(0, lr=0.001))


def test_mean_std_count_and_missing(results, capsys):
    assert main(["runs", "--results", str(results), "--aggregate", "seed"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    three = next(line for line in lines if "0,1,2" in line)  # the three tgn seeds, one row
    assert f"0.85 ± {np.std([0.8, 0.9, 0.85], ddof=1):.2g}" in three
    assert f"0.65 ± {np.std([0.7, 0.6], ddof=1):.2g} (2 of 3 seeds)" in three  # the missing seed is left out
    assert "3 group(s) of 5 run(s)" in out  # tgn at two learning rates, and jodie
    lone = next(line for line in lines if "jodie" in line)
    assert "0.7 " in lone + " " and "±" not in lone  # one seed: no spread to show


def test_over_seeds_counts_only_present_values():
    long = pd.DataFrame({"group": [0, 0, 0], "metric": ["ap"] * 3, "value": [0.5, np.nan, 0.7]})
    row = over_seeds(long, ["group", "metric"]).iloc[0]
    assert row["mean"] == pytest.approx(0.6) and row["seeds"] == 2 and row["runs"] == 3
    assert row["std"] == pytest.approx(np.std([0.5, 0.7], ddof=1))
    assert shown(math.nan, math.nan, 0, 3) == "-"
