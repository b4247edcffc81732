"""Nothing lost: per-epoch checkpoints, exact resume, a killed or failing rank, many machines.

The reference is one uninterrupted run; a resumed run, a run killed and resumed, and the same run
on two torchrun "nodes" must all train exactly the same losses. The model has dropout (MPNN-LSTM)
and the plan two groups per rank (greedy), so the RNG states and the plan must be restored too.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dygsched.errors import ConfigError
from dygsched.launch.app import RunFailed, run
from dygsched.launch.compose import compose_run
from dygsched.launch.local import free_port
from tests.cli_process import run_dygsched
from tests.conftest import ROOT, TINY_SYNTHETIC

EPOCHS = 30
RECOVERY = [*TINY_SYNTHETIC, "model=mpnn_lstm", "sched=greedy", "sched.timeline.profile_epochs=0", "seed=7"]


def train(results: Path, *overrides: str) -> dict:
    return run(compose_run([*RECOVERY, f"results_dir={results}", *overrides]))


def losses(run_dir: Path) -> list[tuple]:
    metrics = pd.read_parquet(run_dir / "metrics.parquet")
    rows = metrics[metrics.metric.isin(["loss", "mse"])].sort_values(["epoch", "iteration", "rank", "phase", "metric"])
    return list(rows[["epoch", "iteration", "rank", "phase", "metric", "value"]].itertuples(index=False, name=None))


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("reference")
    summary = train(results, f"epochs={EPOCHS}", "run_id=reference")
    assert summary["status"] == "ok" and summary["epochs_completed"] == EPOCHS
    return results / "reference"


@pytest.fixture(scope="module")
def reference(reference_run) -> list[tuple]:
    return losses(reference_run)


def dygsched(cwd: Path, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "dygsched", *args], cwd=cwd, env=env, text=True, **kwargs)


def resume_for_one_more_epoch(tmp_path: Path, folder: Path, summary: dict) -> None:
    """The stopped run resumes from its last checkpoint and trains one epoch more: its folder holds
    its settings, so the command names only the folder and the epochs."""
    resumed = run_dygsched("run", f"resume={folder}", f"epochs={summary['epochs_completed'] + 1}", cwd=tmp_path, timeout=240)
    assert resumed.returncode == 0, resumed.stderr


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_resume_continues_exactly(tmp_path, reference):
    results = tmp_path / "results"
    first = train(results, "epochs=3", "run_id=part")
    assert first["status"] == "ok" and first["epochs_completed"] == 3
    checkpoint_size = (results / "part" / "checkpoint.pt").stat().st_size
    with pytest.raises(ConfigError, match="completed 3 epochs already"):
        train(results, "epochs=2", f"resume={results / 'part'}")  # the summary would say 2 of 3 epochs
    summary = train(results, f"epochs={EPOCHS}", f"resume={results / 'part'}")
    assert summary["run_id"] == "part" and summary["status"] == "ok" and summary["epochs_completed"] == EPOCHS
    assert summary["epochs"] == EPOCHS
    assert losses(results / "part") == reference
    # every epoch's checkpoint cost survives the resume; the checkpoint holds no metric rows, so it does not grow
    metrics = pd.read_parquet(results / "part" / "metrics.parquet")
    for metric in ("checkpoint_s", "checkpoint_bytes"):
        assert sorted(metrics.loc[metrics.metric == metric, "epoch"]) == list(range(EPOCHS))
    assert (results / "part" / "checkpoint.pt").stat().st_size == checkpoint_size
    assert not (results / "part" / "metrics.epochs").exists()  # all of it is in metrics.parquet
    runs = pd.read_parquet(results / "runs.parquet")
    assert runs["run_id"].tolist() == ["part"] and runs["epochs_completed"].tolist() == [EPOCHS]  # one row, updated


@pytest.mark.slow  # a killed rank; resume=<folder> alone continuing exactly stays in test_resume_continues_exactly
def test_a_killed_rank_stops_the_run_and_resume_finishes_it(tmp_path, reference):
    """SIGKILL rank 1 mid-run: the run stops at once (exit 1, one line, no orphans), is marked failed
    with its completed epochs kept, and ``resume=<folder>`` ends with the uninterrupted losses."""
    results = tmp_path / "results"
    proc = dygsched(
        tmp_path,
        "run",
        *RECOVERY,
        f"epochs={EPOCHS}",
        f"results_dir={results}",
        "run_id=killed",
        "dist_timeout_s=30",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    folder = results / "killed"
    deadline = time.monotonic() + 240
    while not (folder / "checkpoint.pt").exists():  # at least one epoch done
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    ranks = json.loads((folder / "ranks.json").read_text())
    killed_at = time.monotonic()
    os.kill(ranks[1]["pid"], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    down_s = time.monotonic() - killed_at

    assert proc.returncode == 1 and down_s < 30, (proc.returncode, down_s)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "rank 1 was killed by SIGKILL" in lines[0], stderr
    assert not [r["pid"] for r in ranks if alive(r["pid"])]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "failed" and "SIGKILL" in summary["reason"]
    done = summary["epochs_completed"]
    assert 1 <= done < EPOCHS
    kept = losses(folder)
    assert kept and kept == [row for row in reference if row[0] < done]  # the completed epochs' metrics
    assert pd.read_parquet(results / "runs.parquet")["status"].tolist() == ["failed"]
    assert not list(folder.glob(".*.tmp"))

    resumed = run_dygsched("run", f"resume={folder}", cwd=tmp_path, timeout=240)  # the run folder alone
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["epochs_completed"] == EPOCHS and losses(folder) == reference
    assert pd.read_parquet(results / "runs.parquet")["status"].tolist() == ["ok"]


def test_a_worker_exception_marks_the_run_failed_with_its_reason(tmp_path):
    """Rank 1 runs out of memory in the second epoch: the run fails with that reason, epoch 1 kept."""
    results = tmp_path / "results"
    failing = ["model=tgcn", "model._target_=tests.launch.failing_model.FailingTGCN", "+model.fail_after=3"]
    with pytest.raises(RunFailed) as info:
        run(compose_run([*TINY_SYNTHETIC, *failing, "epochs=3", "run_id=oom", f"results_dir={results}"]))
    message = str(info.value)
    assert "\n" not in message and "rank 1: OutOfMemoryError: CUDA out of memory" in message
    summary = json.loads((results / "oom" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"].startswith("rank 1: OutOfMemoryError")
    assert summary["epochs_completed"] == 1
    assert "Traceback" in (results / "oom" / "failure-rank1.txt").read_text()  # the details stay in the run folder


@pytest.mark.slow  # four runs, about 45 s on 2 cores: `make test-slow`
def test_resume_restores_the_timeline(tmp_path):
    """Stopped during profiling, a run profiles on and switches on schedule; stopped after the
    switch, it keeps the solved plan and profiles no more."""
    results = tmp_path / "results"
    base = [*TINY_SYNTHETIC, f"results_dir={results}", "sched=greedy", "sched.timeline.profile_epochs=2", "run_id=timeline"]
    run(compose_run([*base, "epochs=1"]))
    folder = results / "timeline"
    assert (folder / "plan_profiling.json").exists() and not (folder / "plan.json").exists()

    summary = run(compose_run([*base, "epochs=3", "resume=true"]))  # the latest checkpoint with these settings
    assert summary["run_id"] == "timeline" and summary["switch_epoch"] == 2
    plan, profile = (folder / "plan.json"), (folder / "profile.json")
    before = plan.read_bytes(), plan.stat().st_mtime_ns, profile.stat().st_mtime_ns

    summary = run(compose_run([*base, "epochs=4", f"resume={folder}"]))
    assert summary["epochs_completed"] == 4 and summary["switch_epoch"] == 2
    assert (plan.read_bytes(), plan.stat().st_mtime_ns, profile.stat().st_mtime_ns) == before
    metrics = pd.read_parquet(folder / "metrics.parquet")
    assert (metrics.metric == "switch_epoch").sum() == 1
    groups = metrics[(metrics.metric == "units") & (metrics.phase == "train")].groupby("epoch")["value"].sum()
    assert groups.tolist() == [6.0] * 4
    per_rank = metrics[(metrics.metric == "units") & (metrics.epoch == 3)].groupby("iteration")["value"].max()
    assert per_rank.max() == 2  # epoch 4 trained the solved cross-group plan, not PSG


def test_resume_refuses_other_settings(tmp_path, reference_run):
    with pytest.raises(ConfigError, match=r"settings differ: optim.lr \(0.01 -> 0.1\)"):
        train(tmp_path, f"epochs={EPOCHS + 1}", "optim.lr=0.1", f"resume={reference_run}")
    assert json.loads((reference_run / "summary.json").read_text())["status"] == "ok"  # untouched


def test_resume_with_a_differing_override_is_refused_with_the_diff(tmp_path, reference_run):
    """Settings given beside resume=<folder> must be the run's own (a group by the file it chose,
    a key by its value); those that are not are listed in one line, and nothing is written."""
    before = files_of(reference_run.parent)
    done = run_dygsched(
        "run", f"resume={reference_run}", "model=tgcn", "optim.lr=0.1", "seed=7", f"epochs={EPOCHS + 1}", cwd=tmp_path
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "dygsched: error: cannot resume reference: its settings differ: model.name ('mpnn_lstm' -> 'tgcn'); "
        f"optim.lr (0.01 -> 0.1) (resume={reference_run} alone continues it with its own settings)"
    ]
    assert files_of(reference_run.parent) == before and not list(tmp_path.iterdir())


def test_resume_true_with_nothing_to_resume_stops_and_auto_starts_a_new_run(tmp_path):
    new_run = [*TINY_SYNTHETIC, "model=tgcn", "epochs=1", "run_id=fresh"]
    done = run_dygsched("run", *new_run, "resume=true", cwd=tmp_path)
    assert done.returncode == 1 and not list(tmp_path.iterdir())  # refused before the results folder is made
    assert done.stderr.strip().splitlines() == [
        "dygsched: error: resume=true: nothing to resume: results/fresh holds no checkpointed run; "
        "resume=auto starts a new run when there is none, resume=<run folder> names one"
    ]
    started = run_dygsched("run", *new_run, "resume=auto", "progress=true", cwd=tmp_path)  # progress: its log lines
    assert started.returncode == 0, started.stderr
    assert "resume=auto: nothing to resume for these settings; starting a new run" in started.stdout + started.stderr
    summary = json.loads((tmp_path / "results" / "fresh" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["epochs_completed"] == 1  # a new run


@pytest.mark.slow  # about 40 s on 2 cores: `make test-slow`
def test_two_torchrun_nodes_train_the_same_losses(tmp_path, reference):
    """`dygsched run launcher=torchrun launcher.nnodes=2` on this machine is one node; the command it
    prints, started again, is the other (c10d rendezvous on loopback, one rank each)."""
    results = tmp_path / "results"
    endpoint = f"127.0.0.1:{free_port()}"
    epochs = 5
    first = dygsched(
        tmp_path,
        "run",
        *RECOVERY,
        f"epochs={epochs}",
        f"results_dir={results}",
        "launcher=torchrun",
        "launcher.nnodes=2",
        f"launcher.rdzv_endpoint={endpoint}",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    command = None
    for line in first.stdout:
        if line.startswith("torchrun: ") and "torch.distributed.run" in line:
            command = shlex.split(line.removeprefix("torchrun: "))
            break
    assert command is not None, first.communicate()
    assert "--nnodes=2" in command and "--nproc-per-node=1" in command and f"--rdzv-endpoint={endpoint}" in command
    second = subprocess.Popen(
        command,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err_first = first.communicate(timeout=300)
    _, err_second = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, err_first[-2000:] + err_second[-2000:]

    (folder,) = [p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["world_size"] == 2
    ours, expected = losses(folder), [row for row in reference if row[0] < epochs]
    assert [row[:5] for row in ours] == [row[:5] for row in expected]
    assert [row[5] for row in ours] == pytest.approx([row[5] for row in expected], rel=1e-5, abs=1e-7)


def start_and_kill(
    tmp_path: Path, command: list[str], sig: int, env: dict | None = None
) -> tuple[subprocess.CompletedProcess, float, list]:
    """Start ``command`` (a run with run_id=victim), send ``sig`` to rank 1 after the first checkpoint,
    wait for the command to end; returns it, the seconds it took to end, and the ranks."""
    proc, ranks = start_victim(tmp_path, command, env)
    return signal_and_wait(proc, command, ranks, ranks[1]["pid"], sig, timeout=180)


def start_victim(tmp_path: Path, command: list[str], env: dict | None = None) -> tuple[subprocess.Popen, list]:
    """Start ``command`` (a run with run_id=victim) and wait for its first checkpoint; the process and its ranks."""
    folder = tmp_path / "results" / "victim"
    # Ctrl-C as a terminal sends it: a shell starts a background job with SIGINT ignored, and the run
    # would inherit that from a test suite started so
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 240
    while not (folder / "checkpoint.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    return proc, json.loads((folder / "ranks.json").read_text())


def signal_and_wait(
    proc: subprocess.Popen, command: list[str], ranks: list, pid: int, sig: int, timeout: float
) -> tuple[subprocess.CompletedProcess, float, list]:
    """Send ``sig`` to ``pid``, wait for ``proc`` to end; it, the seconds it took, and the ranks (any left alive are killed)."""
    start = time.monotonic()
    os.kill(pid, sig)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        for rank in ranks:  # a stopped rank is ours to clean up
            if alive(rank["pid"]):
                os.kill(rank["pid"], signal.SIGKILL)
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr), time.monotonic() - start, ranks


VICTIM = [*TINY_SYNTHETIC, "epochs=400", "run_id=victim", "results_dir=results"]


@pytest.mark.slow
def test_a_hung_rank_stops_the_run_within_the_collective_timeout(tmp_path):
    """SIGSTOP rank 1 (alive, silent): rank 0's next collective times out after dist_timeout_s."""
    timeout_s = 10
    done, down_s, _ = start_and_kill(
        tmp_path, [sys.executable, "-m", "dygsched", "run", *VICTIM, f"dist_timeout_s={timeout_s}"], signal.SIGSTOP
    )
    assert done.returncode == 1 and timeout_s <= down_s < timeout_s + 20, down_s
    assert "a collective timed out" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    summary = json.loads((tmp_path / "results" / "victim" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["epochs_completed"] >= 1


@pytest.mark.slow
def test_launcher_torchrun_reports_a_killed_rank(tmp_path):
    done, down_s, ranks = start_and_kill(
        tmp_path, [sys.executable, "-m", "dygsched", "run", *VICTIM, "launcher=torchrun", "dist_timeout_s=30"], signal.SIGKILL
    )
    assert done.returncode == 1 and down_s < 40, down_s
    assert "rank 1 was killed by SIGKILL" in done.stderr.strip().splitlines()[-1]
    assert not [r["pid"] for r in ranks if alive(r["pid"])]
    summary = json.loads((tmp_path / "results" / "victim" / "summary.json").read_text())
    assert summary["status"] == "failed" and "SIGKILL" in summary["reason"] and summary["epochs_completed"] >= 1
    assert (tmp_path / "results" / "victim" / "torchrun.log").read_text().count("Root Cause") == 1


@pytest.mark.slow
def test_under_bare_torchrun_rank_0_marks_the_run_failed(tmp_path):
    """No dygsched parent watches a hand-typed torchrun: rank 0 marks the run itself."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={free_port()}"]
    done, down_s, ranks = start_and_kill(
        tmp_path, [*torchrun, "-m", "dygsched", "run", *VICTIM, "dist_timeout_s=30"], signal.SIGKILL
    )
    assert done.returncode != 0 and down_s < 40, down_s
    assert not [r["pid"] for r in ranks if alive(r["pid"])]
    summary = json.loads((tmp_path / "results" / "victim" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"].startswith("rank 0: RuntimeError: lost the connection")
    assert summary["epochs_completed"] >= 1
    assert pd.read_parquet(tmp_path / "results" / "runs.parquet")["status"].tolist() == ["failed"]


@pytest.mark.slow
def test_sigterm_under_bare_torchrun_records_the_run_and_it_resumes(tmp_path):
    """SIGTERM to a hand-typed torchrun (what SLURM sends a job step, or Kubernetes a pod): torchrun
    sends it on; every rank stops, rank 0 records the completed epochs and a failed summary."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={free_port()}"]
    command = [*torchrun, "-m", "dygsched", "run", *VICTIM, "progress=false"]
    proc, ranks = start_victim(tmp_path, command)
    done, down_s, _ = signal_and_wait(proc, command, ranks, proc.pid, signal.SIGTERM, timeout=90)
    assert done.returncode != 0 and down_s < 60, (done.returncode, down_s, done.stderr[-2000:])
    time.sleep(0.5)
    assert not [r["pid"] for r in ranks if alive(r["pid"])]
    folder = tmp_path / "results" / "victim"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "failed" and "terminated by SIGTERM" in summary["reason"], summary["reason"]
    assert summary["epochs_completed"] >= 1 and (folder / "metrics.parquet").exists()
    assert pd.read_parquet(tmp_path / "results" / "runs.parquet")["status"].tolist() == ["failed"]
    resume_for_one_more_epoch(tmp_path, folder, summary)


@pytest.mark.slow
def test_sigterm_to_the_dygsched_launcher_stops_torchrun_and_records_the_run(tmp_path):
    command = [sys.executable, "-m", "dygsched", "run", *VICTIM, "launcher=torchrun", "progress=false"]
    proc, ranks = start_victim(tmp_path, command)
    done, down_s, _ = signal_and_wait(proc, command, ranks, proc.pid, signal.SIGTERM, timeout=90)
    assert done.returncode == 143 and down_s < 45, (done.returncode, down_s, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    time.sleep(0.5)
    assert not [r["pid"] for r in ranks if alive(r["pid"])]
    summary = json.loads((tmp_path / "results" / "victim" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"] == "terminated by SIGTERM" and summary["epochs_completed"] >= 1


def _slurm_task(overrides: list[str]) -> dict:
    return run(compose_run(overrides))


@pytest.mark.slow
def test_slurm_tasks_are_the_ranks(tmp_path, reference):
    """Each task of a two-task submitit job (submitit's local executor standing in for SLURM) is one
    rank of the run, reading its rank and the master from the job environment."""
    import cloudpickle
    import submitit

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    executor = submitit.LocalExecutor(folder=tmp_path / "submitit")
    executor.update_parameters(tasks_per_node=2, timeout_min=10)
    overrides = [
        *RECOVERY,
        "epochs=3",
        "launcher=slurm",
        "world_size=2",
        "launcher.gpus_per_node=0",
        f"results_dir={tmp_path / 'results'}",
        "run_id=slurm",
    ]
    results = executor.submit(_slurm_task, overrides).results()
    assert results[0]["status"] == "ok" and results[0]["world_size"] == 2 and results[1] == {}  # rank 0 reports
    ours, expected = losses(tmp_path / "results" / "slurm"), [row for row in reference if row[0] < 3]
    assert [row[5] for row in ours] == pytest.approx([row[5] for row in expected], rel=1e-5, abs=1e-7)


def start_and_signal_the_launcher(tmp_path: Path, sig: int) -> tuple[subprocess.CompletedProcess, float, list]:
    """Start a long 2-rank run, send ``sig`` to the launcher alone after the first checkpoint."""
    command = [sys.executable, "-m", "dygsched", "run", *VICTIM]
    proc, ranks = start_victim(tmp_path, command)
    return signal_and_wait(proc, command, ranks, proc.pid, sig, timeout=60)


@pytest.mark.parametrize(
    "sig, code, reason",
    [
        (signal.SIGTERM, 143, "terminated by SIGTERM"),
        # the same stop of the workers; what Ctrl-C alone does differently is test_ctrl_c_marks_the_run_interrupted's
        pytest.param(signal.SIGINT, 130, "interrupted", marks=pytest.mark.slow),
    ],
)
def test_a_signal_to_the_launcher_stops_the_workers_and_records_the_run(tmp_path, sig, code, reason):
    """What `timeout`, SLURM preemption and Kubernetes send (SIGTERM), or Ctrl-C to the launcher alone:
    the workers stop, the completed epochs and a failed summary are written, the runs row appended,
    no temporary file is left, and the run resumes."""
    done, down_s, ranks = start_and_signal_the_launcher(tmp_path, sig)
    assert done.returncode == code and down_s < 15, (done.returncode, down_s, done.stderr)
    assert "Traceback" not in done.stderr
    time.sleep(0.5)
    assert not [r["pid"] for r in ranks if alive(r["pid"])]
    folder = tmp_path / "results" / "victim"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"] == reason and summary["epochs_completed"] >= 1
    assert (folder / "metrics.parquet").exists() and not list(folder.glob("*.tmp*"))
    assert pd.read_parquet(tmp_path / "results" / "runs.parquet")["status"].tolist() == ["failed"]
    # its last line says how to continue it: a command to paste, here with the epochs to train
    last = done.stderr.strip().splitlines()[-1]
    assert last.endswith("; `dygsched run resume=results/victim` continues it"), last
    command = shlex.split(last.split("`")[1])
    resumed = run_dygsched(*command[1:], f"epochs={summary['epochs_completed'] + 1}", cwd=tmp_path, timeout=240)
    assert resumed.returncode == 0, resumed.stderr


def test_ctrl_c_marks_the_run_interrupted(tmp_path, monkeypatch, capsys):
    """Ctrl-C while the ranks train (the launcher's wait raises KeyboardInterrupt, and it stops the
    workers as on SIGTERM, which the test above drives with real processes): the run is marked failed,
    "interrupted", with its runs-table row, and ``dygsched`` exits 130 with one line."""
    from dygsched.cli import main
    from dygsched.launch.local import LocalLauncher

    def interrupted(self, config, data, folder, world_size, overrides):
        folder.path.mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalLauncher, "launch", interrupted)
    assert main(["run", *TINY_SYNTHETIC, "world_size=1", "run_id=victim", f"results_dir={tmp_path / 'results'}"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        f"dygsched: interrupted: run victim: it completed no epoch with a checkpoint (in {tmp_path / 'results' / 'victim'}), "
        "so there is nothing to resume"
    ]
    summary = json.loads((tmp_path / "results" / "victim" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"] == "interrupted" and summary["epochs_completed"] == 0
    assert pd.read_parquet(tmp_path / "results" / "runs.parquet")["status"].tolist() == ["failed"]
