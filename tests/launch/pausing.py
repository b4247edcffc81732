"""A data source and a model that stop, on purpose, at one moment of a run, so that a test can kill
the launcher right there: while the launcher loads the data, while rank 0 evaluates, and while
rank 0 writes a checkpoint. Each writes ``pause_file`` when it gets there, then sleeps (named by
``dataset._target_`` / ``model._target_`` in the tests)."""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass
from pathlib import Path

import torch.distributed as dist

from dygsched.data.synthetic import SyntheticSource
from dygsched.models.tgcn import TGCN

PAUSE_S = 600.0  # longer than any test waits: the pause ends with the process


def pause_here(pause_file: str, moment: str) -> None:
    Path(pause_file).write_text(moment)
    time.sleep(PAUSE_S)


@dataclass(frozen=True)
class PausingSource(SyntheticSource):
    """The synthetic source, pausing in the launcher's ``load``."""

    pause_file: str = ""

    def load(self):
        pause_here(self.pause_file, "loading data")
        return super().load()


class PauseWhenSaved:
    """Pickled (by ``torch.save``, mid-write) as an empty OrderedDict, which ``weights_only`` loads;
    the ``at``-th time this process pickles one, it pauses first."""

    pickled = 0

    def __init__(self, pause_file: str, at: int) -> None:
        self.pause_file, self.at = pause_file, at

    def __reduce__(self):
        PauseWhenSaved.pickled += 1
        if PauseWhenSaved.pickled == self.at:
            pause_here(self.pause_file, "writing a checkpoint")
        return collections.OrderedDict, ()


class PausingTGCN(TGCN):
    """T-GCN whose rank 0 pauses in its first evaluation (``pause_in="evaluation"``), or in the
    ``checkpoint``-th checkpoint write (``pause_in="checkpoint"``)."""

    def __init__(self, *args, pause_file: str, pause_in: str, checkpoint: int = 2, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if pause_in not in {"evaluation", "checkpoint"}:
            raise ValueError(f"pause_in must be evaluation or checkpoint, got {pause_in!r}")
        self.pause_file, self.pause_in, self.checkpoint = pause_file, pause_in, checkpoint

    def forward(self, snapshots, *args, **kwargs):
        if self.pause_in == "evaluation" and not self.training and _rank() == 0:
            pause_here(self.pause_file, "evaluating")
        return super().forward(snapshots, *args, **kwargs)

    def get_extra_state(self):
        if self.pause_in == "checkpoint" and _rank() == 0:
            return PauseWhenSaved(self.pause_file, self.checkpoint)
        return collections.OrderedDict()

    def set_extra_state(self, state) -> None:
        pass


def _rank() -> int | None:
    """This rank's number; None outside a rank (the launcher builds the model once to check it)."""
    return dist.get_rank() if dist.is_initialized() else None


class SlowWhenSaved:
    """Pickled as an empty OrderedDict, after ``seconds`` of sleep: a checkpoint slow to write."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __reduce__(self):
        time.sleep(self.seconds)
        return collections.OrderedDict, ()


class SlowSavingTGCN(TGCN):
    """T-GCN whose rank 0 takes ``save_s`` seconds longer to write each checkpoint."""

    def __init__(self, *args, save_s: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.save_s = save_s

    def get_extra_state(self):
        return SlowWhenSaved(self.save_s) if _rank() == 0 else collections.OrderedDict()

    def set_extra_state(self, state) -> None:
        pass
