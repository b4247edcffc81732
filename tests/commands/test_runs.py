"""`dygsched runs`: list, filter and compare runs without pandas."""

import pytest

from dygsched.cli import main
from dygsched.metrics.runs_table import append_run
from tests.cli_process import run_dygsched


@pytest.fixture
def results(tmp_path):
    for run_id, sched, model, time in (
        ("r1-psg", "psg", "tgcn", 2.0),
        ("r2-greedy", "greedy", "tgcn", 1.5),
        ("r3-greedy", "greedy", "wdgcn", 1.0),
    ):
        append_run(
            tmp_path,
            {
                "run_id": run_id,
                "status": "ok",
                "sched": sched,
                "model": model,
                "world_size": 2,
                "epoch_time_s": time,
                "eval": {"metric": "mse", "value": time / 2},
            },
        )
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
    [
        (["sched"], "a filter is KEY=VALUE"),
        (["colour=red"], "unknown column 'colour'"),
        (["--compare", "r", "r1"], "matches 3 runs"),
    ],
)
def test_bad_requests_are_one_line(results, capsys, args, message):
    assert main(["runs", "--results", str(results), *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_no_runs_table_is_one_line(tmp_path, capsys):
    assert main(["runs", "--results", str(tmp_path)]) == 1
    assert "no runs table" in capsys.readouterr().err


def test_a_damaged_runs_table_is_named_refused_before_training_and_listed_from_folders(tmp_path):

    from tests.conftest import TINY_SYNTHETIC

    results = tmp_path / "results"

    def cli(*args):
        return run_dygsched(*args, timeout=300, cwd=tmp_path)

    ok = cli("run", *TINY_SYNTHETIC, "epochs=1", "world_size=1", "run_id=first", f"results_dir={results}", "progress=false")
    assert ok.returncode == 0, ok.stderr
    (results / "runs.parquet").write_bytes(b"PAR1 not a table")
    refused = cli("run", *TINY_SYNTHETIC, "epochs=1", "world_size=1", "run_id=second", f"results_dir={results}", "progress=false")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and "runs.parquet cannot be read" in lines[0]
    assert not (results / "second").exists()  # refused before anything was written
    listed = cli("runs", "--results", str(results))
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert "runs.parquet cannot be read" in listed.stderr and "first" in listed.stdout


def write_metrics(results, run_id, losses):
    from dygsched.metrics.atomic import write_parquet
    from dygsched.metrics.recorder import MetricRecorder

    recorder = MetricRecorder(run_id, 0)
    for epoch, loss in enumerate(losses):
        recorder.add(epoch, "train", "loss", loss)
        recorder.add(epoch, "val", "loss", loss + 0.1)
        recorder.add(epoch, "train", "busy_s", 1.0, iteration=0)  # an iteration row: not an epoch's figure
    (results / run_id).mkdir(exist_ok=True)
    write_parquet(results / run_id / "metrics.parquet", MetricRecorder.frame(recorder.rows))


def test_plot_draws_a_metric_over_epochs_for_the_selected_runs(results, capsys):
    import pandas as pd

    from dygsched.metrics.run_plot import epoch_series

    write_metrics(results, "r1-psg", [1.0, 0.5, 0.25])
    write_metrics(results, "r2-greedy", [0.9, 0.4])
    assert main(["runs", "--results", str(results), "--plot", "loss", "--phase", "train"]) == 0
    captured = capsys.readouterr()
    png = results / "runs_loss.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "loss of 2 run(s) drawn" in captured.out
    assert "left out r3-greedy: no readable metrics.parquet" in captured.err  # a run without its folder is said, not fatal
    phase, values = epoch_series(pd.read_parquet(results / "r1-psg" / "metrics.parquet"), "loss", None)
    assert phase == "val" and values.tolist() == pytest.approx([1.1, 0.6, 0.35])  # val is preferred when there are several


def test_plot_of_a_metric_no_run_has_lists_the_recorded_ones(results, capsys):
    write_metrics(results, "r1-psg", [1.0])
    assert main(["runs", "--results", str(results), "sched=psg", "--plot", "accuracy"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no selected run has the metric 'accuracy'" in err[0] and "recorded: loss" in err[0]
    assert not (results / "runs_accuracy.png").exists()
