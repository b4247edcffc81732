"""The model recipe (docs/architecture.md, "Adding a model") followed to the end: a module and a
config that exist only in the tests train through the real CLI with the strategies, unchanged."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.cli_process import run_dygsched
from tests.conftest import ROOT, TINY_SYNTHETIC

TEST_CONF = ROOT / "tests" / "conf"


@pytest.mark.parametrize("sched", ["psg", pytest.param("esdg", marks=pytest.mark.slow)])
def test_a_model_added_by_the_recipe_trains_with_the_strategies(tmp_path, sched):
    done = run_dygsched(
        "run",
        *TINY_SYNTHETIC,
        f"hydra.searchpath=[file://{TEST_CONF}]",
        "model=toy_gru",
        f"sched={sched}",
        "world_size=2",
        "epochs=4",
        "optim.lr=0.05",
        "run_id=toy",
        f"results_dir={tmp_path}",
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "toy" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["model"] == "toy_gru" and summary["world_size"] == 2
    metrics = pd.read_parquet(tmp_path / "toy" / "metrics.parquet")
    losses = (
        metrics[(metrics.phase == "train") & (metrics.metric == "loss") & (metrics.iteration == -1)]
        .groupby("epoch")["value"]
        .mean()
    )
    assert len(losses) == 4 and losses.iloc[-1] < losses.iloc[0], losses
