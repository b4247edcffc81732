"""A time column given as dates, read once as seconds since 1970-01-01 UTC.

Every time column a source reads (an edge list's ``time_col``, a stream file's timestamps) takes
numbers as they are, or dates: ISO-8601 (``2021-03-04T10:00:00``, ``2021-03-04 10:00``, with or
without a zone, ``Z`` or ``+01:00``) or any other text ``pandas.to_datetime`` parses. Dates become
seconds since 1970-01-01 00:00 UTC, as floats (sub-second parts kept), the unit the project's
time cuts read: ``dataset.snapshot=daily`` is 86,400 of these seconds, as on a Unix timestamp
(``dygsched.data.time_cut``). A date without a zone is read as UTC; one with a zone is converted
to UTC. The conversion happens here, once, when the file is read, and :func:`times_in_seconds`
returns a one-line note saying so, which the source logs. A column in which some value is neither
a number nor a date is refused with the first such value.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd

from dygsched.errors import DataError

log = logging.getLogger("dygsched")
UNIT = "seconds since 1970-01-01 UTC"
EPOCH = pd.Timestamp("1970-01-01", tz="UTC")


def times_in_seconds(values: pd.Series, what: str) -> tuple[np.ndarray, str | None]:
    """``values`` as float64 seconds, and a note when they were dates (None when they were numbers).

    ``what`` names the column in errors and the note (``dataset 'events': column 't' of f.csv``).
    Missing values are left to the caller's own check (they stay NaN)."""
    if pd.api.types.is_bool_dtype(values):
        raise DataError(f"{what} must hold numbers or dates, not true/false")
    if pd.api.types.is_numeric_dtype(values):
        return values.to_numpy(dtype=np.float64), None
    numbers = pd.to_numeric(values, errors="coerce")
    present = values.notna().to_numpy()
    if bool((numbers.notna().to_numpy() == present).all()):  # numbers written as text ("3", " 4.5")
        return numbers.to_numpy(dtype=np.float64), None
    dates = _parse_dates(values, present)
    bad = present & dates.isna().to_numpy()
    if bad.any():
        raw = values.iloc[int(np.flatnonzero(bad)[0])]
        raise DataError(
            f"{what} must hold numbers or dates (ISO-8601 such as 2021-03-04T10:00:00, or any date pandas reads), got {raw!r}"
        )
    seconds = ((dates - EPOCH) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64, na_value=np.nan)
    first, last = dates.min(), dates.max()
    note = f"{what}: dates from {first:%Y-%m-%dT%H:%M:%S} to {last:%Y-%m-%dT%H:%M:%S} UTC, read as {UNIT}"
    return seconds, note


def holds_dates(values: pd.Series) -> bool:
    """Whether a text column holds no numbers and at least one date (a column of neither is left
    to the caller's own error about numbers, which names its line)."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    present = values.notna().to_numpy()
    if pd.to_numeric(values, errors="coerce").notna().any():
        return False
    return bool(_parse_dates(values, present).notna().any())


def _parse_dates(values: pd.Series, present: np.ndarray) -> pd.Series:
    """UTC timestamps (NaT where a value is no date): ISO-8601 first, then pandas' mixed formats."""
    text = values.astype("string").str.strip()
    parsed = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    with warnings.catch_warnings():  # pandas warns when it falls back to parsing each value alone
        warnings.simplefilter("ignore")
        for form in ("ISO8601", "mixed"):
            try:
                parsed = pd.to_datetime(text, errors="coerce", utc=True, format=form)
            except (ValueError, TypeError, OverflowError):
                continue
            if not (present & parsed.isna().to_numpy()).any():
                break
    return parsed


def report(note: str | None) -> None:
    """Log a conversion's note, once per read."""
    if note is not None:
        log.info("dygsched: %s", note)
