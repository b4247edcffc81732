"""table-node-tasks: each learned figure beside its floors, and a published figure only beside a real stream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dygsched.paper.bench.node_tasks import accuracy_table, cost_table


def runs() -> pd.DataFrame:
    rows = []
    for dataset, task in (("wikipedia_like", "classification"), ("wikipedia", "classification"), ("trade_like", "affinity")):
        for seed, shift in enumerate((0.0, 0.02, -0.02)):
            for model, value in (("tgn", 0.80), ("jodie", 0.85), ("persistent", 0.52), ("moving_average", 0.51)):
                rows.append(
                    {"task": task, "dataset": dataset, "model": model, "seed": seed, "value": value + shift, "epochs_trained": 3,
                     "epoch_s_per_1k_events": 2.0, "head_s_per_1k_events": 0.02 if model in ("tgn", "jodie") else np.nan}
                )  # fmt: skip
                if model in ("tgn", "jodie") and task == "classification":
                    rows.append(
                        {
                            **rows[-1],
                            "task": "link",
                            "value": np.nan,
                            "epoch_s_per_1k_events": 5.0,
                            "head_s_per_1k_events": np.nan,
                        }
                    )
    return pd.DataFrame(rows)


def test_the_table_sets_each_figure_beside_its_floors_and_a_real_streams_published_one():
    table = accuracy_table(runs()).set_index(["dataset", "model"])
    tgn = table.loc[("wikipedia_like", "tgn")]
    assert tgn["mean"] == pytest.approx(0.80) and tgn["std"] == pytest.approx(0.02) and tgn["seeds"] == 3
    assert tgn["persistent"] == pytest.approx(0.52) and tgn["moving_average"] == pytest.approx(0.51)
    assert tgn["metric"] == "auc" and np.isnan(tgn["published"])  # a generated stream: no paper's figure
    assert table.loc[("wikipedia", "jodie"), "published"] == pytest.approx(0.8899)  # DyGLib's Table 15
    assert table.loc[("trade_like", "tgn"), "metric"] == "ndcg@10"
    assert set(table.reset_index()["task"]) == {"classification", "affinity"}  # link runs are not figures


def test_the_cost_table_sets_the_classifier_beside_both_epochs():
    cost = cost_table(runs()).set_index(["dataset", "model"])
    row = cost.loc[("wikipedia_like", "tgn")]
    assert (
        row["link_epoch_s_per_1k"] == 5.0 and row["node_epoch_s_per_1k"] == 2.0 and row["classifier_share"] == pytest.approx(0.01)
    )
    assert np.isnan(cost.loc[("trade_like", "tgn"), "link_epoch_s_per_1k"])  # trained end to end: no link run


@pytest.mark.parametrize("smoke", [False, True])
def test_every_link_run_of_the_sweep_has_its_own_id_and_its_node_run_names_it(smoke):
    """The full sweep trains link runs on two datasets into one folder: an id without the dataset
    would name the second dataset's run after the first's, and the sweep would stop there."""
    from dygsched.paper.bench.node_tasks import NODE_TASKS_SWEEP
    from dygsched.paper.sweep import _points, planned_runs

    points = [typed for run in planned_runs(NODE_TASKS_SWEEP, smoke) for _, typed in _points(run, Path("unused"))]
    link_ids = [str(typed.run_id) for typed in points if str(typed.run_id).startswith("link-")]
    assert link_ids and len(link_ids) == len(set(link_ids))
    named = {str(typed.node_task.init_from) for typed in points if typed.node_task.init_from}
    assert named and named <= set(link_ids)


def test_the_tables_keep_their_order_whatever_order_the_runs_finished_in():
    """A sweep built in parts and merged lists its runs in no useful order; the tables read task by
    task, stream by stream, the learned models before the floors."""
    from dygsched.paper.bench.node_tasks import in_order

    shuffled = runs().sample(frac=1.0, random_state=3).reset_index(drop=True)
    table = accuracy_table(in_order(shuffled))
    assert list(table["task"].drop_duplicates()) == ["classification", "affinity"]
    assert list(table["dataset"].drop_duplicates()) == ["wikipedia_like", "wikipedia", "trade_like"]  # by task first
    first = table[table["dataset"] == "wikipedia_like"]["model"].tolist()
    assert first == ["tgn", "jodie", "persistent", "moving_average"]
    assert in_order(shuffled).equals(in_order(runs()))
