import math

import numpy as np
import pandas as pd
import pytest

from dygsched.data.time_cut import MAX_SNAPSHOTS, UNITS, CutRule, TimeCut, parse_snapshot
from dygsched.errors import ConfigError, DataError


def tgx_bins(times: np.ndarray, seconds: int) -> np.ndarray:
    """TGX's discretize_edges (what UTG's loaders call), written from its rule: whole seconds,
    ``ceil((int(t) - t0) / L)`` with ``t0`` the first (truncated) timestamp."""
    whole = np.trunc(times).astype(np.int64)
    return np.array([math.ceil((int(t) - int(whole[0])) / seconds) for t in whole])


def test_a_unit_is_utgs_cut_on_a_hand_computed_stream():
    times = np.array([100.0, 100.7, 101.0, 3700.0, 3700.9, 3701.0, 7300.5])
    intervals = TimeCut.unit("hourly").intervals(times, "tiny")
    # the first second alone, then hours closed on the right in whole seconds: (100, 3700], (3700, 7300]
    assert intervals.index.tolist() == [0, 0, 1, 1, 1, 2, 2]
    assert intervals.bounds.tolist() == [100.0, 101.0, 3701.0, 7301.0]
    assert intervals.index.tolist() == tgx_bins(times, 3600).tolist()


@pytest.mark.parametrize("unit", list(UNITS))
def test_every_unit_matches_tgxs_rule_on_random_streams(unit):
    rng = np.random.default_rng(7)
    seconds = UNITS[unit]
    for _ in range(20):
        start = rng.integers(0, 2_000_000_000)
        steps = np.sort(rng.integers(0, 12 * seconds, 200)).astype(np.float64)
        times = start + steps + rng.choice([0.0, 0.25, 0.999], 200)  # whole seconds and fractions of one
        times.sort()
        intervals = TimeCut.unit(unit).intervals(times, "random")
        assert intervals.index.tolist() == tgx_bins(times, seconds).tolist()
        assert np.all(intervals.bounds[intervals.index] <= times) and np.all(times < intervals.bounds[intervals.index + 1])


def test_a_length_starts_at_the_first_timestamp_and_equal_parts_close_the_last():
    length = TimeCut.length(5.0).intervals(np.array([2.0, 6.9, 7.0, 19.0]), "tiny")
    assert length.index.tolist() == [0, 0, 1, 3] and length.bounds.tolist() == [2.0, 7.0, 12.0, 17.0, 22.0]
    parts = TimeCut.parts(4).intervals(np.array([0.0, 2.5, 4.9, 5.0, 10.0]), "tiny")
    assert parts.index.tolist() == [0, 1, 1, 2, 3] and parts.count == 4 and parts.bounds[-1] > 10.0


def test_a_gap_is_refused_as_utg_refuses_it_and_kept_when_asked():
    times = np.array([0.0, 10.0, 7_300.0])
    with pytest.raises(DataError, match=r"leaves 1 of 4 snapshots empty between events \(the first: snapshot 2, \[3601, 7201\)"):
        TimeCut.unit("hourly").intervals(times, "gappy", refuse_gaps=True)
    assert TimeCut.unit("hourly").intervals(times, "gappy").index.tolist() == [0, 1, 3]  # kept: the edge list's way


def test_too_many_snapshots_are_refused_before_anything_is_built():
    with pytest.raises(DataError, match=f"at most {MAX_SNAPSHOTS:,}"):
        TimeCut.length(1e-300).intervals(np.array([0.0, 1e300]), "wide")
    with pytest.raises(DataError, match="too wide"):
        TimeCut.unit("daily").intervals(np.array([-1.7e308, 1.7e308]), "wide")


def test_the_setting_is_parsed_and_bad_values_name_the_valid_ones():
    assert parse_snapshot(None) is None
    weekly = parse_snapshot("Weekly")
    assert weekly is not None and (weekly.rule, weekly.size, weekly.label) == (CutRule.UNIT, 604_800.0, "dataset.snapshot=weekly")
    assert parse_snapshot(3600) == TimeCut(CutRule.LENGTH, 3600.0, "dataset.snapshot=3600")
    assert parse_snapshot("0.5") == TimeCut(CutRule.LENGTH, 0.5, "dataset.snapshot=0.5")
    with pytest.raises(ConfigError, match="unknown unit .choose from hourly, daily, weekly, monthly, yearly"):
        parse_snapshot("fortnightly")
    for bad in (0, -3, float("nan"), float("inf"), "-1"):
        with pytest.raises(ConfigError, match="positive, finite"):
            parse_snapshot(bad)
    for bad in (True, [1]):
        with pytest.raises(ConfigError, match="a unit"):
            parse_snapshot(bad)


def test_collegemsg_weekly_gives_utgs_snapshot_count(shipped_data):
    """UTG cuts UCI (CollegeMsg) weekly; TGX's own discretize, run on this file, made 29 windows, the
    first holding the first second's single message, and no gap."""
    times = pd.read_csv(shipped_data / "collegemsg.csv")["t"].to_numpy(np.float64)
    times.sort()
    intervals = TimeCut.unit("weekly").intervals(times, "collegemsg", refuse_gaps=True)
    assert intervals.count == 29 == len(np.unique(tgx_bins(times, UNITS["weekly"])))
    assert intervals.index.tolist() == tgx_bins(times, UNITS["weekly"]).tolist()
    assert int((intervals.index == 0).sum()) == 1
