"""bench-flop-counting: the two settings alternated, the overhead read; one real build at smoke size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dygsched.paper.bench import flop_counting
from dygsched.paper.build import build_target


def test_flop_counting_alternates_the_two_settings_and_reports_the_overhead_of_counting(tmp_path, monkeypatch):
    order = []

    def fake_run(overrides, what):
        settings = dict(o.split("=", 1) for o in overrides)
        counting = settings["metrics.count_flops"] == "true"
        order.append(counting)
        folder = Path(settings["results_dir"]) / settings["run_id"]
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"epoch_time_s": (1.2 if counting else 1.0) + 0.01 * len(order)}))

    monkeypatch.setattr(flop_counting, "run_or_fail", fake_run)
    flop_counting.build_flop_counting(tmp_path, dataset="synthetic", model="tgcn", epochs=2, world_size=1, pairs=3)
    assert order == [True, False] * 3
    table = pd.read_csv(tmp_path / flop_counting.FLOP_COUNTING_CSV)
    assert table.median_epoch_s.tolist() == pytest.approx([1.23, 1.04]) and table.runs.tolist() == [3, 3]
    assert np.isnan(table.overhead_pct[1])
    assert (
        flop_counting.read_flop_counting({flop_counting.FLOP_COUNTING_CSV: table})
        == "counting graph-convolution FLOPs costs +18.3% of the epoch time"
    )


@pytest.mark.slow
def test_flop_counting_builds_at_smoke_size(tmp_path):
    """Two real runs (with and without counting) on the synthetic graph: about 40 s on 2 cores, more when they are shared."""
    build_target(flop_counting.FLOP_COUNTING, tmp_path, smoke=True)
    table = pd.read_csv(tmp_path / flop_counting.FLOP_COUNTING_CSV)
    assert table.count_flops.tolist() == [True, False] and (table.median_epoch_s > 0).all() and table.runs.tolist() == [1, 1]
    assert "counting graph-convolution FLOPs costs" in flop_counting.read_flop_counting({flop_counting.FLOP_COUNTING_CSV: table})
