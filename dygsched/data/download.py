"""Downloading a catalogued dataset into the cache, and checking a cached file before a run reads it.

Only ``dygsched datasets fetch NAME`` downloads; a run never does (a missing file is one line that
says how to fetch it). A download streams into ``FILE.part`` beside its destination, checking the
size the server announced and the size and SHA-256 the catalogue records; only a file that passes
is renamed into place, so the cache holds nothing half-written. Each cached file has a stamp
(``FILE.sha256``: its checksum, size and modification time) so that later runs check a file only
when it changed; a cached file whose bytes no longer match is moved aside and never read.

Torch-free, standard library only.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dygsched.data.catalog import CatalogEntry, cache_dir, entry_for_file
from dygsched.errors import DataError

if TYPE_CHECKING:
    from tqdm import tqdm

CHUNK = 1 << 20
STAMP_SUFFIX = ".sha256"


def fetch(entry: CatalogEntry, *, unverified: bool = False, timeout: float = 60.0, show_progress: bool | None = None) -> Path:
    """Download ``entry`` into the cache (once); the path of the checked file."""
    if entry.url is None:
        raise DataError(f"dataset '{entry.name}' has no download address: it ships inside the package")
    destination = cache_dir() / entry.file
    if destination.is_file():
        return ensure_cached(entry, destination)
    if not entry.verifiable and not unverified:
        raise DataError(
            f"dataset '{entry.name}': the catalogue records no checksum for {entry.url} (it could not be downloaded when the "
            "catalogue was written), so its bytes cannot be checked; add --unverified to download it anyway and keep "
            "the checksum of this first download for later reads"
        )
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(
            f"cannot create the dataset cache {destination.parent}: {exc.strerror or exc} (set DYGSCHED_CACHE)"
        ) from None
    partial = destination.with_name(destination.name + ".part")
    try:
        sha256, size = _download(entry, partial, timeout, sys.stderr.isatty() if show_progress is None else show_progress)
        if entry.size is not None and size != entry.size:
            raise DataError(
                f"dataset '{entry.name}': {entry.url} gave {size:,} bytes, the catalogue records {entry.size:,}; nothing was kept"
            )
        if entry.sha256 is not None and sha256 != entry.sha256:
            raise DataError(
                f"dataset '{entry.name}': {entry.url} gave bytes with SHA-256 {sha256}, "
                f"the catalogue records {entry.sha256}; nothing was kept"
            )
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(destination, sha256, "catalogue" if entry.verifiable else "first download")
    return destination


def _download(entry: CatalogEntry, partial: Path, timeout: float, show_progress: bool) -> tuple[str, int]:
    assert entry.url is not None  # the caller refuses an entry without one
    digest, received = hashlib.sha256(), 0
    by_hand = f"put the file at {cache_dir() / entry.file} by hand" + (
        f" ({entry.size:,} bytes, SHA-256 {entry.sha256})" if entry.verifiable else ""
    )
    try:
        with urllib.request.urlopen(entry.url, timeout=timeout) as response, partial.open("wb") as out:  # noqa: S310 (catalogued http(s) address)
            announced = response.headers.get("Content-Length")
            expected = int(announced) if announced and announced.isdigit() else entry.size
            bar = _progress_bar(entry.name, expected) if show_progress else None
            while chunk := response.read(CHUNK):
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                if bar is not None:
                    bar.update(len(chunk))
            if bar is not None:
                bar.close()
        if announced and announced.isdigit() and received != int(announced):
            raise DataError(
                f"dataset '{entry.name}': the download from {entry.url} stopped at {received:,} "
                f"of {int(announced):,} bytes; nothing was kept"
            )
    except DataError:
        raise
    except urllib.error.HTTPError as exc:
        raise DataError(f"dataset '{entry.name}': {entry.url} answered HTTP {exc.code} ({exc.reason}); {by_hand}") from None
    except http.client.IncompleteRead as exc:
        raise DataError(
            f"dataset '{entry.name}': the download from {entry.url} stopped early ({exc!r}); nothing was kept"
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"dataset '{entry.name}': could not download {entry.url} ({reason}); {by_hand}") from None
    except OSError as exc:  # the cache's disk: full, read-only
        raise DataError(f"dataset '{entry.name}': cannot write {partial}: {exc.strerror or exc}; nothing was kept") from None
    return digest.hexdigest(), received


def _progress_bar(name: str, total: int | None) -> tqdm:
    from tqdm import tqdm

    return tqdm(desc=f"fetching {name}", total=total, unit="B", unit_scale=True, unit_divisor=1024, leave=False)


def ensure_cached(entry: CatalogEntry, path: Path) -> Path:
    """``path`` (a cached file of ``entry``) checked against the catalogue, or its stamp where the
    catalogue has no checksum; a file that does not match is moved aside, never read."""
    stamp = _read_stamp(path)
    stat = path.stat()
    if stamp is not None and stamp.get("size") == stat.st_size and stamp.get("mtime_ns") == stat.st_mtime_ns:
        return path
    expected = entry.sha256 or (stamp or {}).get("sha256")
    actual = file_sha256(path)
    if expected is not None and actual != expected:
        aside = path.with_name(f"{path.name}.mismatch-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(path, aside)
        Path(str(path) + STAMP_SUFFIX).unlink(missing_ok=True)
        raise DataError(
            f"dataset '{entry.name}': {path} has SHA-256 {actual}, expected {expected}; moved aside to {aside.name} "
            f"(fetch it again: dygsched datasets fetch {entry.name})"
        )
    _write_stamp(path, actual, "catalogue" if entry.sha256 else "first read")
    return path


def ensure_readable(path: str | Path) -> None:
    """Before a run: a catalogued file the cache should hold is there and intact; anything else
    (a user's own path, a shipped file) is left to its reader."""
    path = Path(path)
    entry = entry_for_file(path.name)
    if entry is None or entry.shipped or path.parent != cache_dir():
        return
    if not path.is_file():
        raise DataError(
            f"dataset '{entry.name}' is not downloaded: run `dygsched datasets fetch {entry.name}`"
            + (" --unverified" if not entry.verifiable else "")
            + f" (from {entry.url}), or put the file at {path}"
        )
    ensure_cached(entry, path)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(Path(str(path) + STAMP_SUFFIX).read_text())
    except (OSError, ValueError):
        return None


def _write_stamp(path: Path, sha256: str, checked_against: str) -> None:
    stat = path.stat()
    stamp = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "checked_against": checked_against}
    try:
        Path(str(path) + STAMP_SUFFIX).write_text(json.dumps(stamp) + "\n")
    except OSError:  # a read-only cache a user filled by hand: the file is checked again next time
        pass
