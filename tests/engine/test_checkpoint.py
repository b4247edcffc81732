"""Checkpoint pieces: RNG states, atomic files, what a resume may change, the timeline's state."""

import os
import random
import time

import numpy as np
import pytest
import torch

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.checkpoint import (
    CHECKPOINT_FILE,
    capture_rng,
    config_differences,
    find_resume,
    load_checkpoint,
    mark_failed,
    restore_rng,
    resumed_rows,
    save_checkpoint,
)
from dygsched.engine.snapshot_groups.config import TimelineConfig
from dygsched.engine.snapshot_groups.timeline import Timeline
from dygsched.engine.strategy import Artifacts
from dygsched.errors import ConfigError
from dygsched.metrics.recorder import MetricRecorder
from dygsched.metrics.run_folder import RunFolder
from dygsched.planner import ScheduleProblem, solve
from dygsched.planner.planning import PlannerConfig

CPU = torch.device("cpu")


def draws():
    return torch.rand(3).tolist(), np.random.rand(3).tolist(), [random.random() for _ in range(3)], np.random.randn(1).tolist()


def test_rng_states_round_trip_through_a_checkpoint(tmp_path):
    torch.manual_seed(1)
    np.random.seed(1)
    random.seed(1)
    np.random.randn()  # leaves numpy's cached Gaussian set
    state = capture_rng(CPU)
    expected = draws()
    save_checkpoint(tmp_path, {"rng": [state]})
    draws()  # move every generator on
    restore_rng(load_checkpoint(tmp_path)["rng"][0], CPU)
    assert draws() == expected


def test_checkpoint_is_written_atomically_and_loads_with_weights_only(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    rows = MetricRecorder("r", 0)
    rows.add(0, "train", "loss", 0.5)
    size = save_checkpoint(
        tmp_path, {"epoch": 0, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "rows": rows.rows}
    )
    assert size == (tmp_path / CHECKPOINT_FILE).stat().st_size > 0
    assert [p.name for p in tmp_path.iterdir()] == [CHECKPOINT_FILE]  # no temporary file left
    state = load_checkpoint(tmp_path)
    assert state["epoch"] == 0 and state["rows"] == rows.rows
    assert torch.equal(state["model"]["weight"], model.weight)
    fresh = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    fresh.load_state_dict(state["optimizer"])
    assert fresh.state_dict()["state"][0]["step"] == 1


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path):
    save_checkpoint(tmp_path, {"epoch": 3})

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle")

    with pytest.raises(RuntimeError):
        save_checkpoint(tmp_path, {"epoch": 4, "bad": Unpicklable()})
    assert load_checkpoint(tmp_path)["epoch"] == 3
    assert [p.name for p in tmp_path.iterdir()] == [CHECKPOINT_FILE]


def test_unreadable_checkpoints_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match="has no checkpoint.pt"):
        load_checkpoint(tmp_path)
    (tmp_path / CHECKPOINT_FILE).write_bytes(b"PK\x03\x04 half a zip")
    with pytest.raises(ConfigError, match="not a readable checkpoint") as info:
        load_checkpoint(tmp_path)
    assert "\n" not in str(info.value)
    torch.save({"epoch": 1}, tmp_path / CHECKPOINT_FILE)  # no format version: not ours
    with pytest.raises(ConfigError, match="not a dygsched checkpoint"):
        load_checkpoint(tmp_path)


def config(**changes):
    """A typed run (small synthetic TGCN) with ``changes``: a top-level setting, or ``block__setting``."""
    import dataclasses

    from tests.typed_runs import default_run

    run = default_run(
        dataset=default_run().dataset.with_settings(num_nodes=120),
        model=default_run().model.with_settings(hidden_channels=16),
        epochs=2,
    )
    for key, value in changes.items():
        block, _, setting = key.partition("__")
        if not setting:
            run = dataclasses.replace(run, **{key: value})
        elif setting == "name":
            run = dataclasses.replace(run, **{block: dataclasses.replace(getattr(run, block), name=value)})
        else:
            run = dataclasses.replace(run, **{block: getattr(run, block).with_settings(**{setting: value})})
    return run


def test_only_runtime_settings_may_change_on_resume():
    saved = config()
    assert config_differences(saved, config(epochs=9, progress=False, dist_timeout_s=5, launcher__name="torchrun")) == []
    changed = config_differences(saved, config(seed=1, model__hidden_channels=32, world_size=4))
    assert changed == ["model.hidden_channels (16 -> 32)", "seed (0 -> 1)", "world_size (2 -> 4)"]


def write_run(results, run_id, run, epoch=0):
    from omegaconf import OmegaConf

    folder = RunFolder(results, run_id)
    folder.create(OmegaConf.to_yaml(OmegaConf.create(run.to_container())))
    save_checkpoint(folder.path, {"epoch": epoch})
    return folder.path


def test_find_resume(tmp_path):
    results = tmp_path / "results"
    with pytest.raises(ConfigError, match=r"resume=true: nothing to resume: .* holds no checkpointed run.*resume=auto starts"):
        find_resume(config(results_dir=str(results), resume=True))
    assert find_resume(config(results_dir=str(results), resume="auto")) is None  # nothing yet: a new run
    older = write_run(results, "a", config())
    time.sleep(0.01)
    newer = write_run(results, "b", config())
    write_run(results, "c", config(seed=5))  # other settings: never picked
    os.utime(older / CHECKPOINT_FILE, (time.time() + 60, time.time() + 60))
    assert find_resume(config(results_dir=str(results), resume=True)) == older  # the latest checkpoint
    assert find_resume(config(results_dir=str(results), resume=True, run_id="b")) == newer
    assert find_resume(config(results_dir=str(results), resume="auto")) == older  # found: auto continues it too
    with pytest.raises(ConfigError, match=r"c ran with other settings: seed \(5 -> 0\)"):
        find_resume(config(results_dir=str(results), resume=True, run_id="c"))
    assert find_resume(config(results_dir=str(results), resume=str(newer), epochs=5)) == newer
    assert find_resume(config(results_dir=str(results), resume=str(newer / CHECKPOINT_FILE))) == newer
    assert find_resume(config(resume=False)) is None
    with pytest.raises(ConfigError, match=r"settings differ: seed \(0 -> 5\)"):
        find_resume(config(results_dir=str(results), resume=str(newer), seed=5))
    with pytest.raises(ConfigError, match="no run folder"):
        find_resume(config(resume=str(tmp_path / "nowhere")))
    (results / "empty").mkdir()
    with pytest.raises(ConfigError, match="no checkpoint.pt"):
        find_resume(config(resume=str(results / "empty")))


def test_mark_failed_keeps_the_completed_epochs(tmp_path):
    folder = RunFolder(tmp_path, "run")
    folder.path.mkdir()
    for epoch in range(3):
        rec = MetricRecorder("run", 0)
        rec.add(epoch, "train", "epoch_time_s", 1.0)
        rec.add(epoch, "train", "loss", 1.0 / (epoch + 1))
        folder.save_epoch_rows(MetricRecorder.frame(rec.rows), f"epoch-{epoch:05d}")
    save_checkpoint(folder.path, {"epoch": 1})  # the third epoch's rows were written, its checkpoint not
    (folder.path / ".metrics.parquet.123.tmp").write_text("half a table")  # left by a killed writer
    summary = mark_failed(folder, {"run_id": "run", "world_size": 1}, "rank 1 was killed by SIGKILL")
    assert summary["status"] == "failed" and summary["reason"] == "rank 1 was killed by SIGKILL"
    assert summary["epochs_completed"] == 3 and summary["final_train_loss"] == pytest.approx(1 / 3)
    assert not list(folder.path.glob("*.tmp"))
    no_checkpoint = mark_failed(RunFolder(tmp_path, "early"), {"run_id": "early"}, "boom")
    assert no_checkpoint["epochs_completed"] == 0 and no_checkpoint["status"] == "failed"


def test_a_format_2_checkpoint_still_gives_its_rows(tmp_path):
    """Run folders written before the rows moved out of the checkpoint keep resuming and failing cleanly."""
    folder = RunFolder(tmp_path, "old")
    folder.path.mkdir()
    rec = MetricRecorder("old", 0)
    rec.add(0, "train", "loss", 0.5)
    torch.save({"format": 2, "epoch": 0, "rows": rec.rows}, folder.path / CHECKPOINT_FILE)
    assert resumed_rows(folder, load_checkpoint(folder.path)) == rec.rows
    assert mark_failed(folder, {"run_id": "old"}, "boom")["final_train_loss"] == 0.5


def test_resumed_rows_stop_at_the_checkpointed_epoch(tmp_path):
    folder = RunFolder(tmp_path, "run")
    folder.path.mkdir()
    for epoch in range(3):
        rec = MetricRecorder("run", 0)
        rec.add(epoch, "train", "loss", float(epoch))
        folder.save_epoch_rows(MetricRecorder.frame(rec.rows), f"epoch-{epoch:05d}")
    rows = resumed_rows(folder, {"epoch": 1})
    assert [row[1] for row in rows] == [0, 1]
    assert sorted(p.name for p in folder.epoch_rows_dir.iterdir()) == ["epoch-00000.parquet", "epoch-00001.parquet"]


def test_a_finished_run_resumes_with_the_rows_of_its_metrics_table(tmp_path):
    folder = RunFolder(tmp_path, "done")
    folder.path.mkdir()
    rec = MetricRecorder("done", 0)
    for epoch in range(3):
        rec.add(epoch, "train", "loss", float(epoch))
    folder.finish(MetricRecorder.frame(rec.rows), {"run_id": "done"})
    assert not folder.epoch_rows_dir.exists()
    assert [row[1] for row in resumed_rows(folder, {"epoch": 2})] == [0, 1, 2]
    assert len(list(folder.epoch_rows_dir.glob("epoch-*.parquet"))) == 3  # saved again, should the resumed run stop


def test_resume_with_fewer_epochs_than_completed_is_refused(tmp_path):
    results = tmp_path / "results"
    done = write_run(results, "three", config(), epoch=2)
    with pytest.raises(ConfigError, match=r"epochs=2: it has completed 3 epochs already \(give epochs=3 or more\)"):
        find_resume(config(results_dir=str(results), resume=str(done), epochs=2))
    with pytest.raises(ConfigError, match="completed 3 epochs"):
        find_resume(config(results_dir=str(results), resume=True, epochs=1))
    assert find_resume(config(results_dir=str(results), resume=str(done), epochs=3)) == done


def timeline(tmp_path, profile_epochs, world_size=2):
    graph = SyntheticSource(num_nodes=40, num_snapshots=10, feature_dim=4).load()
    groups = sliding_groups(graph.num_snapshots, 3)
    return Timeline(
        PlannerConfig(solver="greedy", capacity=2),
        TimelineConfig(profile_epochs=profile_epochs),
        [(g.start, g.stop) for g in groups],
        [g.work(graph) for g in groups],
        world_size,
        0,
        Artifacts(RunFolder(tmp_path, "run"), True),
    )


def test_timeline_state_restores_the_plan_and_the_switch(tmp_path):
    plan = solve(ScheduleProblem((1.0, 2.0, 1.5, 0.5, 1.0, 2.0, 1.0, 1.0), 2, 2), "greedy")
    line = timeline(tmp_path, profile_epochs=2)
    during, after = line.state(0, plan), line.state(1, plan)
    assert not during["switched"] and after["switched"]
    assert line.restore(after) == plan
    assert line.profiler_for(2) is None  # past the profiling epochs: no profiling again
    assert line.restore(during) == plan and line.profiler_for(1) is not None  # the last profiling epoch still to come
    with pytest.raises(ConfigError, match="another sched.timeline.profile_epochs"):
        timeline(tmp_path, profile_epochs=5).restore(after)
    with pytest.raises(ConfigError, match="for 2 ranks, this run has 3"):
        timeline(tmp_path, profile_epochs=2, world_size=3).restore(after)


def test_a_run_folder_of_the_former_config_format_reads_back_as_the_same_typed_run():
    """Before the strategies' blocks composed into their configuration classes, ``sched`` named the
    strategy class and the planner's and timeline's classes; such a folder (resumed, or a finished run
    a sweep or the paper stage reads) reads back as the run it was."""
    from dygsched.engine.run_config import RunConfig
    from dygsched.launch.compose import compose_run

    for sched, former in (
        (
            "greedy",
            {
                "_target_": "dygsched.engine.snapshot_groups.SnapshotGroupStrategy",
                "name": "greedy",
                "planner": {**compose_run(["sched=greedy"]).sched.to_container()["planner"], "_target_": "x.PlannerConfig"},
                "timeline": {"_target_": "x.TimelineConfig", "profile_epochs": 4, "profile_pairs": False, "lr_scaling": "none"},
                "executor": compose_run(["sched=greedy"]).sched.to_container()["executor"],
            },
        ),
        ("flare", {**compose_run(["sched=flare"]).sched.to_container(), "_target_": "dygsched.engine.flare.FlareStrategy"}),
    ):
        current = compose_run([f"sched={sched}"])
        saved = {**current.to_container(), "sched": former}
        for later in ("eval", "early_stop", "task", "link"):  # settings added since: their defaults
            saved.pop(later)
        assert RunConfig.from_saved(saved) == current
