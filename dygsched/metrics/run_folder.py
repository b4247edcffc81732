"""A run's folder: resolved config, plan, tidy metrics, summary; and its row in the runs table."""

from __future__ import annotations

import faulthandler
import json
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.metrics.atomic import remove_stale_temporaries, write_json, write_parquet, write_text
from dygsched.metrics.recorder import COLUMNS
from dygsched.metrics.runs_table import append_run
from dygsched.metrics.summary import summarize


def new_run_id(*parts: str) -> str:
    return "-".join([time.strftime("%Y%m%d-%H%M%S"), *parts, secrets.token_hex(3)])


PHASE_PREFIX = "phase: "
# The first line faulthandler writes for each fatal signal it handles, and the signal's name.
FATAL_SIGNALS = {
    "Aborted": "SIGABRT",
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}


def killed_by(rank: int, signal_name: str, phase: str | None, stacks: str | None = None) -> str:
    """One line for a rank that a signal ended: which, in which phase, and where its stacks are."""
    during = f" during {phase}" if phase else ""
    if signal_name == "SIGKILL":
        hint = " (killed, or out of memory)"
    elif signal_name == "SIGABRT":
        hint = " (an abort: NCCL's watchdog after a failed or timed-out collective, or a native crash"
        hint += f"; stacks in {stacks})" if stacks else ")"
    else:
        hint = f" (stacks in {stacks})" if stacks else ""
    return f"rank {rank} was killed by {signal_name}{during}{hint}"


@dataclass(frozen=True)
class RunFolder:
    results_dir: Path
    run_id: str

    @property
    def path(self) -> Path:
        return Path(self.results_dir) / self.run_id

    def create(self, config_yaml: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        write_text(self.path / "config.yaml", config_yaml)

    def write_plan(self, plan: dict[str, Any], name: str = "plan.json") -> None:
        write_json(self.path / name, plan)

    @property
    def epoch_rows_dir(self) -> Path:
        """The metric rows of each completed epoch while the run trains, one file per write."""
        return self.path / "metrics.epochs"

    def save_epoch_rows(self, frame: pd.DataFrame, name: str) -> None:
        """Keep rows of completed epochs on disk (atomically, as ``<name>.parquet``, a name that
        starts ``epoch-<number>``), so that a run
        killed at any moment still has them for its failure record and for ``resume=``."""
        self.epoch_rows_dir.mkdir(exist_ok=True)
        write_parquet(self.epoch_rows_dir / f"{name}.parquet", frame)

    def epoch_rows(self, through_epoch: int | None = None) -> pd.DataFrame | None:
        """The rows saved so far (those of epochs up to ``through_epoch`` when given), or ``None``."""
        parts = []
        for path in sorted(self.epoch_rows_dir.glob("*.parquet")):
            try:
                parts.append(pd.read_parquet(path))
            except Exception:  # a file damaged by hand: the epochs it held are lost, not the run
                continue
        if not parts:
            return None
        frame = pd.concat(parts, ignore_index=True)[COLUMNS]
        if through_epoch is not None:
            frame = frame[frame["epoch"] <= through_epoch].reset_index(drop=True)
        return frame

    def resume_epoch_rows(self, through_epoch: int) -> pd.DataFrame | None:
        """The rows of epochs up to ``through_epoch`` for a resumed run, with later epochs' rows
        forgotten (it trains them again). A run that had finished keeps its rows in
        ``metrics.parquet`` only: they are saved epoch by epoch again, so that the resumed run,
        should it stop too, still has them."""
        if not any(self.epoch_rows_dir.glob("*.parquet")) and (self.path / "metrics.parquet").is_file():
            earlier = pd.read_parquet(self.path / "metrics.parquet")
            for epoch, rows in earlier[earlier["epoch"] <= through_epoch].groupby("epoch"):
                self.save_epoch_rows(rows[COLUMNS].reset_index(drop=True), f"epoch-{int(epoch):05d}")
        for path in self.epoch_rows_dir.glob("epoch-*.parquet"):
            if int(path.stem.split("-")[1]) > through_epoch:
                path.unlink(missing_ok=True)
        return self.epoch_rows(through_epoch)

    def finish(self, frame: pd.DataFrame, run_info: dict[str, Any]) -> dict[str, Any]:
        """Write metrics and summary, then append the runs-table row (last, so a row means a complete folder)."""
        write_parquet(self.path / "metrics.parquet", frame)
        summary = summarize(frame, run_info)
        write_json(self.path / "summary.json", summary)
        shutil.rmtree(self.epoch_rows_dir, ignore_errors=True)  # all of it is in metrics.parquet now
        append_run(self.results_dir, summary)
        return summary

    def fail(self, run_info: dict[str, Any], reason: str, frame: pd.DataFrame | None = None) -> dict[str, Any]:
        """Mark the run failed with ``reason``, keeping the metrics of its completed epochs (``frame``).

        Leftovers of writers killed mid-write are removed; the runs-table row says why it failed.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.path)
        if frame is not None and not frame.empty:
            write_parquet(self.path / "metrics.parquet", frame)
            summary = summarize(frame, run_info)
        else:
            summary = {**run_info, "epochs_completed": 0}
        summary.update(status="failed", reason=reason)
        write_json(self.path / "summary.json", summary)
        for rank, _ in self.failures():  # the reasons that had to be left outside the folder are recorded now
            self.fallback_failure_file(rank).unlink(missing_ok=True)
        append_run(self.results_dir, summary)
        return summary

    def read_summary(self) -> dict[str, Any]:
        return json.loads((self.path / "summary.json").read_text())

    def failure_file(self, rank: int) -> Path:
        return self.path / f"failure-rank{rank}.txt"

    def fallback_failure_file(self, rank: int) -> Path:
        """Where a rank leaves its reason when the run folder cannot be written (read-only, full):
        the system's temporary folder, named after the run and its folder."""
        return self._fallback_dir() / f"{self._fallback_prefix()}-failure-rank{rank}.txt"

    def _fallback_dir(self) -> Path:
        import tempfile

        return Path(tempfile.gettempdir())

    def _fallback_prefix(self) -> str:
        import hashlib

        where = hashlib.sha1(str(self.path.resolve()).encode()).hexdigest()[
            :10
        ]  # another folder's run of the same id is not ours
        return f"dygsched-{self.run_id}-{where}"

    def forget_old_failures(self) -> None:
        """Set aside the reasons an earlier attempt of this run left, so that a resumed run reports
        only its own: in the folder they are kept as ``earlier-failure-rank<r>.txt`` (their
        tracebacks stay readable), as are phase files holding the stacks of a rank a signal killed;
        those left outside it are removed."""
        for path in self.path.glob("failure-rank*.txt"):
            path.replace(path.with_name(f"earlier-{path.name}"))
        for _, rank, _ in self.signal_deaths():
            self.stacks_file(rank).replace(self.path / f"earlier-stacks-rank{rank}.txt")
            phase = self.phase_file(rank)
            if phase.exists():
                phase.replace(phase.with_name(f"earlier-{phase.name}"))
        for path in self._fallback_dir().glob(f"{self._fallback_prefix()}-failure-rank*.txt"):
            path.unlink(missing_ok=True)

    def write_failure(self, rank: int, text: str) -> None:
        """A rank's reason for failing (first line: the reason; then details such as a traceback),
        in the run folder, else beside the system's temporary files; never raises."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            write_text(self.failure_file(rank), text)
        except OSError:
            try:
                self.fallback_failure_file(rank).write_text(text)
            except OSError:
                pass

    def failures(self) -> list[tuple[int, str]]:
        """``(rank, first line)`` of every failure file, earliest written first (the cause before its echoes)."""
        return [(rank, reason) for _, rank, reason in self._failure_entries()]

    def _failure_entries(self) -> list[tuple[int, int, str]]:
        found = []
        fallback = self._fallback_dir().glob(f"{self._fallback_prefix()}-failure-rank*.txt")
        for path in [*self.path.glob("failure-rank*.txt"), *fallback]:
            try:
                rank = int(path.stem.rsplit("failure-rank", 1)[1])
                lines = path.read_text().strip().splitlines()
                found.append((path.stat().st_mtime_ns, rank, lines[0] if lines else "no reason given"))
            except (OSError, ValueError):
                continue
        return sorted(found)

    def phase_file(self, rank: int) -> Path:
        """What ``rank`` is doing (``PhaseRecord``)."""
        return self.path / f"phase-rank{rank}.txt"

    def stacks_file(self, rank: int) -> Path:
        """Where faulthandler writes ``rank``'s stacks if a fatal signal ends it: beside the system's
        temporary files, since a file held open for writing in the run folder for the whole run would
        keep its disk from being remounted read-only (a failure the run must report in one line)."""
        return self._fallback_dir() / f"{self._fallback_prefix()}-stacks-rank{rank}.txt"

    def phase(self, rank: int) -> str | None:
        """The phase ``rank`` last entered, as its phase file says (``None`` when it has none)."""
        try:
            first = self.phase_file(rank).read_text(errors="replace").split("\n", 1)[0]
        except OSError:
            return None
        return first.removeprefix(PHASE_PREFIX).strip() if first.startswith(PHASE_PREFIX) else None

    def _fatal_signal(self, path: Path) -> str | None:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("Fatal Python error: "):
                return FATAL_SIGNALS.get(line.removeprefix("Fatal Python error: ").strip(), "a fatal signal")
        return None

    def signal_deaths(self) -> list[tuple[int, int, str]]:
        """``(time written, rank, reason)`` of every rank of this machine whose stacks faulthandler
        wrote as a fatal signal (SIGABRT, SIGSEGV, ...) ended it, earliest first."""
        found = []
        for path in self._fallback_dir().glob(f"{self._fallback_prefix()}-stacks-rank*.txt"):
            signal_name = self._fatal_signal(path)
            if signal_name is None:
                continue
            try:
                rank, written = int(path.stem.rsplit("-stacks-rank", 1)[1]), path.stat().st_mtime_ns
            except (OSError, ValueError):
                continue
            found.append((written, rank, killed_by(rank, signal_name, self.phase(rank), str(path))))
        return sorted(found)

    def killed_by(self, rank: int, signal_name: str) -> str:
        """One line for ``rank``, which ``signal_name`` ended (as its launcher saw): the phase it
        was in, and the file holding its stacks when faulthandler could write them."""
        dumped = self._fatal_signal(self.stacks_file(rank)) is not None
        return killed_by(rank, signal_name, self.phase(rank), str(self.stacks_file(rank)) if dumped else None)

    def first_cause(self) -> str | None:
        """The earliest cause any rank left: its failure file's reason (``rank R: ...``), or the
        fatal signal that ended it (``rank R was killed by SIGABRT during ...``); ``None`` if none did."""
        causes = [(written, f"rank {rank}: {reason}") for written, rank, reason in self._failure_entries()]
        causes += [(written, reason) for written, _, reason in self.signal_deaths()]
        return min(causes)[1] if causes else None


class PhaseRecord:
    """One rank's current phase, kept in ``phase-rank<r>.txt`` for whoever reports its death.

    A rank that dies of a signal runs no Python: NCCL's watchdog calls ``abort()`` on a failed or
    timed-out collective. So the phase file holds the phase, rewritten (and closed) at each change,
    and ``faulthandler`` (which runs at C level on SIGABRT, SIGSEGV, SIGBUS, SIGFPE and SIGILL)
    writes every thread's stack into the rank's stacks file (``RunFolder.stacks_file``, outside
    the run folder) as the process dies. A rank that ends normally, or with an exception it
    reports itself, removes both.
    """

    def __init__(self, folder: RunFolder, rank: int) -> None:
        self.path = folder.phase_file(rank)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.stacks_path = folder.stacks_file(rank)
        self._stacks = open(self.stacks_path, "w")  # noqa: SIM115 - faulthandler writes to it until close()
        self._was_enabled = faulthandler.is_enabled()  # e.g. PYTHONFAULTHANDLER: to stderr again after close()
        faulthandler.enable(file=self._stacks, all_threads=True)

    def enter(self, phase: str) -> None:
        self.path.write_text(f"{PHASE_PREFIX}{phase}\n")

    def close(self) -> None:
        """Stop recording and remove the files (the rank did not die of a signal)."""
        faulthandler.disable()
        if self._was_enabled:
            try:
                faulthandler.enable()
            except (OSError, ValueError):  # sys.stderr replaced by one without a file (a notebook's, a test's)
                pass
        self._stacks.close()
        self.stacks_path.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)
