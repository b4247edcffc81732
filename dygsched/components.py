"""Components built from config: a ``_target_`` class or function with its arguments (Hydra's
``instantiate``), for every stage that builds one (data sources, strategies, models, optimizers,
launchers). A failure is one ``ConfigError`` line that names the component."""

from __future__ import annotations

from collections.abc import Mapping
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
