"""A run's folder: resolved config, plan, tidy metrics, summary; and its row in the runs table."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.metrics.atomic import remove_stale_temporaries, write_json, write_parquet, write_text
from dygsched.metrics.runs_table import append_run
from dygsched.metrics.summary import summarize


def new_run_id(*parts: str) -> str:
    return "-".join([time.strftime("%Y%m%d-%H%M%S"), *parts, secrets.token_hex(3)])


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

    def finish(self, frame: pd.DataFrame, run_info: dict[str, Any]) -> dict[str, Any]:
        """Write metrics and summary, then append the runs-table row (last, so a row means a complete folder)."""
        write_parquet(self.path / "metrics.parquet", frame)
        summary = summarize(frame, run_info)
        write_json(self.path / "summary.json", summary)
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
        the system's temporary folder, named after the run."""
        import tempfile

        return Path(tempfile.gettempdir()) / f"dygsched-{self.run_id}-failure-rank{rank}.txt"

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
        import tempfile

        found = []
        fallback = Path(tempfile.gettempdir()).glob(f"dygsched-{self.run_id}-failure-rank*.txt")
        for path in [*self.path.glob("failure-rank*.txt"), *fallback]:
            try:
                rank = int(path.stem.rsplit("failure-rank", 1)[1])
                lines = path.read_text().strip().splitlines()
                found.append((path.stat().st_mtime_ns, rank, lines[0] if lines else "no reason given"))
            except (OSError, ValueError):
                continue
        return [(rank, reason) for _, rank, reason in sorted(found)]
