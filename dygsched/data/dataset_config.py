"""``DatasetConfig``: a run's ``dataset`` block, typed.

A dataset is a source (``_target_``: a class with a ``load()``, e.g. ``SyntheticSource``, whose own
fields type its settings: ``dataset.num_nodes`` is ``SyntheticSource.num_nodes``) plus what the
data stage itself reads, typed here: ``snapshot``, the cut of an event stream into snapshots
(``None``: the stream as it is; a unit's name, ``hourly`` ... ``yearly``; or a positive number of time
units), which ``load_data`` applies to whatever stream the source gives, and ``path``, the file a
file source reads (checked before a run starts where it is a catalogued download: ``ensure_readable``).
The source's other settings are checked against its class before it is built (``Part.check``).
Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from dygsched.data.time_cut import parse_snapshot
from dygsched.typed_config import Part


@dataclass(frozen=True)
class DatasetConfig(Part):
    """The source to build and its settings, its file (``path``) and the cut of its stream (``snapshot``)."""

    path: str | None = None  # a file source's file (its own argument); None for a source that reads none
    snapshot: str | int | float | None = None

    def __post_init__(self) -> None:
        parse_snapshot(self.snapshot)  # an unknown unit or a length of 0: one line, before anything starts
        super().__post_init__()

    @classmethod
    def stream_defaults(cls) -> dict[str, Any]:
        """What a stream's dataset config starts from (``dataset_config/stream`` in Hydra's config store):
        ``snapshot`` and its default, so ``dataset.snapshot=weekly`` sets it and no yaml restates it."""
        return {"snapshot": next(item.default for item in fields(cls) if item.name == "snapshot")}

    @property
    def params(self) -> dict[str, Any]:
        """What the source is built with: its ``name`` too (a source names its data by it); ``snapshot``
        is the data stage's, not the source's."""
        return {key: value for key, value in self.items() if key != "snapshot"}
