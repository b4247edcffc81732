"""Build a data source from its config (a ``_target_`` class with a ``load()``) and load its data.

A source that refuses its file says, on the same line, which other source reads it, where one does
(``file_formats``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dygsched.components import instantiate_component
from dygsched.data.kinds import DATA_KINDS, DynamicData
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError, DataError


def load_data(dataset_cfg: Mapping[str, Any]) -> DynamicData:
    """The configured source's data: snapshots (``TemporalGraph``) or events (``EventStream``)."""
    source = instantiate_component(dataset_cfg, "dataset")
    try:
        data = source.load()
    except DataError as exc:  # a file another source reads: the line names that source
        from dygsched.data.file_formats import with_reader_hint

        raise with_reader_hint(exc, source) from None
    if not isinstance(data, DATA_KINDS):
        raise ConfigError(f"dataset source {type(source).__name__} returned neither a TemporalGraph nor an EventStream")
    return data


def load_graph(dataset_cfg: Mapping[str, Any]) -> TemporalGraph:
    """The configured source's snapshots; an event stream is refused with one line."""
    data = load_data(dataset_cfg)
    if not isinstance(data, TemporalGraph):
        raise ConfigError(
            f"dataset '{dataset_cfg.get('name')}' gives an event stream here, not snapshots (set dataset.kind=snapshots)"
        )
    return data


def for_task(data: DynamicData, task: str | None, embedding_dim: int) -> DynamicData:
    """``data`` as the run's task reads it: snapshots with link targets for ``task=link``
    (``dygsched.data.link_targets``), else as loaded. ``task=node`` on an event stream is refused."""
    if isinstance(data, TemporalGraph):
        if task == "link":
            from dygsched.data.link_targets import link_prediction_graph

            return link_prediction_graph(data, embedding_dim)
        return data
    if task == "node":
        raise ConfigError(
            f"task=node: dataset '{data.name}' is an event stream, whose models predict links (task=link); "
            "cut it into snapshots for node targets (dataset.snapshot)"
        )
    return data
