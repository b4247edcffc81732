"""Progress output: the ``dygsched`` logger, on standard output, quiet with ``progress=false``."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

LOGGER = "dygsched"


class _StdoutHandler(logging.StreamHandler):
    """Writes to ``sys.stdout`` as it is when a line is written, not as it was when the handler was
    made: a redirect or a test's capture that replaced it (and may since be closed) is followed."""

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stdout

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler.__init__ assigns one; sys.stdout is always used
        pass


def configure_logging(progress: bool) -> logging.Logger:
    """One handler writing bare messages to stdout; INFO with ``progress``, else warnings only."""
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "_dygsched", False) for h in logger.handlers):
        handler = _StdoutHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._dygsched = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if progress else logging.WARNING)
    logger.propagate = False
    logger.disabled = False  # a logging config with disable_existing_loggers must not silence the run
    return logger
