"""Build a data source from its config (a ``_target_`` class with a ``load()``) and load the graph."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError, DygschedError


def instantiate_component(cfg: Mapping[str, Any], what: str, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` that keeps the error to one line naming the component."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(dict(cfg), **kwargs)
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, DygschedError):
            raise cause from None
        message = str(cause or exc).strip().splitlines()[-1]
        raise ConfigError(f"cannot build {what} '{cfg.get('_target_')}': {message}") from None


def load_graph(dataset_cfg: Mapping[str, Any]) -> TemporalGraph:
    source = instantiate_component(dataset_cfg, "dataset")
    graph = source.load()
    if not isinstance(graph, TemporalGraph):
        raise ConfigError(f"dataset source {type(source).__name__} did not return a TemporalGraph")
    return graph
