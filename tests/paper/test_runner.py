"""Running the missing targets: progress lines, a target that writes nothing, one that writes and then fails."""

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from dygsched.paper.provenance import read_provenance
from dygsched.paper.runner import (
    BenchmarkRunFailed,
    run_in_process_of_its_own,
    run_missing,
    run_or_fail,
    run_target,
    wall_time,
)
from dygsched.paper.sweep import RECORD
from dygsched.paper.target import Needed, PaperTarget, Regime, Settings, Sweep


def writes_table(results: Path, rows: int) -> None:
    (results / "t").mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"x": range(rows)}).to_csv(results / "t" / "t.csv", index=False)


def writes_nothing(results: Path, rows: int) -> None:
    print("measured, but wrote nothing")


def writes_then_fails(results: Path, rows: int) -> None:
    writes_table(results, rows)
    raise SystemExit("a benchmark's target was not met")


def toy(name: str, build: Callable[..., None]) -> PaperTarget:
    return PaperTarget(
        name=name,
        paper="engine",
        title=name,
        reproduces="(no paper table)",
        outputs=("t/t.csv",),
        repeats="once",
        minutes=12.4,
        build=build,
        reading=lambda tables: "",
        regime=Regime(paper="", ours="3 rows"),
        settings=Settings(full={"rows": 3}, smoke={"rows": 1}),
    )


def test_progress_says_which_of_how_many_and_skips_what_is_there(tmp_path, capsys):
    ran = run_missing((toy("bench-a", writes_table), toy("bench-b", writes_table)), tmp_path, smoke=False, in_process=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "target 1 of 2: bench-a (about 12 min) ..." and re.fullmatch(
        r"target 1 of 2: bench-a: ok in \d+ s", lines[1]
    )
    assert lines[2] == "target 2 of 2: bench-b: present, not rerun"  # they write the same file
    assert lines[3] == "targets: 1 run (1 built, 0 failed), 1 present" and [r.ok for r in ran] == [True]
    run_missing((toy("bench-a", writes_table),), tmp_path, smoke=True, in_process=True, progress=False)
    assert capsys.readouterr().err == "" and len(pd.read_csv(tmp_path / "smoke" / "t" / "t.csv")) == 1


def test_a_target_that_writes_nothing_fails_with_its_provenance_kept(tmp_path, capsys):
    (record,) = run_missing((toy("bench-a", writes_nothing),), tmp_path, smoke=False, in_process=True)
    assert record.exit_code == 1 and read_provenance(tmp_path, "bench-a") == record
    log = (tmp_path / "provenance" / "bench-a.log").read_text()
    assert "measured, but wrote nothing" in log and "finished without writing t/t.csv" in log
    assert "bench-a: FAILED (exit 1" in capsys.readouterr().err


def test_a_benchmark_that_writes_its_table_then_fails_is_built_with_a_note(tmp_path, capsys):
    (record,) = run_missing((toy("bench-a", writes_then_fails),), tmp_path, smoke=False, in_process=True)
    assert record.exit_code == 1 and "after writing its outputs" in capsys.readouterr().err
    assert "a benchmark's target was not met" in (tmp_path / "provenance" / "bench-a.log").read_text()


def test_a_target_whose_optional_dependency_is_absent_is_not_built_and_the_rest_is(tmp_path, capsys):
    """``make paper`` on a fresh clone: a target that needs a library this environment lacks says which
    and the one command that installs it, builds nothing, and fails nothing; the other targets build."""
    absent = Needed("dygsched_no_such_module", "a library this machine lacks", "make bench-x")
    needy = replace(toy("bench-x", writes_nothing), needs=(absent,))
    assert not absent.present and needy.absent_needs() == (absent,)
    ran = run_missing((needy, toy("bench-y", writes_table)), tmp_path, smoke=False, in_process=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        "target 1 of 2: bench-x: not built: it needs a library this machine lacks (dygsched_no_such_module), "
        "which `make bench-x` installs"
    )
    assert [record.target for record in ran] == ["bench-y"] and ran[0].ok
    assert lines[-1] == "targets: 1 run (1 built, 0 failed), 0 present, 1 not built for want of a dependency (bench-x)"
    assert read_provenance(tmp_path, "bench-x") is None  # nothing ran, nothing recorded


def test_wall_time_in_words():
    assert (wall_time(42.4), wall_time(750.0)) == ("42 s", "12.5 min")


def test_a_run_that_fails_stops_the_benchmark_with_its_own_one_line_reason():
    assert "unknown key 'dataset.num_nodez'" in run_in_process_of_its_own(["dataset.num_nodez=3"])
    with pytest.raises(BenchmarkRunFailed, match="bench-x: the run failed: dygsched: error: unknown key"):
        run_or_fail(["dataset.num_nodez=3"], "bench-x: the run")


def test_a_target_that_reuses_runs_says_when_they_were_made_and_counts_their_minutes(tmp_path):
    sweep = Sweep(folder="runs", runs=(("sched=psg",),), smoke=(("sched=psg",),))
    reusing = replace(toy("bench-reusing", writes_table), sweep=sweep)
    (tmp_path / "runs").mkdir(parents=True)
    pd.DataFrame({"run_id": ["a"]}).to_parquet(tmp_path / "runs" / "runs.parquet")
    made = {"commit": "abc123", "started": "2026-11-26T09:00:00+00:00", "wall_s": 600.0}
    (tmp_path / "runs" / RECORD).write_text(json.dumps({"runs": [["sched=psg"]], **made}))
    record = run_target(reusing, tmp_path, smoke=False, in_process=True)
    assert record.sweep == {"folder": "runs", **made, "reused": True} and record.reused_runs
    assert record.minutes_with_runs == pytest.approx((record.wall_s + 600.0) / 60)
    (tmp_path / "runs" / RECORD).write_text(json.dumps({"runs": [["sched=psg"]]}))  # a record from before: no time kept
    record = run_target(reusing, tmp_path, smoke=False, in_process=True)
    assert record.reused_runs and record.minutes_with_runs is None
    assert toy("bench-alone", writes_table).sweep is None


def test_a_built_target_whose_sweep_changed_is_built_again_and_one_built_by_the_user_with_set_is_not(
    tmp_path, monkeypatch, capsys
):
    import dygsched.paper.build as build

    swept = []
    monkeypatch.setattr(build, "run_sweep", lambda sweep, root, smoke, extra: swept.append(extra))
    sweep = Sweep(folder="runs", runs=(("sched=psg", "seed=0,1,2"),), smoke=(("sched=psg",),))
    target = replace(toy("bench-swept", writes_table), sweep=sweep)
    writes_table(tmp_path, 3)
    (tmp_path / "runs").mkdir()
    pd.DataFrame({"run_id": ["a"]}).to_parquet(tmp_path / "runs" / "runs.parquet")
    (tmp_path / "runs" / RECORD).write_text(json.dumps({"runs": [["sched=psg", "seed=0,1,2"]]}))
    assert run_missing((target,), tmp_path, smoke=False, in_process=True) == [] and swept == []
    (tmp_path / "runs" / RECORD).write_text(json.dumps({"runs": [["sched=psg", "seed=0"]]}))  # built by an older version
    (record,) = run_missing((target,), tmp_path, smoke=False, in_process=True)
    assert record.ok and swept == [()]
    assert "its sweep's runs changed since it was built" in capsys.readouterr().err
    assert run_missing((target,), tmp_path, smoke=False, extra=("seed=5",), in_process=True) == [] and swept == [()]
