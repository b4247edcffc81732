"""User-facing errors: the CLI prints their message as one line and exits non-zero."""


class DygschedError(Exception):
    """An error caused by the user's input or configuration, not by a bug."""


class DataError(DygschedError):
    """A data source could not be read or is not a valid dynamic graph."""


class ConfigError(DygschedError):
    """A configuration that cannot run."""


class ScheduleError(DygschedError):
    """A scheduling problem or solver request that cannot be served."""
