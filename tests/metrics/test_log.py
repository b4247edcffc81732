"""The dygsched logger: one line per message on the standard output of the moment; quiet with progress=false."""

from __future__ import annotations

import io
import sys

from dygsched.metrics.log import configure_logging


def test_lines_follow_stdout_when_it_is_replaced(monkeypatch):
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", first)
    configure_logging(True).info("one")
    first.close()  # e.g. an earlier capture, gone
    monkeypatch.setattr(sys, "stdout", second)
    configure_logging(True).info("two")
    assert second.getvalue() == "two\n"


def test_progress_false_keeps_info_lines_quiet(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    logger = configure_logging(False)
    logger.info("epoch 1/1")
    logger.warning("a warning")
    assert out.getvalue() == "a warning\n"
