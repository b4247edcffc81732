"""The bar over one epoch's optimizer steps on rank 0's terminal.

It is drawn only when standard error is a terminal, so a log file or CI keeps the one line per
epoch the ``dygsched`` logger writes, and only once the epoch has run ``BAR_DELAY_S`` seconds. Once
the strategy says how many steps its epoch takes (``Epoch.expect_steps``) the bar shows done of
total, the rate and the time left; without it, the steps done and the rate.
"""

from __future__ import annotations

from types import TracebackType

BAR_DELAY_S = 2.0


class StepBar:
    """A progress bar over an epoch's optimizer steps; ``done`` counts them, drawn or not."""

    def __init__(self, description: str, delay_s: float = BAR_DELAY_S) -> None:
        from tqdm import tqdm

        self.done = 0
        self.total: int | None = None
        self._bar = tqdm(desc=description, unit="step", delay=delay_s, leave=False, disable=None)

    def expect(self, count: int, unit: str = "step") -> None:
        """The epoch takes ``count`` steps of ``unit``: from now on the bar shows the time left."""
        self.total = count
        self._bar.total = count
        self._bar.unit = unit

    def advance(self) -> None:
        self.done += 1
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> StepBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()
