"""What the benchmarks share: a run's training curve."""

from __future__ import annotations

from dygsched.paper.bench import common
from tests.paper.bench.runs import metric_rows


def test_training_curve_gives_each_epochs_time_per_group_and_mean_loss():
    rows = [(epoch, -1, 0, "train", "epoch_time_s", 2.0 * (epoch + 1)) for epoch in (1, 0)]
    rows += [(epoch, iteration, 0, "train", "loss", float(epoch + iteration)) for epoch in (0, 1) for iteration in (0, 1)]
    rows += [(0, -1, 0, "val", "epoch_time_s", 9.0)]
    assert common.training_curve(metric_rows("r", rows), groups=4) == ([0.5, 1.0], [0.5, 1.5])
