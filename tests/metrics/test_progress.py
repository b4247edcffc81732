"""The epoch's step bar: done of total, rate and time left on a terminal; nothing at all elsewhere."""

from __future__ import annotations

import io
import sys
import time

from dygsched.metrics.progress import StepBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def draw(stream: io.StringIO, monkeypatch, expect: bool) -> StepBar:
    monkeypatch.setattr(sys, "stderr", stream)
    with StepBar("epoch 1/3", delay_s=0.0) as bar:
        if expect:
            bar.expect(4, "iteration")
        for _ in range(4):
            time.sleep(0.11)  # past tqdm's least interval between redraws
            bar.advance()
    return bar


def test_on_a_terminal_the_bar_shows_done_of_total_rate_and_time_left(monkeypatch):
    terminal = Terminal()
    bar = draw(terminal, monkeypatch, expect=True)
    shown = terminal.getvalue()
    assert bar.done == bar.total == 4
    assert "epoch 1/3" in shown and "4/4" in shown and "iteration/s" in shown
    assert "<" in shown  # tqdm's "[elapsed<left, rate]": the time left


def test_without_a_total_it_shows_the_steps_and_the_rate(monkeypatch):
    terminal = Terminal()
    bar = draw(terminal, monkeypatch, expect=False)
    shown = terminal.getvalue()
    assert bar.total is None and bar.done == 4
    assert "4step" in shown.replace(" ", "") and "step/s" in shown and "/4" not in shown


def test_off_a_terminal_nothing_is_drawn(monkeypatch):
    log = io.StringIO()
    bar = draw(log, monkeypatch, expect=True)
    assert bar.done == 4 and log.getvalue() == ""
