"""TGB's streams through TGB's own package: link prediction (``tgbl-wiki``, ``tgbl-review``, ...) and
node property prediction (``tgbn-trade``, ``tgbn-genre``, ``tgbn-reddit``, ``tgbn-token``).

``py-tgb`` (``pip install dygsched[tgb]``) downloads, unpacks and preprocesses its streams itself;
here it keeps them in the project's cache (``<cache>/tgb``) and the events become an
``EventStream``: TGB's node ids (destinations already numbered after sources), timestamps and edge
features, in TGB's order. Splits stay chronological by event count, as for every stream here
(TGB's own split is 70/15/15 by event time); ``tgb_negatives=<cache>/tgb/<folder>/<name>``
scores against the negatives TGB ships. A ``tgbn-*`` stream also carries TGB's node labels
(``{time: {node: vector}}``) as ``AffinityLabels``, for ``task=node``.

TGB records no checksums for its archives. ``dygsched datasets fetch`` stamps the files it
unpacked (their SHA-256, size and time, as a catalogued download without a recorded checksum is
stamped at its first download: ``dygsched.data.download``); a run checks them against the stamp
and refuses, in one line, a file that changed since.

TGB joins its own package folder and the ``root`` it is given as strings, so the cache is passed
as a path relative to that folder.
"""

from __future__ import annotations

import contextlib
import io
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from dygsched.data.catalog import cache_dir
from dygsched.errors import DataError

if TYPE_CHECKING:
    from tgb.linkproppred.dataset import LinkPropPredDataset
    from tgb.nodeproppred.dataset import NodePropPredDataset

    from dygsched.data.events import EventStream

INSTALL_HINT = "TGB's streams need its package: pip install 'dygsched[tgb]' (py-tgb)"


def tgb_link_datasets() -> tuple[str, ...]:
    """The link-prediction streams the installed ``py-tgb`` knows; none without it."""
    try:
        from tgb.utils.info import DATA_URL_DICT
    except ImportError:
        return ()
    return tuple(sorted(name for name in DATA_URL_DICT if name.startswith("tgbl-")))


def tgb_node_datasets() -> tuple[str, ...]:
    """The node property prediction streams the installed ``py-tgb`` knows; none without it."""
    try:
        from tgb.utils.info import DATA_URL_DICT
    except ImportError:
        return ()
    return tuple(sorted(name for name in DATA_URL_DICT if name.startswith("tgbn-")))


def tgb_folder(name: str) -> Path:
    """Where TGB keeps stream ``name`` in the cache (its folder name has underscores)."""
    return cache_dir() / "tgb" / name.replace("-", "_")


def is_downloaded(name: str) -> bool:
    folder = tgb_folder(name)
    return folder.is_dir() and any(folder.glob(f"{name}_edgelist*.csv"))


def _raw_files(name: str) -> list[Path]:
    """The files TGB unpacked for stream ``name``: its edge list, and a node stream's labels."""
    folder = tgb_folder(name)
    return sorted(p for p in folder.glob(f"{name}_*.csv") if p.name.startswith((f"{name}_edgelist", f"{name}_node_labels")))


def _checked(name: str, stamp: bool) -> None:
    """Stamp (after a fetch) or check (before a read) the files TGB unpacked for ``name``."""
    from dygsched.data.catalog import CatalogEntry
    from dygsched.data.download import ensure_cached

    for path in _raw_files(name):
        entry = CatalogEntry(name, path.name, False, f"TGB stream {name}", "TGB's package")
        if stamp:
            Path(str(path) + ".sha256").unlink(missing_ok=True)  # the fresh download's own checksum
        ensure_cached(entry, path)


Dataset = TypeVar("Dataset")


def _dataset(name: str, download: bool) -> LinkPropPredDataset:
    try:
        from tgb.linkproppred.dataset import LinkPropPredDataset
    except ImportError:
        raise DataError(INSTALL_HINT) from None
    if name not in tgb_link_datasets():
        raise DataError(f"unknown TGB stream '{name}' (known: {', '.join(tgb_link_datasets())})")
    return _opened(LinkPropPredDataset, name, download)


def _node_dataset(name: str, download: bool) -> NodePropPredDataset:
    try:
        from tgb.nodeproppred.dataset import NodePropPredDataset
    except ImportError:
        raise DataError(INSTALL_HINT) from None
    if name not in tgb_node_datasets():
        raise DataError(f"unknown TGB node stream '{name}' (known: {', '.join(tgb_node_datasets())})")
    return _opened(NodePropPredDataset, name, download)


def _opened(dataset_class: Callable[..., Dataset], name: str, download: bool) -> Dataset:
    """TGB's ``dataset_class`` (link or node property prediction) for stream ``name``, downloaded
    first with ``download``, else read from the cache where it was fetched and stamped; one line on failure."""
    from tgb.utils.info import PROJ_DIR

    if not download and not is_downloaded(name):
        raise DataError(
            f"TGB stream '{name}' is not downloaded: run `dygsched datasets fetch {name}` "
            f"(TGB's package downloads it into {tgb_folder(name).parent})"
        )
    if not download:
        _checked(name, stamp=False)  # a file that changed since it was fetched: one line, never read
    (cache_dir() / "tgb").mkdir(parents=True, exist_ok=True)
    root = os.path.relpath(cache_dir() / "tgb", PROJ_DIR)
    chatter = io.StringIO()
    try:
        with (
            contextlib.redirect_stdout(chatter),
            contextlib.redirect_stderr(chatter),
        ):  # TGB's progress: a run's output stays ours
            return dataset_class(name=name, root=root, preprocess=True, download=download)
    except (OSError, ValueError, KeyError, IndexError, zipfile.BadZipFile) as exc:  # requests' errors are OSErrors
        if download:  # TGB writes its zip where it unpacks it: a cut-off one must not stay
            (tgb_folder(name) / f"{name}.zip").unlink(missing_ok=True)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(
            f"TGB stream '{name}': {'could not download it' if download else 'could not read it'} ({reason})"
        ) from None


def fetch_tgb(name: str) -> Path:
    """Download (and preprocess) TGB stream ``name`` with TGB's package, and stamp its files; its folder."""
    if name.startswith("tgbn-"):
        _node_dataset(name, download=True)
    else:
        _dataset(name, download=True)
    _checked(name, stamp=True)
    return tgb_folder(name)


@dataclass(frozen=True)
class TGBStreamSource:
    """``dataset=tgb dataset.stream=tgbl-wiki``: a TGB stream already fetched into the cache."""

    stream: str
    name: str = "tgb"

    def load(self) -> EventStream:
        from dygsched.data.events import events_from_arrays

        data = _dataset(self.stream, download=False).full_data
        features = data.get("edge_feat")
        try:
            features = None if features is None else np.require(features, dtype=np.float32, requirements="W")
            return events_from_arrays(
                self.stream,
                np.asarray(data["sources"], dtype=np.int64),
                np.asarray(data["destinations"], dtype=np.int64),
                np.array(data["timestamps"], dtype=np.float64),
                None,
                None,
                features,
            )
        except (KeyError, ValueError) as exc:
            raise DataError(f"TGB stream '{self.stream}': unexpected data from TGB's package ({exc})") from None


@dataclass(frozen=True)
class TGBNodeStreamSource:
    """``dataset=tgbn dataset.stream=tgbn-trade``: a TGB node property prediction stream already
    fetched into the cache, with its node labels (``AffinityLabels``: TGB's ``{time: {node: vector}}``)."""

    stream: str
    name: str = "tgbn"

    def load(self) -> EventStream:
        from dataclasses import replace

        from dygsched.data.event_labels import AffinityLabels
        from dygsched.data.events import events_from_arrays

        dataset = _node_dataset(self.stream, download=False)
        data = dataset.full_data
        features = data.get("edge_feat")
        try:
            features = None if features is None else np.require(features, dtype=np.float32, requirements="W")
            stream = events_from_arrays(
                self.stream,
                np.asarray(data["sources"], dtype=np.int64),
                np.asarray(data["destinations"], dtype=np.int64),
                np.array(data["timestamps"], dtype=np.float64),
                None,
                None,
                features,
            )
            times, nodes, classes, values = [], [], [], []
            widths = set()
            for time, rows in data["node_label_dict"].items():
                for node, vector in rows.items():
                    vector = np.asarray(vector, dtype=np.float64).reshape(-1)
                    widths.add(vector.size)
                    hot = np.flatnonzero(vector)
                    times.append(np.full(hot.size, float(time)))
                    nodes.append(np.full(hot.size, int(node), dtype=np.int64))
                    classes.append(hot)
                    values.append(vector[hot])
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise DataError(f"TGB stream '{self.stream}': unexpected data from TGB's package ({exc})") from None
        if not times or len(widths) != 1:
            raise DataError(f"TGB stream '{self.stream}': TGB's package gave no node labels, or label vectors of several widths")
        node_ids = stream.node_ids  # TGB's ids, compacted here as every stream's are
        assert node_ids is not None
        compact = np.full(int(node_ids.max()) + 1, -1, dtype=np.int64)
        compact[node_ids.numpy()] = np.arange(node_ids.numel())
        raw_nodes = np.concatenate(nodes)
        if raw_nodes.max() >= compact.size or (compact[raw_nodes] < 0).any():
            raise DataError(f"TGB stream '{self.stream}': its node labels name nodes without an event")
        labels = AffinityLabels.from_entries(
            np.concatenate(times), compact[raw_nodes], np.concatenate(classes), np.concatenate(values), widths.pop()
        )  # the label vectors' own width: TGB's num_classes where its files are whole (255 nations for tgbn-trade)
        return replace(stream, affinity=labels)
