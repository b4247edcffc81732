"""A rank killed by a signal, as NCCL's watchdog kills one (``abort()``: SIGABRT, no Python runs):
the run is recorded failed with the signal and the phase the rank was in, under ``launcher=local``,
``launcher=torchrun`` and torchrun typed by hand (which stands for SLURM: no dygsched parent watches
the ranks). The ranks are real: a model that calls ``os.abort()`` on one rank in a chosen phase."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from dygsched.engine.distributed import DistEnv
from dygsched.engine.worker import train_rank
from dygsched.errors import ConfigError
from dygsched.launch.app import RunFailed, run
from dygsched.launch.compose import compose_run
from dygsched.launch.local import death_reason, free_port
from dygsched.launch.torchrun import failure_reason
from dygsched.metrics.run_folder import PhaseRecord, RunFolder
from tests.conftest import ROOT, TINY_SYNTHETIC

ABORTING = ["model=tgcn", "model._target_=tests.launch.failing_model.FailingTGCN", "+model.error=abort"]
IN_TRAINING = ["+model.fail_after=3"]  # rank 1 trains 3 groups per epoch: it aborts in the second epoch
IN_EVALUATION = ["+model.fail_after=0", "+model.in_training=false"]
ABORT_LINE = "was killed by SIGABRT during {phase} (an abort: NCCL's watchdog after a failed or timed-out collective"


# ---------------------------------------------------------------- the phase file, one process


def die_in(tmp_path, phase: str, how: str) -> RunFolder:
    """A process that records ``phase`` as rank 1 of a run in ``tmp_path``, then dies ``how``."""
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from dygsched.metrics.run_folder import PhaseRecord, RunFolder
        record = PhaseRecord(RunFolder(Path({str(tmp_path)!r}), "run"), 1)
        record.enter("loading the data")
        record.enter({phase!r})
        {how}
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode < 0, done.stderr
    return RunFolder(tmp_path, "run")


def test_a_signal_death_leaves_its_phase_and_stacks(tmp_path):
    folder = die_in(tmp_path, "training, epoch 2 of 5", "os.abort()")
    assert folder.phase_file(1).read_text() == "phase: training, epoch 2 of 5\n"
    assert folder.stacks_file(1).read_text().startswith("Fatal Python error: Aborted")
    assert folder.phase(1) == "training, epoch 2 of 5"
    [(_, rank, reason)] = folder.signal_deaths()
    assert rank == 1 and reason.startswith(f"rank 1 {ABORT_LINE.format(phase='training, epoch 2 of 5')}")
    assert reason.endswith(f"stacks in {folder.stacks_file(1)})")
    assert folder.first_cause() == reason
    # as the local launcher and torchrun's report see it
    assert death_reason(folder, 1, None, "SIGABRT") == reason
    log = "Root Cause (first observed failure):\n[0]:\n  rank      : 1 (local_rank: 1)\n  exitcode  : -6 (pid: 12)\n"
    assert failure_reason(folder, log, 1) == reason


def test_sigkill_leaves_the_phase_without_stacks(tmp_path):
    folder = die_in(tmp_path, "evaluation, epoch 1 of 2", "os.kill(os.getpid(), signal.SIGKILL)")
    assert folder.signal_deaths() == [] and folder.first_cause() is None  # no stacks: only the launcher saw the signal
    assert death_reason(folder, 1, None, "SIGKILL") == (
        "rank 1 was killed by SIGKILL during evaluation, epoch 1 of 2 (killed, or out of memory)"
    )


def test_an_abort_is_the_cause_before_the_lost_connections_it_causes(tmp_path):
    folder = die_in(tmp_path, "training, epoch 1 of 1", "os.abort()")
    folder.write_failure(0, "RuntimeError: lost the connection to another rank: it died\n\nTraceback ...")
    assert folder.first_cause().startswith("rank 1 was killed by SIGABRT during training, epoch 1 of 1")


def test_a_rank_that_ends_normally_removes_its_phase_file(tmp_path):
    folder = RunFolder(tmp_path, "run")
    record = PhaseRecord(folder, 0)
    record.enter("writing the results")
    assert folder.phase(0) == "writing the results"
    record.close()
    assert not folder.phase_file(0).exists() and folder.phase(0) is None and not folder.stacks_file(0).exists()


def test_a_resumed_run_sets_earlier_stacks_aside(tmp_path):
    folder = die_in(tmp_path, "training, epoch 4 of 9", "os.abort()")
    PhaseRecord(folder, 0).enter("loading the data")  # a live rank of the new attempt: kept
    folder.forget_old_failures()
    assert folder.signal_deaths() == [] and folder.phase_file(0).exists()
    assert (folder.path / "earlier-phase-rank1.txt").read_text().startswith("phase: training, epoch 4 of 9")
    assert (folder.path / "earlier-stacks-rank1.txt").read_text().startswith("Fatal Python error: Aborted")


def test_ranks_get_nccls_asynchronous_error_handling_unless_set(monkeypatch):
    cfg = compose_run(["device=tpu", "dist_timeout_s=5"])  # refused by the rank before it joins any group
    monkeypatch.delenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", raising=False)
    with pytest.raises(ConfigError, match="unknown device 'tpu'"):
        train_rank(cfg, DistEnv(0, 1, 0))
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    monkeypatch.setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3")
    with pytest.raises(ConfigError):
        train_rank(cfg, DistEnv(0, 1, 0))
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "3"


# ---------------------------------------------------------------- real ranks that abort


@pytest.mark.parametrize("when, phase", [(IN_TRAINING, "training, epoch 2 of 3"), (IN_EVALUATION, "evaluation, epoch 1 of 3")])
def test_launcher_local_records_a_rank_aborted_in_its_phase(tmp_path, when, phase):
    results = tmp_path / "results"
    with pytest.raises(RunFailed) as info:
        run(compose_run([*TINY_SYNTHETIC, *ABORTING, *when, "epochs=3", "run_id=abort", f"results_dir={results}"]))
    line = f"rank 1 {ABORT_LINE.format(phase=phase)}"
    assert "\n" not in str(info.value) and line in str(info.value)
    summary = json.loads((results / "abort" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"].startswith(line)
    assert summary["epochs_completed"] == (1 if when is IN_TRAINING else 0)
    stacks = RunFolder(results, "abort").stacks_file(1).read_text()
    assert "Fatal Python error: Aborted" in stacks and "failing_model.py" in stacks  # where it aborted


def rank_command(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)


@pytest.mark.slow  # torchrun and its ranks start: about 40 s on 2 cores
def test_launcher_torchrun_records_a_rank_aborted_in_its_phase(tmp_path):
    done = rank_command(
        tmp_path,
        sys.executable,
        "-m",
        "dygsched",
        "run",
        *TINY_SYNTHETIC,
        *ABORTING,
        *IN_TRAINING,
        "epochs=3",
        "run_id=abort",
        "results_dir=results",
        "launcher=torchrun",
    )
    line = f"rank 1 {ABORT_LINE.format(phase='training, epoch 2 of 3')}"
    assert done.returncode == 1 and line in done.stderr.strip().splitlines()[-1], done.stderr[-3000:]
    summary = json.loads((tmp_path / "results" / "abort" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"].startswith(line) and summary["epochs_completed"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("aborted, reporter", [(1, 0), (0, 1)])
def test_under_bare_torchrun_a_surviving_rank_records_the_abort(tmp_path, aborted, reporter):
    """No dygsched parent watches a hand-typed torchrun (nor SLURM's tasks): rank 0 marks the run with
    the abort; when rank 0 is the one aborted, the lowest rank alive marks it."""
    done = rank_command(
        tmp_path,
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=2",
        f"--master-port={free_port()}",
        "-m",
        "dygsched",
        "run",
        *TINY_SYNTHETIC,
        *ABORTING,
        *IN_TRAINING,
        f"+model.fail_rank={aborted}",
        "epochs=3",
        "run_id=abort",
        "results_dir=results",
    )
    assert done.returncode != 0 and f"exitcode  : -{int(signal.SIGABRT)}" in done.stderr, done.stderr[-3000:]
    folder = tmp_path / "results" / "abort"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "failed", summary
    assert summary["reason"].startswith(f"rank {aborted} {ABORT_LINE.format(phase='training, epoch 2 of 3')}"), summary["reason"]
    assert (folder / f"failure-rank{reporter}.txt").exists()  # the survivor's own reason: the lost connection
    assert pd.read_parquet(tmp_path / "results" / "runs.parquet")["status"].tolist() == ["failed"]
