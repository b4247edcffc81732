"""How the project finds its pluggable parts, in two ways (docs/architecture.md, "Pluggable parts").

* Components built from config: a ``_target_`` class or function with its arguments (Hydra's
  ``instantiate``), for every stage that builds one (data sources, strategies, models, optimizers,
  launchers). A failure is one ``ConfigError`` line that names the component.
* Algorithms a setting names by a short word (the planner's solvers, the partitioners): a table of
  ``Named`` entries, a name and where it lives as ``module:attribute``, imported only when used, so
  listing the choices (and refusing an unknown one in one line) imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from dygsched.errors import ConfigError, DygschedError


def instantiate_component(cfg: Mapping[str, Any], what: str, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` that keeps the error to one line naming the component."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate
    from omegaconf.errors import MissingMandatoryValue

    try:
        return instantiate(dict(cfg), **kwargs)
    except MissingMandatoryValue as exc:  # a '???' the user did not fill in
        key = getattr(exc, "full_key", None) or "a setting"
        raise ConfigError(f"{what} '{cfg.get('name', cfg.get('_target_'))}' needs {what}.{key}=... (it has no default)") from None
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, DygschedError):
            raise cause from None
        message = str(cause or exc).strip().splitlines()[-1]
        raise ConfigError(f"cannot build {what} '{cfg.get('_target_')}': {message}") from None


def load_target(target: str) -> Any:
    """The attribute ``module:attribute`` names, its module imported now."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


@dataclass(frozen=True)
class Named:
    """A part a setting names by ``name``; ``target`` (``module:attribute``) is imported by ``load``."""

    name: str
    target: str

    def load(self) -> Any:
        return load_target(self.target)


def entry_point_parts(group: str) -> tuple[Named, ...]:
    """The parts other packages add through the ``group`` entry points (``name = "module:attribute"``)."""
    from importlib.metadata import entry_points

    return tuple(Named(entry.name, entry.value) for entry in entry_points(group=group))
