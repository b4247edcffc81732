"""A run's folder: resolved config, plan, tidy metrics, summary; and its row in the runs table."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.metrics.atomic import write_json, write_parquet, write_text
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

    def fail(self, run_info: dict[str, Any], reason: str) -> dict[str, Any]:
        """Mark the run failed, keeping whatever it wrote before; its runs-table row says why."""
        self.path.mkdir(parents=True, exist_ok=True)
        summary = {**run_info, "status": "failed", "reason": reason}
        write_json(self.path / "summary.json", summary)
        append_run(self.results_dir, summary)
        return summary

    def read_summary(self) -> dict[str, Any]:
        return json.loads((self.path / "summary.json").read_text())
