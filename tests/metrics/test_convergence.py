import math

import pandas as pd
import pytest

from dygsched.metrics.convergence import epoch_curve, target_mse, time_to_target
from dygsched.metrics.recorder import MetricRecorder


def curve(val_mse, epoch_time_s=None):
    times = epoch_time_s if epoch_time_s is not None else [10.0 * (e + 1) for e in range(len(val_mse))]
    return pd.DataFrame({"epoch": range(len(val_mse)), "epoch_time_s": times, "val_mse": val_mse})


def test_it_stops_at_the_first_epoch_that_meets_the_target():
    # epochs 2 and 4 both meet 0.5; the later, better epoch 4 changes nothing
    reached = time_to_target(curve([0.9, 0.7, 0.5, 0.6, 0.3]), target=0.5)
    assert reached.reached and reached.epochs == 3 and reached.epochs_run == 5
    assert reached.seconds == pytest.approx(10 + 20 + 30)  # epochs 0, 1 and 2, the first one at the target included
    assert reached.note == "reached in 3 of 5 epochs"


def test_a_target_never_met_is_missing_never_zero_nor_the_whole_run():
    missed = time_to_target(curve([0.9, 0.8, 0.7]), target=0.5)
    assert not missed.reached and math.isnan(missed.seconds) and math.isnan(missed.epochs)
    assert missed.note == "not reached in 3 epochs"
    assert not time_to_target(curve([0.9, 0.1]), target=math.nan).reached  # no reference run, no target


def test_the_order_of_rows_does_not_matter_and_a_missing_epoch_time_makes_the_time_missing():
    shuffled = curve([0.9, 0.4, 0.3]).iloc[[2, 0, 1]]
    assert time_to_target(shuffled, target=0.45).seconds == pytest.approx(30)
    assert math.isnan(time_to_target(curve([0.9, 0.4], [5.0, math.nan]), target=0.45).seconds)


def test_the_target_is_the_best_mse_a_stated_margin_above_it():
    assert target_mse(0.2, 0.05) == pytest.approx(0.21)
    with pytest.raises(ValueError, match="at least 0"):
        target_mse(0.2, -0.1)


def test_the_curve_takes_the_slowest_ranks_epoch_time_and_the_validation_mse():
    rows = []
    for rank, times in ((0, [3.0, 2.0]), (1, [4.0, 1.0])):
        rec = MetricRecorder("r", rank)
        for epoch in range(2):
            rec.add(epoch, "train", "epoch_time_s", times[epoch])
            rec.add(epoch, "train", "busy_s", 0.5, iteration=0)  # an iteration's row is not the epoch's
            if rank == 0:
                rec.add(epoch, "val", "mse", [0.4, 0.2][epoch])
                rec.add(epoch, "test", "mse", 9.0)
        rows += rec.rows
    got = epoch_curve(MetricRecorder.frame(rows))
    assert got.to_dict("list") == {"epoch": [0, 1], "epoch_time_s": [4.0, 2.0], "val_mse": [0.4, 0.2]}
