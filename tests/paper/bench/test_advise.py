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
