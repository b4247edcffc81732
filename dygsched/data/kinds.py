"""What the data stage hands on: snapshots (``TemporalGraph``) or events (``EventStream``).

A source's ``load()`` returns one of the two; a strategy says which one it trains on
(``Strategy.data_kind``). ``DynamicData`` is either.
"""

from __future__ import annotations

from dygsched.data.events import EventStream
from dygsched.data.temporal_graph import TemporalGraph

DATA_KINDS = (TemporalGraph, EventStream)
DynamicData = TemporalGraph | EventStream
