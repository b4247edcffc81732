"""Metrics stage: tidy rows -> run folder -> runs table."""

from dygsched.metrics.recorder import COLUMNS, MetricRecorder
from dygsched.metrics.run_folder import RunFolder, new_run_id
from dygsched.metrics.runs_table import append_run, read_runs
from dygsched.metrics.summary import summarize

__all__ = ["COLUMNS", "MetricRecorder", "RunFolder", "append_run", "new_run_id", "read_runs", "summarize"]
