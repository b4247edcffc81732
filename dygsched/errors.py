"""User-facing errors: the CLI prints their message as one line and exits non-zero."""


class DygschedError(Exception):
    """An error caused by the user's input or configuration, not by a bug."""


class DataError(DygschedError):
    """A data source could not be read or is not a valid dynamic graph."""


class ConfigError(DygschedError):
    """A configuration that cannot run."""


class ScheduleError(DygschedError):
    """A scheduling problem or solver request that cannot be served."""


class Terminated(DygschedError):
    """The run was stopped by a signal (SIGTERM from ``timeout``, SLURM or Kubernetes); the CLI exits
    with ``128 + signal``, as a shell reports a process the signal ended."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signal_name = signal.Signals(signum).name
        self.exit_code = 128 + int(signum)
        super().__init__(f"terminated by {self.signal_name}")
