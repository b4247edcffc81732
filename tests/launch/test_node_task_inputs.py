"""task=node's bad input through ``dygsched run``: one ``dygsched: error:`` line each, before any rank
starts, and nothing written."""

from __future__ import annotations

import shutil

import pytest

from tests.cli_process import run_dygsched

SMALL = ["dataset=bipartite", "dataset.num_users=60", "dataset.num_items=15", "dataset.num_events=600", "dataset.label_rate=0.1"]
SINGLE = ["sched=single", "world_size=1", "sched.batch_size=50"]
TGN = ["model=tgn", "model.memory_dim=8", "model.time_dim=4", "model.neighbours=2", *SINGLE]


def dygsched(tmp_path, *args):
    return run_dygsched("run", *args, f"results_dir={tmp_path / 'results'}", "progress=false", timeout=300, cwd=tmp_path)


def refused(tmp_path, *args) -> str:
    result = dygsched(tmp_path, *args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("dygsched: error: ")
    written = [p for p in (tmp_path / "results").glob("*") if p.is_dir()] if (tmp_path / "results").exists() else []
    assert not [p for p in written if p.name not in ("link", "other")], written
    return lines[0]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["dataset=events", *TGN, "task=node"], "task=node: dataset 'events' is an event stream without labels"),
        ([*SMALL, "dataset.label_rate=0.0", *TGN, "task=node"], "no training event of dataset 'bipartite' has label 1"),
        ([*SMALL, *TGN, "task=node", "eval_negatives=5"], "eval_negatives set link prediction's evaluation"),
        ([*SMALL, *TGN, "task=node", "eval.inductive=apart"], "eval.inductive sets how link prediction is scored"),
        ([*SMALL, *TGN, "node_task.backbone=frozen"], "node_task.* sets node property prediction on a labelled event stream"),
        ([*SMALL, *TGN, "task=node", "node_task.backbone=thawed"], "node_task.backbone must be one of frozen, fine_tune, link"),
        ([*SMALL, *TGN, "task=node", "node_task.init_from=nowhere"], "node_task.init_from=nowhere: no run folder there"),
        ([*SMALL, "model=edgebank", *SINGLE, "task=node"], "model=edgebank scores links"),
        ([*SMALL, "model=persistent", *SINGLE], "model=persistent forecasts node labels (task=node)"),
        (["dataset=synthetic", "task=node", "node_task.dropout=0.5"], "node_task.* sets node property prediction"),
    ],
    ids=[
        "no labels",
        "no positive",
        "link negatives",
        "inductive pass",
        "link task",
        "backbone",
        "no run",
        "edgebank",
        "persistent link",
        "snapshots",
    ],
)
def test_bad_node_task_input_is_one_line_and_starts_no_run(tmp_path, overrides, message):
    assert message in refused(tmp_path, *overrides)


def test_labels_of_the_wrong_type_in_a_file_are_one_line(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("src,dst,t,label\n0,1,1,0\n1,2,2,1\n2,0,3,7\n")
    line = refused(tmp_path, "dataset=stream", f"dataset.path={path}", *TGN, "task=node")
    assert f"{path}: labels must be 0 or 1 (a state label per event), got 7 (line 4)" in line


def test_init_from_a_run_of_another_model_or_dataset_is_one_line(tmp_path):
    link = dygsched(tmp_path, *SMALL, *TGN, "epochs=1", "run_id=link")
    assert link.returncode == 0, link.stderr
    jodie = ["model=jodie", "model.memory_dim=8", "model.time_dim=4", *SINGLE]
    line = refused(tmp_path, *SMALL, *jodie, "task=node", "node_task.init_from=link")
    assert "node_task.init_from=link: link trained model=tgn, this run model=jodie" in line
    line = refused(tmp_path, *SMALL, *TGN, "model.memory_dim=12", "task=node", "node_task.init_from=link")
    assert "link's model differs: model.memory_dim (8 -> 12)" in line
    line = refused(tmp_path, *SMALL, *TGN, "seed=1", "task=node", "node_task.init_from=link")
    assert "link's dataset differs: dataset.seed (0 -> 1)" in line
    other = tmp_path / "results" / "other"  # the same run as one with checkpoint=false leaves it: no checkpoint
    shutil.copytree(tmp_path / "results" / "link", other)
    (other / "checkpoint.pt").unlink()
    line = refused(tmp_path, *SMALL, *TGN, "task=node", "node_task.init_from=other")
    assert "other kept no checkpoint.pt (it ran with checkpoint=false)" in line


def test_a_tgbn_stream_not_fetched_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("tgb.nodeproppred.dataset", reason="py-tgb is the tgb extra")
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "cache"))
    line = refused(tmp_path, "dataset=tgbn", "dataset.stream=tgbn-trade", *TGN, "task=node")
    assert "TGB stream 'tgbn-trade' is not downloaded: run `dygsched datasets fetch tgbn-trade`" in line
