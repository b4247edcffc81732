"""User-facing errors: the CLI prints their message as one line and exits non-zero; ``closest``
suggests the names nearest a mistyped one."""

from collections.abc import Iterable


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


def closest(name: str, choices: Iterable[str], prefix: str = "") -> str:
    """``did you mean greedy?`` (``prefix``: ``sched=``) naming the choices closest to a mistyped
    ``name`` (difflib's ratio, at most three), or an empty string when none is close."""
    import difflib

    known = [str(choice) for choice in choices]
    near = difflib.get_close_matches(str(name), known, n=3, cutoff=0.6)
    if not near:  # a shortened name ("sven-com") is close to its longer form by prefix, not by ratio
        near = [choice for choice in known if choice.startswith(str(name)) or str(name).startswith(choice)][:3]
    return f"did you mean {' or '.join(prefix + choice for choice in near)}?" if near else ""
