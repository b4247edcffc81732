"""bench-advise's figures from a table of cells: rho, top-1, the errors and the verdict against the goals."""

import math

import pandas as pd

from dygsched.paper.bench.advise import spearman, summarise, verdict


def cells(measured):
    predicted = [1.0, 2.0, 3.0, 4.0]
    return pd.DataFrame(
        {
            "group": "g",
            "model": "m",
            "sched": ["a", "b", "c", "d"],
            "gpus": 2,
            "predicted_s": predicted,
            "measured_s": measured,
            "predicted_memory": [100.0] * 4,
            "measured_memory": [110.0, 90.0, 100.0, math.nan],
        }
    )


def test_a_prediction_in_the_runs_order_meets_the_ranking_goals():
    summary = summarise(cells([1.1, 2.1, 3.3, 4.4]))
    row = summary.iloc[0]
    assert row.rho == 1.0 and row.top1 and row.strategies == 4
    assert math.isclose(row.time_error, 1 / 11) and math.isclose(row.memory_error, 1 / 11)  # 1 - 1/1.1; the NaN left out
    lines = verdict(summary)
    assert lines[0].endswith(": met") and lines[1].endswith(": met")


def test_a_reversed_prediction_fails_them():
    summary = summarise(cells([4.0, 3.0, 2.0, 1.0]))
    assert summary.iloc[0].rho == -1.0 and not summary.iloc[0].top1
    assert "NOT met" in verdict(summary)[0] and "NOT met" in verdict(summary)[1]


def test_rho_needs_three_cells():
    assert math.isnan(spearman(pd.Series([1.0, 2.0]), pd.Series([2.0, 1.0])))


def spread(low, high, predicted=(1.0, 2.0, 3.0, 4.0)):
    table = cells([(lo + hi) / 2 for lo, hi in zip(low, high)])
    return table.assign(predicted_s=list(predicted), measured_low_s=low, measured_high_s=high)


def test_a_pick_the_runs_cannot_tell_from_the_fastest_is_right_within_their_spread_not_strictly():
    overlapping = summarise(spread(low=[1.0, 0.9, 3.0, 4.0], high=[1.4, 1.2, 3.2, 4.2])).iloc[0]
    assert not overlapping.top1 and overlapping.top1_within_spread  # b measured fastest, a's range reaches into b's
    apart = summarise(spread(low=[1.3, 0.9, 3.0, 4.0], high=[1.4, 1.2, 3.2, 4.2])).iloc[0]
    assert not apart.top1 and not apart.top1_within_spread  # a's fastest round is slower than b's slowest
    lines = verdict(summarise(spread(low=[1.3, 0.9, 3.0, 4.0], high=[1.4, 1.2, 3.2, 4.2])))
    assert "within the runs' spread: 0 " in lines[1] and "NOT met" in lines[1] and "strictly: 0 " in lines[2]


def test_strategies_priced_alike_are_one_pick():
    """The reference and DepCache share a profile on one rank: priced equal, either one measured fastest is the pick."""
    tied = summarise(spread(low=[1.2, 0.9, 3.0, 4.0], high=[1.3, 1.0, 3.2, 4.2], predicted=(1.0, 1.0, 3.0, 4.0))).iloc[0]
    assert tied.top1 and tied.top1_within_spread
