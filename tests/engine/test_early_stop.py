"""Early stopping on a validation metric: the epoch it stops at, the test metrics it reports, and resume."""

import json
from pathlib import Path

import pytest
import torch

from dygsched.engine.distributed import DistEnv
from dygsched.engine.snapshot_groups.strategy import SnapshotGroupStrategy
from dygsched.engine.worker import train_in_joined_group
from dygsched.launch.compose import compose_run
from dygsched.metrics.early_stop import EarlyStopping
from tests.cli_process import run_dygsched
from tests.conftest import TINY_SYNTHETIC

# validation MSE per epoch: best at epoch 1, then two epochs without improvement (a tie does not improve)
VAL_MSE = [0.5, 0.4, 0.4, 0.45, 0.1, 0.1]


@pytest.fixture
def scripted_evaluation(monkeypatch):
    """The strategy's evaluation replaced by known values: val.mse from VAL_MSE, test.mse = 10 + epoch."""
    calls = {"val": 0, "test": 0}

    def evaluate(self, phase):
        epoch = calls[phase]
        calls[phase] += 1
        value = VAL_MSE[epoch] if phase == "val" else 10.0 + epoch
        return {"loss": value, "mse": value}

    monkeypatch.setattr(SnapshotGroupStrategy, "evaluate", evaluate)
    return calls


def run_in_process(results: Path, *overrides: str) -> dict:
    run = compose_run(
        [*TINY_SYNTHETIC, "world_size=1", "device=cpu", "early_stop.metric=val.mse", "early_stop.patience=2",
         f"results_dir={results}", *overrides]
    )  # fmt: skip
    summary = train_in_joined_group(run, DistEnv(0, 1, 0), torch.device("cpu"), None)
    assert summary is not None
    return summary


def test_stops_after_patience_epochs_and_reports_the_best_epochs_test_metrics(tmp_path, scripted_evaluation):
    summary = run_in_process(tmp_path, "epochs=6", "run_id=stopped")
    # epochs 1..4 as the log counts them (rows 0..3): epoch 2 is best, epochs 3 and 4 do not improve on it
    assert summary["epochs_completed"] == 4
    stop = summary["early_stop"]
    assert stop["best_epoch"] == 2 and stop["stopped_early"] and stop["stopped_epoch"] == 4 and stop["mode"] == "min"
    assert "val.mse did not improve on epoch 2" in stop["reason"]
    assert summary["eval"]["value"] == 11.0 and summary["eval_epoch"] == 2  # test at the best epoch, not the last
    assert summary["test_metrics"]["mse"] == 11.0
    saved = json.loads((tmp_path / "stopped" / "summary.json").read_text())
    assert saved["early_stop"]["best_epoch"] == 2 and saved["epochs_counted_from"] == 1
    import pandas as pd

    row = pd.read_parquet(tmp_path / "runs.parquet").iloc[0]
    assert row["early_stop.best_epoch"] == 2 and bool(row["early_stop.stopped_early"]) and row["eval_epoch"] == 2


def test_a_resumed_run_keeps_the_early_stopping_state(tmp_path, scripted_evaluation):
    first = run_in_process(tmp_path, "epochs=3", "run_id=resumed")  # stops running before the stop: one epoch without improvement
    assert first["epochs_completed"] == 3 and not first["early_stop"]["stopped_early"]
    summary = run_in_process(tmp_path, "epochs=6", "run_id=resumed", f"resume={tmp_path / 'resumed'}")
    # a resume that forgot the state would take epoch 3 as its first best and run on to epoch 5
    assert summary["epochs_completed"] == 4 and summary["early_stop"]["stopped_epoch"] == 4
    assert summary["early_stop"]["best_epoch"] == 2 and summary["eval"]["value"] == 11.0


def test_without_early_stopping_the_last_epoch_is_reported(tmp_path, scripted_evaluation):
    summary = run_in_process(tmp_path, "epochs=3", "early_stop.metric=null", "early_stop.patience=null")
    assert "early_stop" not in summary and summary["epochs_completed"] == 3 and summary["eval"]["value"] == 12.0


def test_each_phases_evaluation_is_timed_and_the_headline_stays_the_task_metric(tmp_path, monkeypatch):
    """``eval_time_s``: the wall time around ``Strategy.evaluate`` per phase and epoch, recorded after
    the task's metrics; the summary's headline and early stopping still read the task's metric."""
    import time

    import pandas as pd

    def evaluate(self, phase):
        time.sleep(0.05 if phase == "test" else 0.0)
        return {"loss": 1.0, "mse": 2.0}

    monkeypatch.setattr(SnapshotGroupStrategy, "evaluate", evaluate)
    summary = run_in_process(tmp_path, "epochs=2", "run_id=timed", "early_stop.metric=null", "early_stop.patience=null")
    metrics = pd.read_parquet(tmp_path / "timed" / "metrics.parquet")
    timed = metrics[metrics.metric == "eval_time_s"].pivot_table(index="epoch", columns="phase", values="value")
    assert list(timed.index) == [0, 1] and (timed["test"] >= 0.05).all() and (timed["val"] < timed["test"]).all()
    assert summary["eval"] == {"split": "test", "metric": "mse", "value": 2.0}
    assert summary["test_metrics"]["eval_time_s"] >= 0.05


def test_ties_missing_values_and_the_default_mode():
    stop = EarlyStopping("val.ap", patience=2, mode="max")
    assert not stop.observe(0, 0.5) and not stop.observe(1, 0.5)  # a tie keeps the earlier epoch
    assert stop.observe(2, float("nan"))  # NaN never improves
    assert stop.best_epoch == 0 and stop.stopped_epoch == 2
    restored = EarlyStopping("val.ap", 2, "max")
    restored.load_state_dict(stop.state_dict())
    assert restored.describe() == stop.describe()


MSE_2 = ["early_stop.metric=val.mse", "early_stop.patience=2"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["early_stop.metric=val.ap", "early_stop.patience=2"], "early_stop.metric=val.ap: sched=psg does not record it"),
        (["early_stop.metric=val.mse", "early_stop.patience=0"], "early_stop.patience must be an integer of at least 1"),
        (["early_stop.metric=test.mse", "early_stop.patience=2"], "early_stop.metric names a validation metric"),
        (["early_stop.patience=2"], "early stopping needs both early_stop.metric"),
        ([*MSE_2, "early_stop.mode=up"], "early_stop.mode must be max or min"),
    ],
)
def test_bad_early_stop_settings_are_one_line_before_training(tmp_path, overrides, message):
    result = run_dygsched("run", *TINY_SYNTHETIC, *overrides, f"results_dir={tmp_path / 'results'}", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "dygsched: error:" in lines[0]
    assert not [p for p in (tmp_path / "results").glob("*") if p.is_dir()]


@pytest.mark.parametrize(
    "ap, auc, patience, planned, selected",
    [
        ([0.5, 0.6, 0.6, 0.7], [0.5, 0.6, 0.6, 0.65], 2, 4, 3),  # every epoch at least as good: the last
        ([0.5, 0.6, 0.6, 0.5], [0.5, 0.6, 0.6, 0.6], 2, 4, 2),  # a tie counts: the later epoch
        ([0.5, 0.6, 0.55], [0.5, 0.4, 0.45], 2, 3, 0),  # AP up but AUC down is no better
        ([0.5, float("nan"), 0.4], [0.5, 0.6, 0.4], 2, 3, 0),  # a missing figure is no better
        ([0.5, 0.6, 0.7], [0.5, 0.6, 0.7], 5, 10, None),  # stopped short of its epochs while still improving
    ],
)
def test_dyglibs_rule_selects_the_last_epoch_where_every_metric_is_at_least_its_best(ap, auc, patience, planned, selected):
    import pandas as pd

    from dygsched.metrics.early_stop import all_metrics_selection

    values = pd.DataFrame({"ap": ap, "auc": auc})
    assert all_metrics_selection(values, patience, planned) == selected
