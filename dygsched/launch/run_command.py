"""``dygsched run``: the Hydra application, its summary lines, and the fork server's early start.

The overrides are composed once, into the typed run (``compose_run``; with ``resume=<run folder>``,
the run folder's own configuration: ``compose_resumed``), and its files checked
(``precheck``), so an unknown name or a bad value is one clear line before anything starts; the
local launcher's fork server is then started explicitly, so the ranks' imports overlap the
launcher's own, and the run (``run(RunConfig)``) trains that same typed value. A ``-m`` sweep
composes and checks every point the same way up front, then hands the sweep to ``hydra.main`` so
Hydra's sweeper and launcher plugins (SLURM's submitit) run it as in any Hydra app: each job
receives its point's typed run, composed before (Hydra's own composition of the job is used only
for a point of a sweep form it alone expands). As each run of a sweep starts, one line says which
of how many it is and what it sets (quiet with ``progress=false``). Hydra's own flags (``--cfg``,
``--help``) go to ``hydra.main`` as they are.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig

from dygsched.engine.run_config import RunConfig
from dygsched.errors import DygschedError
from dygsched.launch.checks import precheck, wants_fork_server
from dygsched.launch.compose import CONFIG_NAME, typed_run
from dygsched.launch.resume import compose_resumed
from dygsched.launch.sweeps import SweepShape, check_sweep, sweep_run_line, sweep_shape

MULTIRUN_FLAGS = {"-m", "--multirun"}
HYDRA_FLAGS = {*MULTIRUN_FLAGS, "--help", "-h", "--cfg", "-c", "--info", "--hydra-help", "--resolve"}


SWEEP_COLUMNS = (
    "run_id",
    "status",
    "model",
    "sched",
    "world_size",
    "seed",
    "optimizer_steps_per_epoch",
    "units_per_step",
    "epoch_time_s",
    "final_train_loss",
    "eval.metric",
    "eval.value",
)


def print_summary(summary: dict[str, Any], run_dir: str) -> None:
    evaluation = summary.get("eval") or {}
    rows = [
        ("run", summary.get("run_id")),
        ("status", summary.get("status")),
        ("task", summary.get("task")),
        ("optimizer steps / epoch", _steps(summary)),
        ("epoch time (s, median)", _fmt(summary.get("epoch_time_s"))),
        ("imbalance ratio", _fmt(summary.get("imbalance_ratio"))),
        ("final train loss", _fmt(summary.get("final_train_loss"))),
        (f"test {evaluation.get('metric', 'metric')}{_at_epoch(summary)}", _fmt(evaluation.get("value"))),
        ("all-reduce bytes / epoch", (summary.get("comm_bytes_per_epoch") or {}).get("allreduce")),
        ("GPU peak allocated (MB)", _megabytes(summary.get("gpu_peak_allocated_bytes"), "not measured (no GPU)")),
        ("peak resident set (MB)", _megabytes(summary.get("peak_rss_bytes"), "not measured")),
    ]
    if summary.get("saved_for_backward_bytes") is not None:
        rows.append(("saved for backward (MB)", _megabytes(summary["saved_for_backward_bytes"], "")))
    if summary.get("switch_epoch") is not None:
        rows.append(("plan switch epoch / solve (s)", f"{summary['switch_epoch']} / {summary['plan_solve_time_s']:.4f}"))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(f"results in {run_dir}", flush=True)


def _steps(summary: dict[str, Any]) -> str:
    """``8 (1.88 units each, all ranks)``: how many optimizer steps an epoch takes, and how large."""
    steps, units = summary.get("optimizer_steps_per_epoch"), summary.get("units_per_step")
    if steps is None:
        return "not recorded"
    return f"{steps} ({units:.3g} units each, all ranks)" if units is not None else str(steps)


def _at_epoch(summary: dict[str, Any]) -> str:
    """`` (epoch 5)``: the epoch the test figure is read at, counted from 1 as the log counts."""
    epoch = summary.get("eval_epoch")
    return f" (epoch {epoch})" if epoch is not None else ""


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _megabytes(value: int | None, otherwise: str) -> str:
    return _fmt(value / 2**20) if value is not None else otherwise


@dataclass
class Invocation:
    """One ``dygsched run`` command: the typed runs composed before Hydra took over (by the point's
    overrides), and the runs that failed."""

    sweep: SweepShape | None = None  # the sweep being run, where it could be expanded
    runs: dict[tuple[str, ...], RunConfig] = field(default_factory=dict)  # each point's typed run, composed and checked
    failures: list[DygschedError] = field(default_factory=list)
    finished: list[tuple[str, str]] = field(default_factory=list)  # (results folder, run id) of each run that ended

    def job(self, cfg: DictConfig) -> None:
        """One point of a sweep, inside ``hydra.main``: its typed run, composed before Hydra took over."""
        from hydra.core.hydra_config import HydraConfig

        from dygsched.metrics.log import LOGGER, configure_logging

        hydra_cfg = HydraConfig.get()
        overrides = list(hydra_cfg.overrides.task)
        try:
            run = self.runs.get(point_key(overrides)) or typed_run(cfg)
        except DygschedError as exc:
            self.failed(exc)
            return
        if os.environ.get("SLURM_PROCID", "0") == "0":  # one line per run, not per SLURM task
            configure_logging(run.progress)
            logging.getLogger(LOGGER).info(sweep_run_line(int(hydra_cfg.job.num), overrides, self.sweep))
        self.train(run, overrides)

    def train(self, run: RunConfig, overrides: list[str]) -> None:
        """One run of the command (the only one, or one point of a sweep), and its summary lines."""
        from dygsched.launch.app import run as train
        from dygsched.launch.torchrun import SUPERVISED_ENV

        try:
            summary = train(run, overrides=overrides)
        except DygschedError as exc:
            self.failed(exc)
            return
        if summary and not os.environ.get(SUPERVISED_ENV):  # empty on ranks other than 0; the launcher prints its own
            run_dir = Path(str(summary.get("run_dir") or Path(run.results_dir) / str(summary.get("run_id"))))
            print_summary(summary, str(run_dir))
            self.finished.append((str(run_dir.parent), str(summary.get("run_id"))))

    def print_sweep_table(self) -> None:
        """After a sweep: its runs side by side, as ``dygsched runs`` shows them (each results folder once)."""
        from dygsched.metrics.runs_table import read_runs

        for results in dict.fromkeys(folder for folder, _ in self.finished):
            ids = [run_id for folder, run_id in self.finished if folder == results]
            try:
                runs = read_runs(Path(results))
            except DygschedError as exc:
                print(f"dygsched: warning: {exc}", file=sys.stderr)
                continue
            runs = runs[runs["run_id"].isin(ids)] if "run_id" in runs.columns else runs.iloc[0:0]
            if runs.empty:
                continue
            columns = [c for c in SWEEP_COLUMNS if c in runs.columns and runs[c].notna().any()]
            print(f"the sweep's {len(runs)} run(s) (dygsched runs --results {results} shows every column):")
            import pandas as pd

            with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 48):
                print(runs[columns].to_string(index=False), flush=True)

    def failed(self, exc: DygschedError) -> None:
        print(f"dygsched: error: {exc}", file=sys.stderr, flush=True)
        self.failures.append(exc)

    def exit_code(self) -> int:
        return max(getattr(failure, "exit_code", 1) for failure in self.failures) if self.failures else 0


def point_key(overrides: list[str]) -> tuple[str, ...]:
    """A sweep point's overrides, in any order: how its typed run is found again for Hydra's job."""
    return tuple(sorted(overrides))


def start_fork_server_for(runs: list[RunConfig]) -> None:
    """Start the local launcher's fork server now (in the background) where one of these checked
    runs starts CPU ranks from it, so the ranks' imports overlap this process's own."""
    if any(wants_fork_server(run) for run in runs):
        from dygsched.launch.fork_server import start_fork_server

        start_fork_server()


@contextmanager
def _command_line(argv: list[str]) -> Iterator[None]:
    """``hydra.main`` parses ``sys.argv`` (it takes no argument list): this command's, for the call."""
    saved = sys.argv
    sys.argv = ["dygsched run", *argv]
    try:
        yield
    finally:
        sys.argv = saved


def main(argv: list[str]) -> int:
    multirun = any(arg in MULTIRUN_FLAGS for arg in argv)
    sweep_args = [arg for arg in argv if arg not in MULTIRUN_FLAGS]
    invocation = Invocation(sweep=sweep_shape(sweep_args) if multirun else None)
    if not any(arg in HYDRA_FLAGS or arg.startswith("--cfg") for arg in argv):  # one run: no Hydra job to hand it to
        run = compose_resumed(argv)
        precheck(run)
        start_fork_server_for([run])
        invocation.train(run, argv)
        return invocation.exit_code()
    if multirun and not any(arg in HYDRA_FLAGS - MULTIRUN_FLAGS for arg in argv):
        points = check_sweep(sweep_args)
        if points is not None:
            invocation.runs = {point_key(point): run for point, run in points}
            start_fork_server_for(list(invocation.runs.values()))

    @hydra.main(config_path="pkg://dygsched.conf", config_name=CONFIG_NAME, version_base="1.3")
    def hydra_job(cfg: DictConfig) -> None:
        invocation.job(cfg)

    with _command_line(argv):
        hydra_job()
    if multirun and invocation.finished:
        invocation.print_sweep_table()
    return invocation.exit_code()
