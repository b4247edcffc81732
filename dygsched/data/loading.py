"""Build a data source from its config (a ``_target_`` class with a ``load()``) and load its data.

``dataset.snapshot`` (a unit, ``hourly`` ... ``yearly``, or a number of time units) is the data
stage's own setting, read here rather than by a source: a stream's source loads its
``EventStream`` as always, and ``load_data`` cuts it into snapshots (``stream_cut``). Any source
whose ``load()`` gives an ``EventStream`` can be cut; one that gives snapshots is refused in one line.

``for_task`` then hands a strategy the data as its kind and the run's task read it: snapshots with
link targets for ``task=link`` (``link_targets``), and, for an event strategy on a cut stream, the
cut's pairs as events (``link_targets.cut_pairs``: each snapshot's distinct pairs timed by the
snapshot, UTG's rule for event models on discrete-time data, split where the snapshot models'
groups split). One config, one cut, both kinds of model on the same training, validation and test
pairs. ``task=node`` on a stream is node property prediction on its labels (``event_labels``).

A source that refuses its file says, on the same line, which other source reads it, where one does
(``file_formats``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from dygsched.data.dataset_config import DatasetConfig
from dygsched.data.events import EventStream
from dygsched.data.kinds import DATA_KINDS, DynamicData
from dygsched.data.link_targets import SplitSettings
from dygsched.data.stream_cut import cut_stream
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.data.time_cut import parse_snapshot
from dygsched.errors import ConfigError, DataError


def load_data(dataset: DatasetConfig) -> DynamicData:
    """The configured source's data: snapshots (``TemporalGraph``) or events (``EventStream``); with
    ``dataset.snapshot`` set, the stream cut into snapshots (``TemporalGraph.cut`` names the cut)."""
    cut = parse_snapshot(dataset.snapshot)
    source = dataset.build("dataset")
    try:
        data = source.load()
    except DataError as exc:  # a file another source reads: the line names that source
        from dygsched.data.file_formats import with_reader_hint

        raise with_reader_hint(exc, source) from None
    if not isinstance(data, DATA_KINDS):
        raise ConfigError(f"dataset source {type(source).__name__} returned neither a TemporalGraph nor an EventStream")
    if cut is None:
        return data
    if not isinstance(data, EventStream):
        edge_list = getattr(source, "kind", None) == "snapshots"
        hint = " (an edge list: set dataset.kind=events to cut its rows this way)" if edge_list else ""
        raise ConfigError(
            f"{cut.label} cuts an event stream into snapshots, but dataset '{dataset.name}' gives snapshots already{hint}"
        )
    return replace(cut_stream(data, cut), cut=cut.label)


def load_graph(dataset: DatasetConfig) -> TemporalGraph:
    """The configured source's snapshots; an event stream without ``dataset.snapshot`` is refused with one line."""
    data = load_data(dataset)
    if not isinstance(data, TemporalGraph):
        raise ConfigError(
            f"dataset '{dataset.name}' gives an event stream here, not snapshots "
            "(cut it with dataset.snapshot=daily, weekly, ... or a number of time units; an edge list: dataset.kind=snapshots)"
        )
    return data


class LinkSettings(Protocol):
    @property
    def embedding_dim(self) -> int: ...


class TaskSettings(SplitSettings, Protocol):
    """What ``for_task`` reads of a run's settings (the run's ``RunConfig`` has it: ``task``,
    ``link.embedding_dim``, ``window`` and ``split``)."""

    @property
    def task(self) -> str | None: ...

    @property
    def link(self) -> LinkSettings: ...


def for_task(data: DynamicData, kind: type, settings: TaskSettings) -> DynamicData:
    """``data`` as a strategy that trains on ``kind`` reads it under the run's task (module docstring):
    snapshots with link targets for ``task=link``; a cut stream's pairs for an event strategy; a
    stream's labels for ``task=node`` (refused in one line where it has none); otherwise as loaded."""
    from dygsched.data.event_labels import for_node_task
    from dygsched.data.link_targets import cut_pairs, link_prediction_graph

    if isinstance(data, TemporalGraph) and kind is EventStream and data.cut is not None:
        if settings.task == "node":
            raise ConfigError(
                f"task=node: an event model on dataset '{data.name}' cut by {data.cut} predicts its links; "
                "node targets need a snapshot model (model=tgcn, ...)"
            )
        return cut_pairs(link_prediction_graph(data, settings.link.embedding_dim), settings)
    if isinstance(data, TemporalGraph):
        return link_prediction_graph(data, settings.link.embedding_dim) if settings.task == "link" else data
    if settings.task == "node":
        return for_node_task(data)
    return data
