import json

import pytest

from dygsched.commands.plan import main
from dygsched.errors import ScheduleError
from tests.cli_process import run_dygsched


def test_plan_prices_a_configured_dataset(tmp_path, capsys):
    out = tmp_path / "plan.json"
    overrides = ["dataset=synthetic", "dataset.num_nodes=100", "dataset.num_snapshots=24"]
    assert main(["--dataset", *overrides, "--gpus", "2", "--algo", "greedy", "--out", str(out), "--quiet"]) == 0
    plan = json.loads(out.read_text())
    assert plan["num_gpus"] == 2 and sorted(k for it in plan["iterations"] for g in it for k in g) == list(range(15))
    assert "gap=" in capsys.readouterr().out


def test_plan_with_a_profiled_cost_model(tmp_path, capsys):
    profile = tmp_path / "cost_model.json"
    profile.write_text(json.dumps({"a1": 0.0, "a2": 0.0, "a3": 2.0}))
    assert main(["--dataset", "dataset=synthetic", "--profile", str(profile), "--gpus", "3", "--algo", "psg", "--quiet"]) == 0
    assert "predicted=10" in capsys.readouterr().out  # 15 groups of 2 s, 3 per iteration -> 5 iterations of 2 s


def test_plan_needs_exactly_one_source():
    with pytest.raises(ScheduleError, match="either"):
        main([])


def test_dataset_files_resolve_from_the_package_in_any_directory(tmp_path, monkeypatch, shipped_data):
    """``${dygsched_data:NAME}`` finds the package's copy (or the user's in DYGSCHED_DATA), not the working directory's."""
    from dygsched.launch.compose import compose_run

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DYGSCHED_DATA", raising=False)
    path = compose_run(["dataset=twitter_tennis"]).dataset.path
    assert path == str((shipped_data / "twitter_tennis_rg17.json").resolve())
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "enron_edges.csv").write_text("src,dst,t\n0,1,5\n")
    monkeypatch.setenv("DYGSCHED_DATA", str(tmp_path / "mine"))
    path = compose_run(["dataset=edgelist"]).dataset.path
    assert path == str(tmp_path / "mine" / "enron_edges.csv")


def test_a_binary_group_times_file_is_one_line(tmp_path):
    path = tmp_path / "times.json"
    path.write_bytes(b"\xff\xfe\x00binary")
    done = run_dygsched("plan", str(path), timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "is not a text file" in lines[0]


def test_a_reader_that_closes_the_pipe_gets_no_traceback():
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "dygsched", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # `dygsched --help | head -0`: the reader is gone before the first line
    _, err = process.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err
