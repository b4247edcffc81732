"""A target's sweep runs through the compose API and run(cfg) into one folder, and is reused whole."""

import json
from pathlib import Path

import pandas as pd
import pytest

from dygsched.errors import ConfigError
from dygsched.paper.sweep import RECORD, command_lines, is_complete, planned_runs, run_sweep, sweep_made
from dygsched.paper.target import Sweep

TINY = ("world_size=1", "dataset.num_nodes=60", "dataset.num_snapshots=10", "epochs=1", "checkpoint=false")
SWEEP = Sweep(
    folder="tiny", runs=(("sched=psg", *TINY, "seed=0,1"), ("sched=single", *TINY)), smoke=(("sched=psg", *TINY),), rounds=2
)


def recorded(run, overrides=None):
    """A stand-in for ``run``: what a finished run leaves for a sweep's bookkeeping (its folder's
    ``config.yaml`` and its ok row), without training. The resume tests below read no more, and
    test_the_sweep_runs_every_point_once_then_is_reused trains its points for real."""
    from omegaconf import OmegaConf

    from dygsched.metrics.runs_table import append_run, read_runs

    results = Path(run.results_dir)
    run_id = f"recorded-{len(read_runs(results)) if (results / 'runs.parquet').exists() else 0}-seed{run.seed}"
    (results / run_id).mkdir(parents=True)
    (results / run_id / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(run.replace(run_id=run_id).to_container())))
    append_run(results, {**run.identity(run_id, 1), "status": "ok"})
    return {"status": "ok", "run_id": run_id}


def test_planned_runs_repeat_rounds_and_append_extra_overrides():
    assert planned_runs(SWEEP, smoke=False) == [SWEEP.runs[0], SWEEP.runs[1], SWEEP.runs[0], SWEEP.runs[1]]
    assert planned_runs(SWEEP, smoke=True, extra=("model=wdgcn",)) == [(*SWEEP.smoke[0], "model=wdgcn")]
    (line,) = command_lines(SWEEP, Path("out"), smoke=True)
    assert line.startswith("dygsched run -m sched=psg world_size=1") and line.endswith("results_dir=out/tiny progress=false")


def test_a_sweep_needs_runs_and_smoke_runs():
    with pytest.raises(ValueError, match="smoke"):
        Sweep(folder="x", runs=(("sched=psg",),), smoke=())


def test_the_sweep_runs_every_point_once_then_is_reused(tmp_path):
    sweep = Sweep(folder="tiny", runs=(("sched=psg", *TINY, "seed=0,1"),), smoke=(("sched=psg", *TINY),))
    folder = run_sweep(sweep, tmp_path, smoke=False)
    runs = pd.read_parquet(folder / "runs.parquet")
    assert sorted(runs.seed) == [0, 1] and set(runs.status) == {"ok"}
    record = json.loads((folder / RECORD).read_text())
    assert record["runs"] == [list(sweep.runs[0])]
    made = sweep_made(sweep, tmp_path)  # when, at what commit and in how long the runs were made
    assert made["folder"] == "tiny" and made["started"] == record["started"] and made["wall_s"] > 0 and made["commit"]
    assert is_complete(sweep, tmp_path, smoke=False) and not is_complete(sweep, tmp_path, smoke=True)
    run_sweep(sweep, tmp_path, smoke=False)  # complete: nothing runs again
    assert len(pd.read_parquet(folder / "runs.parquet")) == 2


def test_an_incomplete_sweep_is_moved_aside_and_run_anew(tmp_path, monkeypatch):
    import dygsched.launch.app as app

    monkeypatch.setattr(app, "run", recorded)
    sweep = Sweep(folder="tiny", runs=(("sched=psg", *TINY),), smoke=(("sched=psg", *TINY),))
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "left-over").write_text("from a crashed sweep")
    run_sweep(sweep, tmp_path, smoke=False)
    assert len(pd.read_parquet(tmp_path / "tiny" / "runs.parquet")) == 1
    (aside,) = tmp_path.glob("tiny.incomplete-*")
    assert (aside / "left-over").is_file()


def test_a_bad_point_is_one_error_before_anything_runs(tmp_path):
    sweep = Sweep(folder="bad", runs=(("sched=psg,nope", *TINY),), smoke=(("sched=psg",),))
    with pytest.raises(ConfigError, match="nope"):
        run_sweep(sweep, tmp_path, smoke=False)
    assert not (tmp_path / "bad").exists()


def test_a_users_override_replaces_the_sweeps_own_for_its_key_or_is_added():
    from dygsched.paper.sweep import with_overrides

    run = ("+experiment=epoch_time", "sched=psg,esdg", "model=tgcn", "+smoke=snapshots")
    assert with_overrides(run, ("sched=psg,greedy", "dataset=twitter_tennis")) == (
        "+experiment=epoch_time",
        "sched=psg,greedy",
        "model=tgcn",
        "+smoke=snapshots",
        "dataset=twitter_tennis",
    )
    assert with_overrides(run, ("+smoke=flare",)) == ("+experiment=epoch_time", "sched=psg,esdg", "model=tgcn", "+smoke=flare")


def test_a_record_from_before_it_kept_its_making_says_nothing_of_it(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / RECORD).write_text(json.dumps({"runs": [["sched=psg"]]}))
    assert sweep_made(SWEEP, tmp_path) == {"folder": "tiny", "commit": None, "started": None, "wall_s": None}


@pytest.mark.parametrize("first_sitting_recorded", [True, False])
def test_an_interrupted_sweep_resumes_keeping_the_runs_it_finished(tmp_path, monkeypatch, first_sitting_recorded):
    """A sweep cut off after two of its three runs runs only the third when built again; the cut-off
    run's folder and row are gone, and the record keeps both sittings (a first sitting that kept no
    record leaves the sweep's seconds unknown)."""
    import dygsched.launch.app as app
    from dygsched.metrics.runs_table import append_run

    sweep = Sweep(folder="tiny", runs=(("sched=psg", *TINY, "seed=0,1,2"),), smoke=(("sched=psg", *TINY),))
    real_run, calls = recorded, []

    def cut_off_after_two(cfg, **kwargs):
        if len(calls) == 2:
            (tmp_path / "tiny" / "20990101-000000-cut-off").mkdir()
            (tmp_path / "tiny" / "20990101-000000-cut-off" / "config.yaml").write_text("seed: 2\n")
            append_run(tmp_path / "tiny", {"run_id": "20990101-000000-cut-off", "status": "failed", "seed": 2})
            raise KeyboardInterrupt
        calls.append(cfg.seed)
        return real_run(cfg, **kwargs)

    monkeypatch.setattr(app, "run", cut_off_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, tmp_path, smoke=False)
    assert not is_complete(sweep, tmp_path, smoke=False) and calls == [0, 1]
    if not first_sitting_recorded:
        (tmp_path / "tiny" / "sweep.parts.json").unlink()
    monkeypatch.setattr(app, "run", lambda cfg, **kwargs: (calls.append(cfg.seed), real_run(cfg, **kwargs))[1])
    folder = run_sweep(sweep, tmp_path, smoke=False)
    assert calls == [0, 1, 2]  # only the third point ran again
    runs = pd.read_parquet(folder / "runs.parquet")
    assert sorted(runs.seed) == [0, 1, 2] and set(runs.status) == {"ok"}
    assert not (folder / "20990101-000000-cut-off").exists() and not (folder / "sweep.parts.json").exists()
    record = json.loads((folder / RECORD).read_text())
    made = sweep_made(sweep, tmp_path)  # what a target built from it records: two sittings, the first one's seconds
    assert made["sittings"] == 2
    if first_sitting_recorded:
        assert [part["runs"] for part in record["parts"]] == [2, 1] and record["started"] == record["parts"][0]["started"]
        assert record["wall_s"] == pytest.approx(sum(part["wall_s"] for part in record["parts"]), abs=0.2)
        assert made["earlier_wall_s"] == record["parts"][0]["wall_s"] > 0
    else:
        assert record["parts"][0]["commit"] is None and record["wall_s"] is None and record["parts"][1]["runs"] == 1
        assert made["earlier_wall_s"] is None
    assert is_complete(sweep, tmp_path, smoke=False)


def test_a_finished_sweep_whose_definition_grows_runs_only_the_new_points_and_keeps_its_sittings(tmp_path, monkeypatch):
    """A sweep built in full, then given a third seed, runs that seed alone; its record keeps the first
    sitting (from the finished record, as no sweep.parts.json is left) beside the new one."""
    import dygsched.launch.app as app

    real_run, calls = recorded, []
    monkeypatch.setattr(app, "run", lambda cfg, **kwargs: (calls.append(cfg.seed), real_run(cfg, **kwargs))[1])
    two = Sweep(folder="tiny", runs=(("sched=psg", *TINY, "seed=0,1"),), smoke=(("sched=psg", *TINY),))
    run_sweep(two, tmp_path, smoke=False)
    three = Sweep(folder="tiny", runs=(("sched=psg", *TINY, "seed=0,1,2"),), smoke=two.smoke)
    folder = run_sweep(three, tmp_path, smoke=False)
    assert calls == [0, 1, 2]
    record = json.loads((folder / RECORD).read_text())
    assert [part["runs"] for part in record["parts"]] == [2, 1] and record["wall_s"] is not None
    assert is_complete(three, tmp_path, smoke=False)
