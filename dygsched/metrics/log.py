"""Progress output: the ``dygsched`` logger, on standard output, quiet with ``progress=false``."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, TextIO

LOGGER = "dygsched"

if TYPE_CHECKING:
    _StreamHandler = logging.StreamHandler[TextIO]
else:  # a StreamHandler is subscriptable at run time from Python 3.11 only
    _StreamHandler = logging.StreamHandler


class _StdoutHandler(_StreamHandler):
    """Writes to ``sys.stdout`` as it is when a line is written, not as it was when the handler was
    made: a redirect or a test's capture that replaced it (and may since be closed) is followed."""

    _dygsched = True  # marks the handler ``configure_logging`` added (it adds one only)

    @property
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
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if progress else logging.WARNING)
    logger.propagate = False
    logger.disabled = False  # a logging config with disable_existing_loggers must not silence the run
    return logger
