"""Write files so that a reader never sees half of one: a temporary name, then a rename."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_text(path: Path, text: str) -> None:
    tmp = _tmp(path)
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    tmp = _tmp(path)
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)
