"""The engine's benchmarks as paper targets: their readings say what hand-made tables show, their
builders turn hand-made runs into the tables and figures, their sweeps compose, and one builds for
real at smoke size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dygsched.paper import engine
from dygsched.paper.build import build_target
from dygsched.paper.published import rows_of

PLAIN = (str, int, float, bool)


def metric_rows(run_id: str, rows: list[tuple[int, int, int, str, str, float]]) -> pd.DataFrame:
    """A run's metrics.parquet from (epoch, iteration, rank, phase, metric, value) rows."""
    frame = pd.DataFrame(rows, columns=["epoch", "iteration", "rank", "phase", "metric", "value"])
    return frame.assign(run_id=run_id)[["run_id", "epoch", "iteration", "rank", "phase", "metric", "value"]]


# ---- the targets ---------------------------------------------------------------------------------
def test_each_benchmark_is_a_project_benchmark_with_plain_settings_and_no_published_rows():
    assert [t.name for t in engine.TARGETS] == [
        "bench-flop-counting", "bench-vs-pygt", "bench-tgn-pyg", "bench-stream-scaling", "bench-scaling", "table-stream-accuracy",
    ]  # fmt: skip
    for paper_target in engine.TARGETS:
        assert paper_target.paper == engine.SECTION.key and not paper_target.reproduces_paper
        assert paper_target.shape is None and paper_target.headlines is None and rows_of(paper_target.name).empty
        for value in [*paper_target.settings.full.values(), *paper_target.settings.smoke.values()]:
            assert isinstance(value, PLAIN) or (isinstance(value, tuple) and all(isinstance(v, PLAIN) for v in value)), value


def test_the_sweeps_compose_at_full_and_smoke_size(tmp_path):
    """Each multirun of the two sweeps is a valid ``dygsched run -m`` at its first and last point (the
    first and last model): a bad override would otherwise fail only at full size."""
    from dygsched.launch.checks import precheck
    from dygsched.launch.compose import compose_config
    from dygsched.launch.sweeps import sweep_points

    for sweep in (engine.STREAM_SCALING_SWEEP, engine.STREAM_ACCURACY_SWEEP):
        for run in (*sweep.runs, *sweep.smoke):
            assert "model=tgn,jodie,apan" in run
            points = sweep_points([*run, f"results_dir={tmp_path}", "progress=false"])
            for point in (points[0], points[-1]):
                precheck(compose_config(point), point)
    sizes = [next(o for o in run if o.startswith("dataset.num_events=")) for run in engine.STREAM_SCALING_SWEEP.runs]
    assert sizes == [f"dataset.num_events={n}" for n in (20_000, 80_000, 157_474, 672_447)]  # smallest first


def test_a_run_that_fails_stops_the_benchmark_with_its_own_one_line_reason():
    assert "unknown key 'dataset.num_nodez'" in engine.run_in_process_of_its_own(["dataset.num_nodez=3"])
    with pytest.raises(engine.BenchmarkRunFailed, match="bench-x: the run failed: dygsched: error: unknown key"):
        engine.run_or_fail(["dataset.num_nodez=3"], "bench-x: the run")


def test_training_curve_gives_each_epochs_time_per_group_and_mean_loss():
    rows = [(epoch, -1, 0, "train", "epoch_time_s", 2.0 * (epoch + 1)) for epoch in (1, 0)]
    rows += [(epoch, iteration, 0, "train", "loss", float(epoch + iteration)) for epoch in (0, 1) for iteration in (0, 1)]
    rows += [(0, -1, 0, "val", "epoch_time_s", 9.0)]
    assert engine.training_curve(metric_rows("r", rows), groups=4) == ([0.5, 1.0], [0.5, 1.5])


# ---- bench-flop-counting ---------------------------------------------------------------------------
def test_flop_counting_alternates_the_two_settings_and_reports_the_overhead_of_counting(tmp_path, monkeypatch):
    order = []

    def fake_run(overrides, what):
        settings = dict(o.split("=", 1) for o in overrides)
        counting = settings["metrics.count_flops"] == "true"
        order.append(counting)
        folder = Path(settings["results_dir"]) / settings["run_id"]
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"epoch_time_s": (1.2 if counting else 1.0) + 0.01 * len(order)}))

    monkeypatch.setattr(engine, "run_or_fail", fake_run)
    engine.build_flop_counting(tmp_path, dataset="synthetic", model="tgcn", epochs=2, world_size=1, pairs=3)
    assert order == [True, False] * 3
    table = pd.read_csv(tmp_path / engine.FLOP_COUNTING_CSV)
    assert table.median_epoch_s.tolist() == pytest.approx([1.23, 1.04]) and table.runs.tolist() == [3, 3]
    assert np.isnan(table.overhead_pct[1])
    assert engine.read_flop_counting({engine.FLOP_COUNTING_CSV: table}) == "counting graph-convolution FLOPs costs +18.3% of the epoch time"


# ---- bench-vs-pygt and bench-tgn-pyg ---------------------------------------------------------------
def test_vs_pygt_and_tgn_pyg_readings_give_dygscheds_ratio():
    table = pd.DataFrame({"dataset": ["twitter_tennis", "synthetic20k"], "model": ["tgcn", "wdgcn"], "ratio": [0.5, 1.25]})
    assert engine.read_vs_pygt({"bench_vs_pygt.csv": table}) == (
        "dygsched's time per training group against the plain PyG-Temporal loop: "
        "tgcn on twitter_tennis 0.50x, wdgcn on synthetic20k 1.25x (below 1x: dygsched faster)"
    )
    tgn = pd.DataFrame({"implementation": ["pyg_modules", "dygsched"], "epoch_s": [2.0, 2.6], "ratio": [1.3, 1.3]})
    assert engine.read_tgn_pyg({"bench_tgn_pyg.csv": tgn}) == "the reference TGN takes 1.30x the epoch time of a TGN of PyG's modules"


def test_vs_pygt_refuses_an_unknown_model_before_it_runs_anything(tmp_path):
    from dygsched.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown model 'gcn'"):
        engine.build_vs_pygt(tmp_path, datasets=("twitter_tennis",), models=("gcn",), epochs=1, hidden=8, layers=1, window=4, seed=0)
    assert engine.model_width("evolvegcn_h", 12, 64) == 12 and engine.model_width("tgcn", 12, 64) == 64


# ---- bench-stream-scaling -------------------------------------------------------------------------
def test_stream_scaling_reads_each_runs_size_from_its_config_and_fits_the_growth(tmp_path):
    from dygsched.metrics.runs_table import append_run

    folder = tmp_path / engine.STREAM_SCALING_DIR
    for number, (model, events, seconds) in enumerate((("tgn", 2000, 1.0), ("jodie", 2000, 0.5), ("tgn", 8000, 4.0), ("jodie", 8000, 1.0))):
        run_id = f"run-{number}"
        (folder / run_id).mkdir(parents=True)
        (folder / run_id / "config.yaml").write_text(f"dataset:\n  name: bipartite\n  num_events: {events}\n")
        append_run(folder, {
            "run_id": run_id, "status": "ok", "model": model, "epoch_time_s": seconds, "peak_rss_bytes": events * 2**20 // 10,
            "eval": {"split": "test", "metric": "ap", "value": 0.9},
        })  # fmt: skip
    engine.build_stream_scaling(tmp_path)
    table = pd.read_csv(tmp_path / engine.STREAM_SCALING_CSV)
    assert table.events.tolist() == [2000, 2000, 8000, 8000] and table.model.tolist() == ["tgn", "jodie", "tgn", "jodie"]
    assert table.peak_rss_mb.tolist() == pytest.approx([200, 200, 800, 800], abs=0.01) and (table.test_ap == 0.9).all()
    assert (tmp_path / engine.STREAM_SCALING_PNG).stat().st_size > 0
    assert engine.read_stream_scaling({engine.STREAM_SCALING_CSV: table}) == (
        "seconds per epoch in one process: tgn 1.00 s at 2,000 events to 4.00 s at 8,000 (time ~ events^1.00); "
        "jodie 0.50 s at 2,000 events to 1.00 s at 8,000 (time ~ events^0.50)"
    )


# ---- bench-scaling --------------------------------------------------------------------------------
def test_last_epoch_takes_the_slowest_rank_and_each_ranks_peak():
    rows = [(epoch, -1, rank, "train", "epoch_time_s", 1.0 + epoch + rank) for epoch in (0, 1) for rank in (0, 1)]
    rows += [(1, -1, rank, "train", "peak_rss_bytes", (rank + 1) * 100 * 2**20) for rank in (1, 0)]
    rows += [(1, 3, 0, "train", "epoch_time_s", 99.0)]  # an iteration's row, not the epoch's
    rows += [(0, -1, 0, "train", "switch_epoch", 1.0)]  # greedy ran its plan from epoch 1
    last = engine.last_epoch(metric_rows("r", rows))
    assert last == {
        "epoch": 1, "plan_from_epoch": 1, "epoch_time_s": 3.0, "peak_rss_mb": 200.0, "peak_rss_mb_per_rank": "100/200", "error": "",
    }  # fmt: skip


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
        rows = [(1, -1, rank, "train", metric, value) for rank in (0, 1) for metric, value in (("epoch_time_s", seconds), ("peak_rss_bytes", nodes * snapshots * 2**20))]
        metric_rows(settings["run_id"], rows).to_parquet(folder / "metrics.parquet")
        return ""

    monkeypatch.setattr(engine, "run_in_process_of_its_own", fake_process)
    engine.build_scaling(
        tmp_path, scheds=("psg", "greedy"), nodes=(100, 200, 400), snapshots=(10, 20), base_nodes=100, base_snapshots=10,
        avg_degree=2.0, epochs=2, seed=0,
    )  # fmt: skip
    assert ran == [(s, n, t) for n, t in ((100, 10), (100, 20), (200, 10), (400, 10)) for s in ("psg", "greedy")]
    table = pd.read_csv(tmp_path / engine.SCALING_CSV)
    failed = table[(table.sched == "greedy") & (table.nodes == 400)].iloc[0]
    assert failed.error == "out of memory" and np.isnan(failed.epoch_time_s)
    fits = pd.read_csv(tmp_path / engine.SCALING_EXPONENTS_CSV).set_index(["sched", "axis"])
    assert fits.loc[("psg", "nodes"), "time_exponent"] == pytest.approx(2.0) and fits.loc[("psg", "nodes"), "memory_exponent"] == pytest.approx(1.0)
    assert fits.loc[("psg", "snapshots"), "time_exponent"] == pytest.approx(1.0) and fits.loc[("greedy", "nodes"), "points"] == 2
    assert (tmp_path / engine.SCALING_PNG).stat().st_size > 0
    text = engine.read_scaling({engine.SCALING_CSV: table, engine.SCALING_EXPONENTS_CSV: fits.reset_index()})
    assert "psg time ~ nodes^2.00 (memory ^1.00), snapshots^1.00 (memory ^1.00)" in text and "psg's time in nodes (2.00 over all sizes" in text


def test_scaling_reading_names_the_super_linear_exponents_only():
    fits = pd.DataFrame({
        "sched": ["psg", "psg", "flare", "flare"], "axis": ["nodes", "snapshots"] * 2,
        "time_exponent": [0.98, 1.02, 1.35, 0.9], "memory_exponent": [0.4, 0.1, 0.5, 0.2],
    })  # fmt: skip
    text = engine.read_scaling({"scaling/scaling.csv": pd.DataFrame(), "scaling/scaling_exponents.csv": fits})
    assert "psg time ~ nodes^0.98 (memory ^0.40), snapshots^1.02 (memory ^0.10)" in text
    assert text.endswith("faster than linear (exponent above 1.1): flare's time in nodes (1.35 over all sizes)")
    linear = fits.assign(time_exponent=1.0)
    assert engine.read_scaling({"scaling/scaling_exponents.csv": linear}).endswith("every exponent at most 1.1)")
    steep_end = linear.assign(time_exponent_top=[1.0, 1.0, 1.49, 1.0], memory_exponent_top=0.8)
    assert engine.read_scaling({"scaling/scaling_exponents.csv": steep_end}).endswith("flare's time in nodes (1.49 over the two largest)")


# ---- table-stream-accuracy ------------------------------------------------------------------------
def accuracy_metrics(run_id: str, val_ap: list[float], test_ap: list[float]) -> pd.DataFrame:
    rows = []
    for epoch, (val, test) in enumerate(zip(val_ap, test_ap)):
        rows += [(epoch, -1, 0, "val", "ap", val), (epoch, -1, 0, "test", "ap", test), (epoch, -1, 0, "test", "auc", test + 0.01)]
        rows += [(epoch, -1, 0, "test", "ap_inductive", test - 0.1), (epoch, -1, 0, "train", "epoch_time_s", 2.0 + epoch)]
    return metric_rows(run_id, rows)


def test_stream_accuracy_reads_each_run_at_its_best_validation_epoch_and_averages_the_seeds(tmp_path):
    from dygsched.metrics.runs_table import append_run

    folder = tmp_path / engine.STREAM_ACCURACY_DIR
    cases = {  # run -> (model, seed, validation AP per epoch, test AP per epoch)
        "a": ("tgn", 0, [0.6, 0.8, 0.7], [0.5, 0.9, 0.95]),  # best validation at epoch 1: test 0.9, not the last epoch's 0.95
        "b": ("tgn", 1, [0.9, 0.8, 0.7], [0.7, 0.8, 0.9]),  # best at epoch 0: test 0.7
        "c": ("jodie", 0, [0.5, 0.5, 0.6], [0.6, 0.6, 0.6]),
    }
    for run_id, (model, seed, val, test) in cases.items():
        (folder / run_id).mkdir(parents=True)
        accuracy_metrics(run_id, val, test).to_parquet(folder / run_id / "metrics.parquet")
        append_run(folder, {"run_id": run_id, "status": "ok", "dataset": "collegemsg", "model": model, "seed": seed, "epochs": 3})
    engine.build_stream_accuracy(tmp_path)
    per_run = pd.read_csv(tmp_path / engine.STREAM_ACCURACY_RUNS_CSV)
    assert per_run[per_run.model == "tgn"].epoch.tolist() == [1, 0]
    table = pd.read_csv(tmp_path / engine.STREAM_ACCURACY_CSV)
    tgn_ap = table[(table.model == "tgn") & (table.metric == "ap") & (table.setting == "transductive")].iloc[0]
    assert tgn_ap["mean"] == pytest.approx(0.8) and tgn_ap["std"] == pytest.approx(np.std([0.9, 0.7], ddof=1)) and tgn_ap.seeds == 2
    inductive = table[(table.model == "tgn") & (table.metric == "ap") & (table.setting == "inductive")].iloc[0]
    assert inductive["mean"] == pytest.approx(0.7) and (table.epochs == 3).all()
    missing = table[(table.metric == "auc") & (table.setting == "inductive")]  # never recorded: missing, never 0
    assert missing["mean"].isna().all() and (missing.seeds == 0).all()
    assert engine.read_stream_accuracy({engine.STREAM_ACCURACY_CSV: table}) == (
        "test AP at the best validation epoch, mean ± std over seeds: collegemsg transductive: tgn 0.800 ± 0.141, jodie 0.600; "
        "collegemsg inductive: tgn 0.700 ± 0.141, jodie 0.500"
    )


# ---- one real build ------------------------------------------------------------------------------
@pytest.mark.slow
def test_flop_counting_builds_at_smoke_size(tmp_path):
    """Two real runs (with and without counting) on the synthetic graph: about 40 s on 2 cores, more when they are shared."""
    build_target(engine.FLOP_COUNTING, tmp_path, smoke=True)
    table = pd.read_csv(tmp_path / engine.FLOP_COUNTING_CSV)
    assert table.count_flops.tolist() == [True, False] and (table.median_epoch_s > 0).all() and table.runs.tolist() == [1, 1]
    assert "counting graph-convolution FLOPs costs" in engine.read_flop_counting({engine.FLOP_COUNTING_CSV: table})
