"""The papers' printed numbers: ``published/<paper>.csv``, one file per paper, the only place a
published number is written. Each row is one cell of a paper's table, or one figure its text states:
``ref`` (the table or figure as the paper numbers it), ``target`` (the paper target it sits beside),
``dataset``, ``row``, ``column``, ``value``, ``unit`` and ``source`` (where in the paper)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pandas as pd

COLUMNS = ("paper", "ref", "target", "dataset", "row", "column", "value", "unit", "source")


@lru_cache(maxsize=1)
def published_numbers() -> pd.DataFrame:
    """Every paper's rows in one frame, with a ``paper`` column named after its file."""
    folder = resources.files("dygsched.paper").joinpath("published")
    frames = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".csv"):
            with entry.open() as handle:
                frame = pd.read_csv(handle, dtype=str, keep_default_na=False)
            frame.insert(0, "paper", entry.name.removesuffix(".csv"))
            frames.append(frame)
    numbers = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    numbers["value"] = pd.to_numeric(numbers["value"].replace("", float("nan")), errors="raise")
    return numbers[list(COLUMNS)]


def rows_of(target: str) -> pd.DataFrame:
    """The published rows a target sits beside (none for a project benchmark)."""
    numbers = published_numbers()
    return numbers[numbers.target == target].reset_index(drop=True)
