"""What Sven's targets share: their report section and labels, the stream and model a config composes,
and reading a training run's epoch rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from dygsched.errors import ConfigError
from dygsched.paper.target import Section

if TYPE_CHECKING:
    from dygsched.data.events import EventStream
    from dygsched.engine.run_config import RunConfig
    from dygsched.models.memory_base import MemoryModel

SECTION = Section("sven", "Sven", "Memory-based continuous-time models (TGN, JODIE, APAN) with distributed node memory.")
SVEN_DIR = "sven"
# Full size is the regime of the paper's own streams, at their published sizes (generated): one
# epoch of the stream with TGL's learning rate (Adam 1e-4). The small Enron stream (143 vertices)
# repeats nearly every vertex in every step, which hides what Sven saves, and its test AP (0.55-0.66)
# is too noisy for a 1-point comparison (docs/measurements.md, "Sven").
SWEEP_ARGS = ("epochs=1", "optim.lr=0.0001")  # every training run's length and learning rate at full size
ACCURACY_DATASET = "wikipedia_like"  # JODIE's Wikipedia: 8,227 users, 1,000 pages, 157,474 edits
TIMING_DATASET = "reddit_like"  # JODIE's REDDIT: 10,000 users, 984 subreddits, 672,447 posts
ACCURACY_SEEDS = "0,1,2"
SMOKE_EVENTS = "+smoke=events"  # conf/smoke/events.yaml: one epoch in global batches of 2,000 events
# our names -> the paper's labels
MODEL_LABELS = {"apan": "APAN", "jodie": "JODIE", "tgn": "TGN"}
STRATEGY_LABELS = {"depcomm": "DepComm", "depcache": "DepCache"}


def stream_and_model(dataset: str, model_name: str) -> tuple[RunConfig, EventStream, MemoryModel]:
    """The event stream and the memory model (its widths decide the row sizes) a config composes;
    snapshots or a model without node memory are one clear error."""
    from dygsched.data.events import EventStream
    from dygsched.data.loading import load_data
    from dygsched.engine.build import build_model
    from dygsched.launch.compose import compose_run
    from dygsched.models.memory_base import MemoryModel

    run = compose_run([f"dataset={dataset}", f"model={model_name}"])
    stream = load_data(run.dataset)
    if not isinstance(stream, EventStream):
        raise ConfigError(f"dataset '{dataset}' gives snapshots, not an event stream: Sven's targets count events")
    model = build_model(run.model, stream)
    if not isinstance(model, MemoryModel):
        raise ConfigError(f"model '{model_name}' keeps no node memory: Sven's targets need a memory model (tgn, jodie, apan)")
    return run, stream, model


def at_epoch(metrics: pd.DataFrame, phase: str, metric: str, epoch: int | None) -> float:
    """``metric`` in ``phase`` at ``epoch`` (the run's selected one); NaN where the run has none."""
    rows = metrics[(metrics.phase == phase) & (metrics.metric == metric) & (metrics.epoch == epoch)]
    return float(rows.value.iloc[0]) if epoch is not None and len(rows) else float("nan")


def epoch_time(metrics: pd.DataFrame) -> float:
    """The median training epoch time (the first epoch's warm-up included in the median only)."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == "epoch_time_s")]
    return float(rows.groupby("epoch").value.max().median()) if len(rows) else float("nan")


def epoch_share(metrics: pd.DataFrame, metric: str) -> float:
    """Seconds per epoch in ``metric``: the ranks' mean, the median over epochs."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric)]
    return float(rows.groupby("epoch").value.mean().median()) if len(rows) else float("nan")
