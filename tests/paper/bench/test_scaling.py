"""bench-scaling: smallest first, a failed run kept without numbers, the exponents fitted and read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dygsched.paper.bench import scaling
from tests.paper.bench.runs import metric_rows


def test_last_epoch_takes_the_slowest_rank_and_each_ranks_peak():
    rows = [(epoch, -1, rank, "train", "epoch_time_s", 1.0 + epoch + rank) for epoch in (0, 1) for rank in (0, 1)]
    rows += [(1, -1, rank, "train", "peak_rss_bytes", (rank + 1) * 100 * 2**20) for rank in (1, 0)]
    rows += [(1, 3, 0, "train", "epoch_time_s", 99.0)]  # an iteration's row, not the epoch's
    rows += [(0, -1, 0, "train", "switch_epoch", 1.0)]  # greedy ran its plan from epoch 1
    last = scaling.last_epoch(metric_rows("r", rows))
    assert last == {
        "epoch": 1,
        "plan_from_epoch": 1,
        "epoch_time_s": 3.0,
        "peak_rss_mb": 200.0,
        "peak_rss_mb_per_rank": "100/200",
        "error": "",
    }


def test_scaling_runs_smallest_first_keeps_a_failed_run_without_numbers_and_fits_each_axis(tmp_path, monkeypatch):
    ran = []

    def fake_process(overrides, timeout_s):
        settings = dict(o.split("=", 1) for o in overrides)
        nodes, snapshots, sched = int(settings["dataset.num_nodes"]), int(settings["dataset.num_snapshots"]), settings["sched"]
        ran.append((sched, nodes, snapshots))
        if sched == "greedy" and nodes == 400:
            return "out of memory"
        folder = Path(settings["results_dir"]) / settings["run_id"]
        folder.mkdir(parents=True)
        seconds = 1e-6 * nodes**2 * snapshots  # time grows as nodes^2 and snapshots^1
        rows = [
            (1, -1, rank, "train", metric, value)
            for rank in (0, 1)
            for metric, value in (("epoch_time_s", seconds), ("peak_rss_bytes", nodes * snapshots * 2**20))
        ]
        metric_rows(settings["run_id"], rows).to_parquet(folder / "metrics.parquet")
        return ""

    monkeypatch.setattr(scaling, "run_in_process_of_its_own", fake_process)
    scaling.build_scaling(
        tmp_path,
        scheds=("psg", "greedy"),
        nodes=(100, 200, 400),
        snapshots=(10, 20),
        base_nodes=100,
        base_snapshots=10,
        avg_degree=2.0,
        epochs=2,
        seed=0,
    )
    assert ran == [(s, n, t) for n, t in ((100, 10), (100, 20), (200, 10), (400, 10)) for s in ("psg", "greedy")]
    table = pd.read_csv(tmp_path / scaling.SCALING_CSV)
    failed = table[(table.sched == "greedy") & (table.nodes == 400)].iloc[0]
    assert failed.error == "out of memory" and np.isnan(failed.epoch_time_s)
    fits = pd.read_csv(tmp_path / scaling.SCALING_EXPONENTS_CSV).set_index(["sched", "axis"])
    assert fits.loc[("psg", "nodes"), "time_exponent"] == pytest.approx(2.0) and fits.loc[
        ("psg", "nodes"), "memory_exponent"
    ] == pytest.approx(1.0)
    assert fits.loc[("psg", "snapshots"), "time_exponent"] == pytest.approx(1.0) and fits.loc[("greedy", "nodes"), "points"] == 2
    assert (tmp_path / scaling.SCALING_PNG).stat().st_size > 0
    text = scaling.read_scaling({scaling.SCALING_CSV: table, scaling.SCALING_EXPONENTS_CSV: fits.reset_index()})
    assert (
        "psg time ~ nodes^2.00 (memory ^1.00), snapshots^1.00 (memory ^1.00)" in text
        and "psg's time in nodes (2.00 over all sizes" in text
    )


def test_scaling_reading_names_the_super_linear_exponents_only():
    fits = pd.DataFrame(
        {
            "sched": ["psg", "psg", "flare", "flare"],
            "axis": ["nodes", "snapshots"] * 2,
            "time_exponent": [0.98, 1.02, 1.35, 0.9],
            "memory_exponent": [0.4, 0.1, 0.5, 0.2],
        }
    )
    text = scaling.read_scaling({"scaling/scaling.csv": pd.DataFrame(), "scaling/scaling_exponents.csv": fits})
    assert "psg time ~ nodes^0.98 (memory ^0.40), snapshots^1.02 (memory ^0.10)" in text
    assert text.endswith("faster than linear (exponent above 1.1): flare's time in nodes (1.35 over all sizes)")
    linear = fits.assign(time_exponent=1.0)
    assert scaling.read_scaling({"scaling/scaling_exponents.csv": linear}).endswith("every exponent at most 1.1)")
    steep_end = linear.assign(time_exponent_top=[1.0, 1.0, 1.49, 1.0], memory_exponent_top=0.8)
    assert scaling.read_scaling({"scaling/scaling_exponents.csv": steep_end}).endswith(
        "flare's time in nodes (1.49 over the two largest)"
    )
