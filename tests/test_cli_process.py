"""The suite's fast way to run the CLI gives what a plain ``python -m dygsched`` subprocess gives."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import cli_process
from tests.cli_process import run_dygsched


@pytest.mark.parametrize(
    "args", [["--help"], ["nosuchcommand"], ["run", "dataset=nope"], ["runs", "--results", "missing-folder"]]
)
def test_a_forked_run_answers_as_a_subprocess_does(tmp_path, args):
    forked = run_dygsched(*args, cwd=tmp_path, timeout=120)
    plain = subprocess.run([sys.executable, "-m", "dygsched", *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_forked_run_reads_relative_paths_from_where_it_was_started(tmp_path):
    (tmp_path / "times.json").write_text("[1.0, 2.0, 3.0, 4.0]")
    done = run_dygsched("plan", "times.json", "--gpus", "2", cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and "groups=4 gpus=2" in done.stdout, done.stderr


def test_a_run_past_its_time_limit_is_ended(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        run_dygsched("run", "epochs=100000", "world_size=1", "progress=false", f"results_dir={tmp_path}", cwd=tmp_path, timeout=3)


def test_the_suites_runs_are_forked_not_started_afresh(tmp_path, monkeypatch):
    """Inside pytest (which rewrites PYTEST_CURRENT_TEST for every test), and after an in-process run
    set the rendezvous variables, a run is still served by the zygote; a run whose environment an
    import may read differently is not."""
    before = cli_process.forked_runs
    assert run_dygsched("--help", cwd=tmp_path).returncode == 0
    monkeypatch.setenv("MASTER_PORT", "29999")
    assert run_dygsched("--help", cwd=tmp_path).returncode == 0
    assert cli_process.forked_runs == before + 2
    assert run_dygsched("--help", cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "7"}).returncode == 0
    assert cli_process.forked_runs == before + 2
