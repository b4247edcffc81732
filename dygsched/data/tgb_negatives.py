"""TGB's evaluation negatives: the fixed negative destinations of every validation and test event.

TGB (Huang et al., NeurIPS 2023) ships, for each of its link-prediction streams, one file per
evaluated split, ``<name>_val_ns.pkl`` and ``<name>_test_ns.pkl``: a pickled dictionary from the
positive event ``(source, destination, timestamp)`` (the ids and times of its edge list) to the
array of negative destinations it is ranked against (half of them historical, half random). With
``tgb_negatives=<folder>/<name>`` a run reads both and scores each validation and test event
against exactly those destinations, as TGB's evaluator does, instead of drawing uniform ones.

The file is read with an unpickler that only rebuilds dictionaries, tuples, numbers and numpy
arrays: a pickle that asks for anything else is refused, not executed. Events are matched by the
ids the stream's reader kept (``EventStream.node_ids``) and its raw timestamps. Where the file
gives some events fewer negatives than others, the missing places are marked absent and left out
of every metric.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dygsched.data.events import EventStream
from dygsched.errors import DataError

PHASE_FILES = {"val": "{prefix}_val_ns.pkl", "test": "{prefix}_test_ns.pkl"}

# What TGB's files are made of: numpy arrays and scalars inside a dict keyed by tuples.
_ALLOWED = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("collections", "OrderedDict"),
}


@dataclass(frozen=True)
class FixedNegatives:
    """One phase's negatives: ``destinations [events, m]`` (the stream's node indices) and
    ``present [events, m]`` (False where an event has fewer than ``m``)."""

    destinations: torch.Tensor
    present: torch.Tensor

    @property
    def uneven(self) -> bool:
        return not bool(self.present.all())


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"it asks for {module}.{name}, which a TGB negatives file does not hold")


def negative_files(prefix: str | Path) -> dict[str, Path]:
    """The two files ``tgb_negatives=<prefix>`` names: ``<prefix>_val_ns.pkl``, or the newest
    version TGB keeps of it (``<prefix>_val_ns_v2.pkl`` for its second release of a stream)."""
    files = {}
    for phase, pattern in PHASE_FILES.items():
        path = Path(pattern.format(prefix=str(prefix))).expanduser()
        versions = sorted(path.parent.glob(f"{path.stem}_v*.pkl"), key=lambda p: (len(p.name), p.name))
        files[phase] = path if path.is_file() or not versions else versions[-1]
    return files


def load_negatives_file(path: Path) -> dict[Any, Any]:
    try:
        with open(path, "rb") as handle:
            table = _ArraysOnly(handle).load()
    except FileNotFoundError:
        raise DataError(
            f"tgb_negatives: no file {path} (TGB names them <dataset>_val_ns.pkl and <dataset>_test_ns.pkl)"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError) as exc:
        raise DataError(f"tgb_negatives: {path} is not a TGB negatives file ({exc})") from None
    if not isinstance(table, dict):
        raise DataError(
            f"tgb_negatives: {path} is not a TGB negatives file (it holds a {type(table).__name__}, not a dictionary)"
        )
    return table


def read_negatives(path: Path, stream: EventStream, first: int, stop: int) -> FixedNegatives:
    """The negatives ``path`` gives the stream's events ``[first, stop)`` (one phase)."""
    table = load_negatives_file(path)
    ids = stream.node_ids if stream.node_ids is not None else torch.arange(stream.num_nodes)
    src, dst = ids[stream.src[first:stop]].tolist(), ids[stream.dst[first:stop]].tolist()
    times = stream.t[first:stop].tolist()
    rows: list[np.ndarray] = []
    for k, key in enumerate(zip(src, dst, times)):
        found = table.get(key)  # TGB's integer times match our float ones: equal numbers hash alike
        if found is None:
            raise DataError(
                f"tgb_negatives: {path} has no negatives for event {first + k} (source {key[0]}, destination {key[1]}, "
                f"time {key[2]:g}): the file belongs to another stream or another split (TGB's: 70/15/15 by time)"
            )
        rows.append(np.asarray(found, dtype=np.int64).reshape(-1))
    if not rows:
        raise DataError(f"tgb_negatives: the phase read from {path} has no events")
    width = max(row.size for row in rows)
    if width == 0:
        raise DataError(f"tgb_negatives: {path} gives no negative to any event")
    original = np.zeros((len(rows), width), dtype=np.int64)
    present = np.zeros((len(rows), width), dtype=bool)
    for k, row in enumerate(rows):
        original[k, : row.size], present[k, : row.size] = row, True
    return FixedNegatives(_node_indices(original, present, ids, path, np.asarray(dst)), torch.from_numpy(present))


def _node_indices(original: np.ndarray, present: np.ndarray, ids: torch.Tensor, path: Path, fallback: np.ndarray) -> torch.Tensor:
    """The stream's node index of every negative id; absent places hold the event's destination
    (a valid node, scored and then left out)."""
    order = np.argsort(ids.numpy(), kind="stable")
    sorted_ids = ids.numpy()[order]
    place = np.clip(np.searchsorted(sorted_ids, original), 0, len(sorted_ids) - 1)
    known = sorted_ids[place] == original
    if not bool(known[present].all()):
        bad = original[present & ~known][0]
        raise DataError(f"tgb_negatives: {path} names node {bad}, which the stream does not have")
    index = torch.from_numpy(order[place])
    fallback_index = torch.from_numpy(order[np.clip(np.searchsorted(sorted_ids, fallback), 0, len(sorted_ids) - 1)])
    present_t = torch.from_numpy(present)
    return torch.where(present_t, index, fallback_index.unsqueeze(1).expand_as(index))


def read_phase_negatives(
    prefix: str | Path, stream: EventStream, phases: dict[str, tuple[int, int]]
) -> dict[str, FixedNegatives]:
    """Both phases' negatives (``phases``: each phase's event range)."""
    files = negative_files(prefix)
    return {phase: read_negatives(files[phase], stream, *phases[phase]) for phase in ("val", "test")}
