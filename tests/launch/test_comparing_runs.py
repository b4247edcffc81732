"""Comparing strategies (issue 57): steps per epoch and units per step in the summary and the runs
table, the plan's predicted epoch time only where it is in the run's seconds, settings a run does not
read left out of its row, a sweep ending with its runs' table, integer epoch axes."""

import json

import pandas as pd

from dygsched.metrics.recorder import EPOCH_LEVEL
from dygsched.metrics.summary import summarize
from tests.cli_process import run_dygsched
from tests.conftest import TINY_SYNTHETIC


def test_a_sweep_ends_with_its_table_and_each_row_says_its_steps_and_its_plans_units(tmp_path):
    done = run_dygsched(
        "run", "-m", *TINY_SYNTHETIC, "sched=greedy", "sched.timeline.profile_epochs=0,1", "epochs=2",
        f"results_dir={tmp_path / 'results'}", timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("the sweep's 2 run(s)") :]
    assert "optimizer_steps_per_epoch" in table and "units_per_step" in table and table.count(" greedy ") == 2
    summaries = [json.loads(p.read_text()) for p in sorted((tmp_path / "results").glob("*/summary.json"))]
    by_profile = {s["sched"] + str(bool(s.get("switch_epoch"))): s for s in summaries}
    cost_model, profiled = by_profile["greedyFalse"], by_profile["greedyTrue"]
    # a plan solved on the cost model's sizes predicts no seconds: missing, with why
    assert cost_model["plan_predicted_epoch_time"] is None
    assert "cost model" in cost_model["missing"]["plan_predicted_epoch_time"]
    # one solved on the profiled group times does
    assert profiled["plan_predicted_epoch_time"] > 0 and "plan_predicted_epoch_time" not in profiled["missing"]
    for summary in summaries:
        assert summary["optimizer_steps_per_epoch"] >= 1 and summary["units_per_step"] >= 1
        # a node regression run on snapshots reads none of link prediction's settings, nor split.by
        assert not {"negatives", "negative_pool", "inductive", "new_nodes_draw", "average", "split_by"} & summary.keys()
    row = pd.read_parquet(tmp_path / "results" / "runs.parquet")
    assert {"optimizer_steps_per_epoch", "units_per_step"} <= set(row.columns) and "negatives" not in row.columns


def test_steps_and_units_per_step_count_every_rank():
    rows = []
    for epoch in (0, 1):
        for iteration, units in enumerate([(2, 2), (2, 1)]):  # two steps, 4 and 3 units over two ranks
            for rank, count in enumerate(units):
                rows.append(("r", epoch, iteration, rank, "train", "units", float(count)))
        rows.append(("r", epoch, EPOCH_LEVEL, 0, "train", "loss", 1.0))
    frame = pd.DataFrame(rows, columns=["run_id", "epoch", "iteration", "rank", "phase", "metric", "value"])
    summary = summarize(frame, {})
    assert summary["optimizer_steps_per_epoch"] == 2 and summary["units_per_step"] == 3.5


def test_epoch_axes_tick_whole_epochs_only():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dygsched.metrics.run_plot import epoch_axis

    figure, axes = plt.subplots()
    axes.plot([1, 2, 3], [0.5, 0.4, 0.3])
    epoch_axis(axes)
    figure.canvas.draw()
    ticks = [t for t in axes.get_xticks() if 1 <= t <= 3]
    plt.close(figure)
    assert ticks and all(float(t).is_integer() for t in ticks)
