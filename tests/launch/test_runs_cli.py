"""`dygsched runs`: list, filter and compare runs without pandas."""

import pytest

from dygsched.cli import main
from dygsched.metrics.runs_table import append_run


@pytest.fixture
def results(tmp_path):
    for run_id, sched, model, time in (("r1-psg", "psg", "tgcn", 2.0), ("r2-greedy", "greedy", "tgcn", 1.5), ("r3-greedy", "greedy", "wdgcn", 1.0)):
        append_run(tmp_path, {"run_id": run_id, "status": "ok", "sched": sched, "model": model, "world_size": 2,
                              "epoch_time_s": time, "eval": {"metric": "mse", "value": time / 2}})  # fmt: skip
    return tmp_path


def test_list_and_filter(results, capsys):
    assert main(["runs", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert all(r in out for r in ("r1-psg", "r2-greedy", "r3-greedy")) and "3 run(s)" in out
    assert main(["runs", "--results", str(results), "sched=greedy", "model=tgcn", "world_size=2"]) == 0
    out = capsys.readouterr().out
    assert "r2-greedy" in out and "r1-psg" not in out and "r3-greedy" not in out


def test_compare_two_runs_by_prefix(results, capsys):
    assert main(["runs", "--results", str(results), "--compare", "r1", "r2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    sched = next(line for line in lines if line.startswith("sched"))
    status = next(line for line in lines if line.startswith("status"))
    assert sched.rstrip().endswith("*") and not status.rstrip().endswith("*")


@pytest.mark.parametrize(
    "args, message",
    [(["sched"], "a filter is KEY=VALUE"), (["colour=red"], "unknown column 'colour'"), (["--compare", "r", "r1"], "matches 3 runs")],
)
def test_bad_requests_are_one_line(results, capsys, args, message):
    assert main(["runs", "--results", str(results), *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_no_runs_table_is_one_line(tmp_path, capsys):
    assert main(["runs", "--results", str(tmp_path)]) == 1
    assert "no runs table" in capsys.readouterr().err
