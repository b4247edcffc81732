"""Write files so that a reader never sees half of one: a temporary name, then a rename.

The temporary file sits beside the target (same filesystem, so ``os.replace`` is atomic), is
flushed to disk before the rename, and is removed if writing fails. A process killed mid-write
leaves at most a hidden ``.NAME.PID.tmp`` file, never a truncated ``NAME``.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pandas as pd

TMP_SUFFIX = ".tmp"


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}")


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success it is synced and renamed over ``path``."""
    path = Path(path)
    tmp = _tmp(path)
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # the disk's words, about the file the caller asked for, not our temporary name
        code = exc.errno
        if code is None and str(tmp) in str(exc):  # pyarrow's OSError keeps the errno in its text only
            found = re.search(r"\[errno (\d+)\]", str(exc))
            code = int(found.group(1)) if found else None
        if code is not None and (exc.filename is None or exc.filename == str(tmp)):
            raise OSError(code, os.strerror(code), str(path)) from exc
        raise
    finally:
        with suppress(OSError):  # a folder gone read-only cannot even lose it
            tmp.unlink(missing_ok=True)


def write_with(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(temporary_path)``, then rename it to ``path``."""
    with replacing(path) as tmp:
        write(tmp)


def write_text(path: Path, text: str) -> None:
    write_with(path, lambda tmp: tmp.write_text(text))


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    write_with(path, lambda tmp: frame.to_parquet(tmp, index=False))


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files a killed writer left in ``folder`` (never a finished file)."""
    stale = [p for p in Path(folder).glob(f".*{TMP_SUFFIX}") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale
