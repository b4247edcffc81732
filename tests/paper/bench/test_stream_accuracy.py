"""table-stream-accuracy: each run at its best validation epoch, the seeds averaged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dygsched.paper.bench import stream_accuracy
from tests.paper.bench.runs import metric_rows


def accuracy_metrics(run_id: str, val_ap: list[float], test_ap: list[float]) -> pd.DataFrame:
    rows = []
    for epoch, (val, test) in enumerate(zip(val_ap, test_ap)):
        rows += [(epoch, -1, 0, "val", "ap", val), (epoch, -1, 0, "test", "ap", test), (epoch, -1, 0, "test", "auc", test + 0.01)]
        rows += [(epoch, -1, 0, "test", "ap_inductive", test - 0.1), (epoch, -1, 0, "train", "epoch_time_s", 2.0 + epoch)]
    return metric_rows(run_id, rows)


def test_stream_accuracy_reads_each_run_at_its_best_validation_epoch_and_averages_the_seeds(tmp_path):
    from dygsched.metrics.runs_table import append_run

    folder = tmp_path / stream_accuracy.STREAM_ACCURACY_DIR
    cases = {  # run -> (model, seed, validation AP per epoch, test AP per epoch)
        "a": ("tgn", 0, [0.6, 0.8, 0.7], [0.5, 0.9, 0.95]),  # best validation at epoch 1: test 0.9, not the last epoch's 0.95
        "b": ("tgn", 1, [0.9, 0.8, 0.7], [0.7, 0.8, 0.9]),  # best at epoch 0: test 0.7
        "c": ("jodie", 0, [0.5, 0.5, 0.6], [0.6, 0.6, 0.6]),
    }
    for run_id, (model, seed, val, test) in cases.items():
        (folder / run_id).mkdir(parents=True)
        accuracy_metrics(run_id, val, test).to_parquet(folder / run_id / "metrics.parquet")
        append_run(folder, {"run_id": run_id, "status": "ok", "dataset": "collegemsg", "model": model, "seed": seed, "epochs": 3})
    stream_accuracy.build_stream_accuracy(tmp_path)
    per_run = pd.read_csv(tmp_path / stream_accuracy.STREAM_ACCURACY_RUNS_CSV)
    assert per_run[per_run.model == "tgn"].epoch.tolist() == [1, 0]
    table = pd.read_csv(tmp_path / stream_accuracy.STREAM_ACCURACY_CSV)
    tgn_ap = table[(table.model == "tgn") & (table.metric == "ap") & (table.setting == "transductive")].iloc[0]
    assert (
        tgn_ap["mean"] == pytest.approx(0.8) and tgn_ap["std"] == pytest.approx(np.std([0.9, 0.7], ddof=1)) and tgn_ap.seeds == 2
    )
    inductive = table[(table.model == "tgn") & (table.metric == "ap") & (table.setting == "inductive")].iloc[0]
    assert inductive["mean"] == pytest.approx(0.7) and (table.epochs == 3).all()
    missing = table[(table.metric == "auc") & (table.setting == "inductive")]  # never recorded: missing, never 0
    assert missing["mean"].isna().all() and (missing.seeds == 0).all()
    assert stream_accuracy.read_stream_accuracy({stream_accuracy.STREAM_ACCURACY_CSV: table}) == (
        "test AP at the best validation epoch, mean ± std over seeds: collegemsg transductive: tgn 0.800 ± 0.141, jodie 0.600; "
        "collegemsg inductive: tgn 0.700 ± 0.141, jodie 0.500"
    )
