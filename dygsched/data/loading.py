"""Build a data source from its config (a ``_target_`` class with a ``load()``) and load its data.

``dataset.snapshot`` (a unit, ``hourly`` ... ``yearly``, or a number of time units) is the data
stage's own setting, read here rather than by a source: a stream's source loads its
``EventStream`` as always, and ``load_data`` hands a strategy the kind it trains on, the stream
itself to an event strategy (``kind=EventStream``) and the stream cut into snapshots
(``stream_cut``) to a snapshot strategy. One config, one cut, both kinds of model. Any source whose
``load()`` gives an ``EventStream`` can be cut; one that gives snapshots is refused in one line.

A source that refuses its file says, on the same line, which other source reads it, where one does
(``file_formats``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dygsched.components import instantiate_component
from dygsched.data.events import EventStream
from dygsched.data.kinds import DATA_KINDS, DynamicData
from dygsched.data.stream_cut import cut_stream
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.data.time_cut import parse_snapshot
from dygsched.errors import ConfigError, DataError

SNAPSHOT_KEY = "snapshot"


def load_data(dataset_cfg: Mapping[str, Any], kind: type | None = None) -> DynamicData:
    """The configured source's data: snapshots (``TemporalGraph``) or events (``EventStream``).

    With ``dataset.snapshot`` set, ``kind=EventStream`` gives the stream and any other ``kind``
    (``TemporalGraph``, or ``None``: a caller that takes either) its cut."""
    settings = dict(dataset_cfg)
    cut = parse_snapshot(settings.pop(SNAPSHOT_KEY, None))
    source = instantiate_component(settings, "dataset")
    try:
        data = source.load()
    except DataError as exc:  # a file another source reads: the line names that source
        from dygsched.data.file_formats import with_reader_hint

        raise with_reader_hint(exc, source) from None
    if not isinstance(data, DATA_KINDS):
        raise ConfigError(f"dataset source {type(source).__name__} returned neither a TemporalGraph nor an EventStream")
    if cut is None or kind is EventStream:
        return data
    if not isinstance(data, EventStream):
        edge_list = getattr(source, "kind", None) == "snapshots"
        hint = " (an edge list: set dataset.kind=events to cut its rows this way)" if edge_list else ""
        raise ConfigError(
            f"{cut.label} cuts an event stream into snapshots, but dataset '{settings.get('name')}' gives snapshots already{hint}"
        )
    return cut_stream(data, cut)


def load_graph(dataset_cfg: Mapping[str, Any]) -> TemporalGraph:
    """The configured source's snapshots; an event stream without ``dataset.snapshot`` is refused with one line."""
    data = load_data(dataset_cfg, kind=TemporalGraph)
    if not isinstance(data, TemporalGraph):
        raise ConfigError(
            f"dataset '{dataset_cfg.get('name')}' gives an event stream here, not snapshots "
            "(cut it with dataset.snapshot=daily, weekly, ... or a number of time units; an edge list: dataset.kind=snapshots)"
        )
    return data
