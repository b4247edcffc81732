"""Where each timestamp falls when a stream is cut into snapshots: one ``TimeCut``, three rules.

* **A calendar unit** (``dataset.snapshot=hourly|daily|weekly|monthly|yearly``): UTG's cut. UTG
  (Huang et al., LoG 2025) discretises a stream with TGX's ``discretize_edges`` (its loaders call
  ``tgx.Graph.discretize``; TGX from its April 2024 revision on, by UTG's first author), and we
  follow it exactly:

  - a unit is a fixed number of seconds (the stream's timestamps are read as seconds, as UTG's
    unix timestamps): an hour 3,600, a day 86,400, a week 604,800, a month 30 days (2,592,000),
    a year 365 days (31,536,000); no calendar months or leap years;
  - TGX truncates every timestamp to a whole second, ``t0`` is the first one, and an event goes to
    snapshot ``ceil((int(t) - t0) / L)``. So the intervals start at the first timestamp, not at an
    epoch-aligned boundary, snapshot 0 holds only the events of the first second
    ``[t0, t0 + 1)``, and snapshot ``k >= 1`` the events of ``[t0 + 1 + (k-1) L, t0 + 1 + k L)``:
    every later window is closed on the right in whole seconds. (TGX before that revision, and
    its 0.4.0 release, used ``ceil(int(t) / L)``: aligned to the epoch; for timestamps that start
    at 0 the two agree.) Written as boundaries, an event goes to the interval ``[start, end)``
    that holds it, with the same result for every timestamp of 0 or more;
  - TGX keeps only the windows that hold an event; UTG's loaders then refuse a cut with an empty
    window between two non-empty ones ("time gap": use a coarser granularity). A stream cut here
    does the same (``refuse_gaps``).

* **A number of time units** (``dataset.snapshot=3600``, the edge list's ``snapshot_duration``):
  windows ``[t0 + k L, t0 + (k+1) L)`` from the first timestamp ``t0``, whatever the unit of time.
  Unlike UTG's cut it has no one-second first window, so ``snapshot=86400`` and ``snapshot=daily``
  differ in where the windows start (by that first second).
* **Equal parts** (the edge list's ``num_snapshots``): the span from the first to the last
  timestamp in ``n`` equal windows, the last one closed.

``TimeCut.intervals`` gives each event's interval and the intervals' boundaries, refusing more than
``MAX_SNAPSHOTS`` of them before it allocates anything. Torch-free, so a setting is checked before
torch is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from dygsched.errors import ConfigError, DataError

# seconds per unit, as TGX's discretize_edges defines them (SEC_IN_HOUR ... SEC_IN_YEAR)
UNITS: dict[str, int] = {"hourly": 3_600, "daily": 86_400, "weekly": 604_800, "monthly": 2_592_000, "yearly": 31_536_000}
MAX_SNAPSHOTS = 100_000  # the data stage's and the simulator's limit
SETTING = "dataset.snapshot"


class CutRule(str, Enum):
    UNIT = "unit"  # UTG's units, fixed numbers of seconds (TGX's rule)
    LENGTH = "length"  # windows of a fixed length from the first timestamp
    PARTS = "parts"  # the span in equal parts


@dataclass(frozen=True)
class Intervals:
    """Each event's interval (``index``, int64, ``0 .. count-1``) and the ``count + 1`` boundaries:
    interval ``i`` is ``[bounds[i], bounds[i+1])``."""

    index: np.ndarray
    bounds: np.ndarray

    @property
    def count(self) -> int:
        return int(self.bounds.size - 1)


@dataclass(frozen=True)
class TimeCut:
    """How time is cut into snapshots: ``rule`` with its ``size`` (seconds or time units per window
    for ``unit`` and ``length``, the number of windows for ``parts``); ``label`` is the setting as
    written (``snapshot=weekly``, ``snapshot_duration=3600``), for messages."""

    rule: CutRule
    size: float
    label: str

    @classmethod
    def unit(cls, name: str, setting: str = "snapshot", what: str = "") -> TimeCut:
        """UTG's cut by a unit of ``UNITS``. ``setting`` names the setting and ``what`` the data in messages."""
        if name not in UNITS:
            raise DataError(f"{what}{setting}={name!r}: unknown unit (choose from {', '.join(UNITS)}, or a number of time units)")
        return cls(CutRule.UNIT, float(UNITS[name]), f"{setting}={name}")

    @classmethod
    def length(cls, size: float, setting: str = "snapshot", what: str = "") -> TimeCut:
        """Windows of ``size`` time units from the first timestamp."""
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not math.isfinite(size) or not size > 0:
            raise DataError(f"{what}{setting} must be a positive, finite number of time units, got {size!r}")
        return cls(CutRule.LENGTH, float(size), f"{setting}={size:g}")

    @classmethod
    def parts(cls, count: int, setting: str = "num_snapshots", what: str = "") -> TimeCut:
        """The span in ``count`` equal windows."""
        if isinstance(count, bool) or not isinstance(count, int) or not 2 <= count <= MAX_SNAPSHOTS:
            raise DataError(f"{what}{setting} must be in [2, {MAX_SNAPSHOTS:,}] (the last one only gives targets), got {count!r}")
        return cls(CutRule.PARTS, float(count), f"{setting}={count}")

    def _bounds(self, first: float, last: float, what: str) -> np.ndarray:
        """The boundaries of every interval from ``first`` to ``last``, counted before they are built."""
        if not math.isfinite(last - first):
            raise DataError(f"{what}: timestamps span [{first:g}, {last:g}], too wide to cut into snapshots")
        if self.rule is CutRule.PARTS:
            if last == first:
                raise DataError(f"{what}: every timestamp is {first:g}: the edges span a single snapshot")
            count = int(self.size)
            bounds = first + (last - first) * np.arange(count + 1, dtype=np.float64) / count
            bounds[-1] = np.nextafter(last, np.inf)  # the last window is closed
            return bounds
        t0 = float(math.floor(first)) if self.rule is CutRule.UNIT else first
        steps = ((math.floor(last) - t0) if self.rule is CutRule.UNIT else (last - first)) / self.size
        if not steps + 1 <= MAX_SNAPSHOTS:
            raise DataError(
                f"{what}: {self.label} cuts the timestamps into {steps + 1:,.0f} snapshots "
                f"(at most {MAX_SNAPSHOTS:,}); use a longer one"
            )
        count = 1 + (math.ceil(steps) if self.rule is CutRule.UNIT else math.floor(steps))
        if self.rule is CutRule.UNIT:  # [t0, t0 + 1), then windows closed on the right in whole seconds
            bounds = np.concatenate([[t0], t0 + 1 + self.size * np.arange(count, dtype=np.float64)])
        else:
            bounds = t0 + self.size * np.arange(count + 1, dtype=np.float64)
        if not bounds[-1] > last:  # rounding of t0 + k L: the last window must hold the last timestamp
            bounds[-1] = np.nextafter(last, np.inf)
        return bounds

    def intervals(self, times: np.ndarray, what: str, refuse_gaps: bool = False) -> Intervals:
        """Each time's interval. ``what`` names the data in messages; ``refuse_gaps``: an interval
        with no event between the first and the last is refused, as UTG's loaders refuse it."""
        times = np.asarray(times, dtype=np.float64)
        if times.size == 0:
            raise DataError(f"{what}: no events to cut into snapshots")
        first, last = float(times.min()), float(times.max())
        bounds = self._bounds(first, last, what)
        index = np.searchsorted(bounds, times, side="right") - 1
        np.clip(index, 0, bounds.size - 2, out=index)
        if refuse_gaps:
            counts = np.bincount(index, minlength=bounds.size - 1)
            empty = np.flatnonzero(counts == 0)
            if empty.size:
                k = int(empty[0])
                raise DataError(
                    f"{what}: {self.label} leaves {empty.size:,} of {counts.size:,} snapshots empty between "
                    f"events (the first: snapshot {k}, [{bounds[k]:.10g}, {bounds[k + 1]:.10g})); as UTG, a cut "
                    "has no time gaps: choose a coarser one"
                )
        return Intervals(index.astype(np.int64, copy=False), bounds)


def parse_snapshot(value: object) -> TimeCut | None:
    """``dataset.snapshot``: ``None`` (the stream as it is), a unit's name, or a positive number of
    time units (a number written as text, as a shell may pass it, is read as one)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            if text.lower() in UNITS:
                return TimeCut.unit(text.lower(), SETTING)
            raise ConfigError(
                f"dataset.snapshot={value!r}: unknown unit (choose from {', '.join(UNITS)}, or a positive number of time units)"
            ) from None
        value = number
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"dataset.snapshot must be a unit ({', '.join(UNITS)}) or a positive number, got {value!r}")
    if not math.isfinite(value) or not value > 0:
        raise ConfigError(f"dataset.snapshot={value!r}: a snapshot must last a positive, finite number of time units")
    return TimeCut.length(value, SETTING)
