"""Dates in a time column: read once as seconds since 1970-01-01 UTC, said in the log."""

import logging

import numpy as np
import pandas as pd
import pytest

from dygsched.data.datetimes import times_in_seconds
from dygsched.data.edgelist import EdgeListSource
from dygsched.data.stream_formats import StreamFileSource
from dygsched.errors import DataError

DAY = 86_400.0


@pytest.mark.parametrize(
    "values, seconds",
    [
        (["2021-03-04T10:00:00", "2021-03-05T10:00:00"], [1614852000.0, 1614938400.0]),
        (["2021-03-04T11:00:00+01:00", "2021-03-04T10:00:00Z"], [1614852000.0, 1614852000.0]),
        (["2021-03-04 10:00", "March 5, 2021 10:00"], [1614852000.0, 1614938400.0]),
        (["2021-03-04T10:00:00.5"], [1614852000.5]),
    ],
)
def test_dates_become_unix_seconds(values, seconds):
    got, note = times_in_seconds(pd.Series(values), "column 'when'")
    assert got.tolist() == seconds
    assert "seconds since 1970-01-01 UTC" in note and "column 'when'" in note


def test_numbers_stay_as_they_are():
    got, note = times_in_seconds(pd.Series(["1", "2.5"]), "t")
    assert got.tolist() == [1.0, 2.5] and note is None
    got, note = times_in_seconds(pd.Series([3, 4]), "t")
    assert got.tolist() == [3.0, 4.0] and note is None


def test_a_value_neither_number_nor_date_is_named():
    with pytest.raises(DataError, match="must hold numbers or dates .*got 'soon'"):
        times_in_seconds(pd.Series(["2021-03-04", "soon"]), "column 'when'")


def test_an_edge_list_of_dates_cuts_by_calendar_days(tmp_path, caplog):
    path = tmp_path / "dated.csv"
    rows = [f"{i % 3},{(i + 1) % 3},2021-03-0{1 + i // 2}T0{i % 2}:00:00" for i in range(8)]
    path.write_text("src,dst,t\n" + "\n".join(rows) + "\n")
    with caplog.at_level(logging.INFO, logger="dygsched"):
        stream = EdgeListSource(path=str(path), kind="events").load()
    assert "dates from 2021-03-01T00:00:00 to 2021-03-04T01:00:00 UTC" in caplog.text
    assert float(stream.t[0]) == pd.Timestamp("2021-03-01", tz="UTC").timestamp()
    days = EdgeListSource(path=str(path), num_snapshots=None, snapshot_duration=DAY).load()
    assert days.num_snapshots == 3  # four days of dates; the last only gives targets


def test_a_stream_file_reads_dates_too(tmp_path):
    path = tmp_path / "stream.csv"
    path.write_text("src,dst,t\n0,1,2021-03-04T10:00:00\n1,2,2021-03-04T10:00:01\n")
    stream = StreamFileSource(path=str(path)).load()
    assert np.allclose(stream.t.numpy(), [1614852000.0, 1614852001.0])
