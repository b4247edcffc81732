"""Build a data source from its config (a ``_target_`` class with a ``load()``) and load its data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dygsched.data.events import EventStream
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError, DygschedError

DynamicData = TemporalGraph | EventStream  # what a source's load() returns


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


def load_data(dataset_cfg: Mapping[str, Any]) -> DynamicData:
    """The configured source's data: snapshots (``TemporalGraph``) or events (``EventStream``)."""
    source = instantiate_component(dataset_cfg, "dataset")
    data = source.load()
    if not isinstance(data, (TemporalGraph, EventStream)):
        raise ConfigError(f"dataset source {type(source).__name__} returned neither a TemporalGraph nor an EventStream")
    return data


def load_graph(dataset_cfg: Mapping[str, Any]) -> TemporalGraph:
    """The configured source's snapshots; an event stream is refused with one line."""
    data = load_data(dataset_cfg)
    if not isinstance(data, TemporalGraph):
        raise ConfigError(f"dataset '{dataset_cfg.get('name')}' gives an event stream here, not snapshots (set dataset.kind=snapshots)")
    return data
