"""TGB's link-prediction streams (``tgbl-wiki``, ``tgbl-review``, ...) through TGB's own package.

``py-tgb`` (``pip install dygsched[tgb]``) downloads, unpacks and preprocesses its streams itself;
here it keeps them in the project's cache (``<cache>/tgb``) and the events become an
``EventStream``: TGB's node ids (destinations already numbered after sources), timestamps and edge
features, in TGB's order. Splits stay chronological by event count, as for every stream here
(TGB's own split is 70/15/15 by event time); ``tgb_negatives=<cache>/tgb/<folder>/<name>``
scores against the negatives TGB ships.

TGB joins its own package folder and the ``root`` it is given as strings, so the cache is passed
as a path relative to that folder.
"""

from __future__ import annotations

import contextlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dygsched.data.catalog import cache_dir
from dygsched.errors import DataError

if TYPE_CHECKING:
    from tgb.linkproppred.dataset import LinkPropPredDataset

    from dygsched.data.events import EventStream

INSTALL_HINT = "TGB's streams need its package: pip install 'dygsched[tgb]' (py-tgb)"


def tgb_link_datasets() -> tuple[str, ...]:
    """The link-prediction streams the installed ``py-tgb`` knows; none without it."""
    try:
        from tgb.utils.info import DATA_URL_DICT
    except ImportError:
        return ()
    return tuple(sorted(name for name in DATA_URL_DICT if name.startswith("tgbl-")))


def tgb_folder(name: str) -> Path:
    """Where TGB keeps stream ``name`` in the cache (its folder name has underscores)."""
    return cache_dir() / "tgb" / name.replace("-", "_")


def is_downloaded(name: str) -> bool:
    folder = tgb_folder(name)
    return folder.is_dir() and any(folder.glob(f"{name}_edgelist*.csv"))


def _dataset(name: str, download: bool) -> LinkPropPredDataset:
    try:
        from tgb.linkproppred.dataset import LinkPropPredDataset
        from tgb.utils.info import PROJ_DIR
    except ImportError:
        raise DataError(INSTALL_HINT) from None
    if name not in tgb_link_datasets():
        raise DataError(f"unknown TGB stream '{name}' (known: {', '.join(tgb_link_datasets())})")
    if not download and not is_downloaded(name):
        raise DataError(
            f"TGB stream '{name}' is not downloaded: run `dygsched datasets fetch {name}` "
            f"(TGB's package downloads it into {tgb_folder(name).parent})"
        )
    (cache_dir() / "tgb").mkdir(parents=True, exist_ok=True)
    root = os.path.relpath(cache_dir() / "tgb", PROJ_DIR)
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stdout(chatter):  # TGB prints its progress; a run's output stays ours
            return LinkPropPredDataset(name=name, root=root, preprocess=True, download=download)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:  # requests' errors are OSErrors
        if download:  # TGB writes its zip where it unpacks it: a cut-off one must not stay
            (tgb_folder(name) / f"{name}.zip").unlink(missing_ok=True)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(
            f"TGB stream '{name}': {'could not download it' if download else 'could not read it'} ({reason})"
        ) from None


def fetch_tgb(name: str) -> Path:
    """Download (and preprocess) TGB stream ``name`` with TGB's package; its folder."""
    _dataset(name, download=True)
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
