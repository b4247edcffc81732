"""The progress bar's total is the number of optimizer steps an epoch really takes, for every
strategy family, run through the worker's own code path in this process (one rank)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
import torch

from dygsched.engine import worker
from dygsched.engine.distributed import DistEnv
from dygsched.engine.worker import train_in_joined_group
from dygsched.launch.compose import compose_run
from dygsched.metrics.progress import StepBar
from tests.conftest import TINY_SYNTHETIC

SMALL_STREAM = [
    "dataset=bipartite",
    "dataset.num_users=30",
    "dataset.num_items=10",
    "dataset.num_events=500",
    "model=tgn",
    "model.memory_dim=8",
    "model.time_dim=4",
    "model.neighbours=3",
]
# Each family, with settings whose step count is not one per unit of work or not the same every epoch.
RUNS = {
    "psg": [*TINY_SYNTHETIC, "sched=psg"],
    "blad": [*TINY_SYNTHETIC, "sched=blad"],
    # epoch 0 profiles on one plan, epoch 1 trains the solved one (two groups per iteration)
    "greedy_after_profiling": [
        *TINY_SYNTHETIC,
        "sched=greedy",
        "sched.timeline.profile_epochs=1",
        "sched.executor.reuse_path=diff",
    ],
    "flare": [*TINY_SYNTHETIC, "sched=flare", "sched.chunks=4"],
    "distdy": [
        *TINY_SYNTHETIC,
        "model=sage_temporal",
        "sched=distdy",
        "sched.fanouts=[3]",
        "sched.batch=32",
        "sched.batches_per_step=2",
    ],
    "distdy_online": [
        *TINY_SYNTHETIC,
        "model=sage_temporal",
        "sched=distdy",
        "sched.fanouts=[3]",
        "sched.batch=32",
        "sched.loop=online",
    ],
    "single": [*SMALL_STREAM, "sched=single", "sched.batch_size=70"],
    "sven": [*SMALL_STREAM, "sched=sven", "sched.batch_size=70", "sched.micro_batches=2", "sched.partition=interval"],
}


class RecordingBar(StepBar):
    """The worker's bar, kept after the epoch: its total and the steps it counted."""

    made: list[RecordingBar] = []

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.unit = "step"
        RecordingBar.made.append(self)

    def expect(self, count: int, unit: str = "step") -> None:
        super().expect(count, unit)
        self.unit = unit


def run_in_process(overrides: list[str], results: Path) -> None:
    run = compose_run(
        [*overrides, "epochs=2", "world_size=1", "device=cpu", "checkpoint=false", "progress=true", f"results_dir={results}"]
    )
    train_in_joined_group(run, DistEnv(0, 1, 0), torch.device("cpu"), None)


@pytest.mark.parametrize("name", list(RUNS))
def test_the_bar_total_is_the_steps_the_epoch_takes(name, tmp_path, monkeypatch):
    RecordingBar.made = []
    monkeypatch.setattr(worker, "StepBar", RecordingBar)
    run_in_process(RUNS[name], tmp_path / "results")
    assert len(RecordingBar.made) == 2  # one bar per epoch
    for bar in RecordingBar.made:
        assert bar.done > 0 and bar.total == bar.done, f"{name}: the bar expected {bar.total} steps, the epoch took {bar.done}"
        assert bar.unit != "step"  # each family names what a step trains


def test_a_strategy_that_does_not_say_shows_the_rate_only(tmp_path, monkeypatch):
    """The toy strategy of the contract tests never calls expect_steps: its bar counts without a total."""
    from tests.engine.test_strategy_contract import TEST_CONF

    RecordingBar.made = []
    monkeypatch.setattr(worker, "StepBar", RecordingBar)
    run_in_process([*TINY_SYNTHETIC, f"hydra.searchpath=[file://{TEST_CONF}]", "sched=node_shard"], tmp_path / "results")
    assert [bar.total for bar in RecordingBar.made] == [None, None]
    assert all(bar.done > 0 for bar in RecordingBar.made)


def test_progress_false_makes_no_bar(tmp_path, monkeypatch):
    RecordingBar.made = []
    monkeypatch.setattr(worker, "StepBar", RecordingBar)
    run = compose_run([*TINY_SYNTHETIC, "epochs=1", "world_size=1", "device=cpu", "checkpoint=false", f"results_dir={tmp_path}"])
    assert run.progress is False
    train_in_joined_group(run, DistEnv(0, 1, 0), torch.device("cpu"), None)
    assert RecordingBar.made == []


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class ImmediateBar(StepBar):
    """Drawn from the first step and at every step, however fast the epoch."""

    def __init__(self, description: str) -> None:
        super().__init__(description, delay_s=0.0)
        self._bar.mininterval = 0.0


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "log"])
def test_a_bar_is_drawn_on_a_terminal_only(terminal, tmp_path, monkeypatch):
    stderr = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(worker, "StepBar", ImmediateBar)
    run_in_process(RUNS["psg"], tmp_path / "results")
    drawn = stderr.getvalue()
    if terminal:
        assert "epoch 1/2" in drawn and "epoch 2/2" in drawn and "iteration/s" in drawn and "<" in drawn
    else:
        assert drawn == "", drawn
