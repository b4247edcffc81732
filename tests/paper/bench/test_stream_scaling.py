"""bench-stream-scaling: each run's size read from its config, the growth fitted."""

from __future__ import annotations

import pandas as pd
import pytest

from dygsched.paper.bench import stream_scaling


def test_stream_scaling_reads_each_runs_size_from_its_config_and_fits_the_growth(tmp_path):
    from dygsched.metrics.runs_table import append_run

    folder = tmp_path / stream_scaling.STREAM_SCALING_DIR
    for number, (model, events, seconds) in enumerate(
        (("tgn", 2000, 1.0), ("jodie", 2000, 0.5), ("tgn", 8000, 4.0), ("jodie", 8000, 1.0))
    ):
        run_id = f"run-{number}"
        (folder / run_id).mkdir(parents=True)
        (folder / run_id / "config.yaml").write_text(f"dataset:\n  name: bipartite\n  num_events: {events}\n")
        append_run(
            folder,
            {
                "run_id": run_id,
                "status": "ok",
                "model": model,
                "epoch_time_s": seconds,
                "peak_rss_bytes": events * 2**20 // 10,
                "eval": {"split": "test", "metric": "ap", "value": 0.9},
            },
        )
    stream_scaling.build_stream_scaling(tmp_path)
    table = pd.read_csv(tmp_path / stream_scaling.STREAM_SCALING_CSV)
    assert table.events.tolist() == [2000, 2000, 8000, 8000] and table.model.tolist() == ["tgn", "jodie", "tgn", "jodie"]
    assert table.peak_rss_mb.tolist() == pytest.approx([200, 200, 800, 800], abs=0.01) and (table.test_ap == 0.9).all()
    assert (tmp_path / stream_scaling.STREAM_SCALING_PNG).stat().st_size > 0
    assert stream_scaling.read_stream_scaling({stream_scaling.STREAM_SCALING_CSV: table}) == (
        "seconds per epoch in one process: tgn 1.00 s at 2,000 events to 4.00 s at 8,000 (time ~ events^1.00); "
        "jodie 0.50 s at 2,000 events to 1.00 s at 8,000 (time ~ events^0.50)"
    )
