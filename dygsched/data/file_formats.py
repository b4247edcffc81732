"""Which of the project's sources reads a file: named in the error when another source refuses it.

``dygsched run dataset=events dataset.path=wikipedia.csv`` fails, rightly, on columns the edge list
does not have; but the file is JODIE's CSV, which ``dataset=stream`` reads. :func:`recognise`
looks at a file's structure only (a text file's first line, a JSON file's top-level keys, the
class names a ``torch.save`` file's pickle refers to, never its tensors) and says which format it
is and which ``dataset=`` reads it; :func:`with_reader_hint` adds that to a source's refusal, on
the same line, when the refusing source is not one that reads the format.

Formats recognised: JODIE's CSV, DyGLib's ``ml_<name>.csv``, TGL's ``edges.csv`` (or its folder),
a headerless ``src dst t`` list (SNAP's) (all ``dataset=stream``); a ``src,dst,t`` edge list with
its header (``dataset=edgelist`` or ``dataset=events``, and ``dataset=stream``); PyG's
``TemporalData`` (``dataset=stream``) and snapshots saved with ``torch.save``
(``dataset=snapshots``); the JSON files of PyTorch Geometric Temporal's loaders
(``dataset=twitter_tennis``, ``england_covid``, ``chickenpox``, ``pedalme``, ``montevideo_bus``).
"""

from __future__ import annotations

import json
import pickletools
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dygsched.data.edgelist import EdgeListSource
from dygsched.data.pgt import EnglandCovidSource, LaggedSeriesSource, TwitterTennisSource
from dygsched.data.snapshot_formats import ZIP_MAGIC, SnapshotFileSource
from dygsched.data.stream_formats import DYGLIB_COLUMNS, JODIE_HEADER, TGL_COLUMNS, StreamFileSource
from dygsched.errors import DataError

MAX_JSON_BYTES = 256 * 2**20  # a larger JSON file is not parsed only to name its format
SIGNAL_CLASSES = ("DynamicGraphTemporalSignal", "StaticGraphTemporalSignal", "DynamicGraphStaticSignal")


@dataclass(frozen=True)
class FileFormat:
    """A format one or more sources read: what it is, the ``dataset=`` to use, which sources read it."""

    description: str  # "JODIE's CSV"
    choice: str  # "dataset=stream"
    reads: Callable[[Any], bool]  # whether a (built) source reads this format as configured
    stream_format: str | None = None  # dataset.format for dataset=stream, where it is one of its formats


def _stream(stream_format: str) -> Callable[[Any], bool]:
    return lambda source: isinstance(source, StreamFileSource) and source.format in ("auto", stream_format)


def _series(layout: str) -> Callable[[Any], bool]:
    return lambda source: isinstance(source, LaggedSeriesSource) and source.layout == layout


JODIE = FileFormat("JODIE's CSV", "dataset=stream", _stream("jodie"), "jodie")
DYGLIB = FileFormat("DyGLib's ml_<name>.csv", "dataset=stream", _stream("dyglib"), "dyglib")
TGL = FileFormat("TGL's edges.csv", "dataset=stream", _stream("tgl"), "tgl")
HEADERLESS = FileFormat("a src dst t list without a header (SNAP's)", "dataset=stream", _stream("edgelist"), "edgelist")
EDGE_LIST = FileFormat(
    "a src,dst,t edge list",
    "dataset=edgelist (snapshots) or dataset=events (an event stream)",
    lambda source: isinstance(source, EdgeListSource) or _stream("edgelist")(source),
    "edgelist",
)
TEMPORAL_DATA = FileFormat("a PyG TemporalData saved with torch.save", "dataset=stream", _stream("pyg"), "pyg")
SAVED_SNAPSHOTS = FileFormat("snapshots saved with torch.save", "dataset=snapshots", lambda s: isinstance(s, SnapshotFileSource))
TWITTER_TENNIS = FileFormat(
    "PyTorch Geometric Temporal's Twitter tennis JSON", "dataset=twitter_tennis", lambda s: isinstance(s, TwitterTennisSource)
)
ENGLAND_COVID = FileFormat(
    "PyTorch Geometric Temporal's England COVID JSON", "dataset=england_covid", lambda s: isinstance(s, EnglandCovidSource)
)
CHICKENPOX = FileFormat("PyTorch Geometric Temporal's chickenpox JSON", "dataset=chickenpox", _series("chickenpox"))
PEDALME = FileFormat("PyTorch Geometric Temporal's PedalMe JSON", "dataset=pedalme", _series("pedalme"))
MONTEVIDEO_BUS = FileFormat(
    "PyTorch Geometric Temporal's Montevideo bus JSON", "dataset=montevideo_bus", _series("montevideo_bus")
)


def recognise(path: str | Path) -> FileFormat | None:
    """The format of ``path`` (a file, or TGL's folder), from its structure; None when unknown or unreadable."""
    try:
        return _recognise(Path(path).expanduser())
    except (OSError, ValueError, UnicodeDecodeError, zipfile.BadZipFile, RecursionError):
        return None


def _recognise(path: Path) -> FileFormat | None:
    if path.is_dir():
        return TGL if (path / "edges.csv").is_file() else None
    if not path.is_file():
        return None
    with path.open("rb") as stream:
        start = stream.read(4)
    if start == ZIP_MAGIC:
        return _saved(path)
    if start.lstrip()[:1] == b"{":
        return _json(path)
    with path.open("r", encoding="utf-8") as stream:
        line = stream.readline(64 * 1024)
    fields = [f.strip().strip("\"'").lower() for f in re.split(r"[,\s]+", line.strip()) if f.strip()]
    if tuple(fields[:4]) == JODIE_HEADER:
        return JODIE
    if re.fullmatch(r"ml_.+\.csv", path.name) or set(DYGLIB_COLUMNS) <= set(fields):
        return DYGLIB
    if set(TGL_COLUMNS) <= set(fields):
        return TGL
    if fields[:3] == ["src", "dst", "t"]:
        return EDGE_LIST
    if len(fields) >= 3 and all(_is_number(f) for f in fields[:3]):
        return HEADERLESS
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _saved(path: Path) -> FileFormat | None:
    """A ``torch.save`` archive, by the class names its pickle refers to (nothing is unpickled)."""
    with zipfile.ZipFile(path) as archive:
        pickles = [name for name in archive.namelist() if name.endswith("/data.pkl") or name == "data.pkl"]
        if not pickles:
            return None
        names = {
            word for _, arg, _ in pickletools.genops(archive.read(pickles[0])) if isinstance(arg, str) for word in arg.split()
        }
    if "TemporalData" in names:
        return TEMPORAL_DATA
    if names & set(SIGNAL_CLASSES) or "Data" in names:
        return SAVED_SNAPSHOTS
    return None


def _json(path: Path) -> FileFormat | None:
    """PyTorch Geometric Temporal's JSON files, by their top-level keys."""
    if path.stat().st_size > MAX_JSON_BYTES:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if {"edge_mapping", "time_periods", "y"} <= keys:
        return ENGLAND_COVID
    if "time_periods" in keys and "0" in keys:
        return TWITTER_TENNIS
    if {"edges", "FX"} <= keys:
        return CHICKENPOX
    if {"edges", "weights", "X"} <= keys:
        return PEDALME
    if {"nodes", "links"} <= keys:
        return MONTEVIDEO_BUS
    return None


def reader_hint(source: Any, path: str | Path) -> str | None:
    """``it is JODIE's CSV, which dataset=stream reads`` when ``source`` does not read ``path``'s format; else None."""
    found = recognise(path)
    if found is None or found.reads(source):
        return None
    if isinstance(source, StreamFileSource) and found.stream_format is not None:
        return f"it is {found.description}, which dataset.format={found.stream_format} (or auto) reads"
    return f"it is {found.description}, which {found.choice} reads"


def with_reader_hint(error: DataError, source: Any) -> DataError:
    """``error`` with, on its line, the source that reads the file the refusing ``source`` was given."""
    path = getattr(source, "path", None)
    if not isinstance(path, (str, Path)):
        return error
    hint = reader_hint(source, path)
    if hint is None:
        return error
    return DataError(f"{str(error).rstrip().rstrip('.')}; {hint}")
