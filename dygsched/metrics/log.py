"""Progress output: the ``dygsched`` logger, on standard output, quiet with ``progress=false``."""

from __future__ import annotations

import logging
import sys

LOGGER = "dygsched"


def configure_logging(progress: bool) -> logging.Logger:
    """One handler writing bare messages to stdout; INFO with ``progress``, else warnings only."""
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "_dygsched", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._dygsched = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if progress else logging.WARNING)
    logger.propagate = False
    logger.disabled = False  # a logging config with disable_existing_loggers must not silence the run
    return logger
