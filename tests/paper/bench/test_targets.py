"""The engine's benchmarks as paper targets: project benchmarks with plain settings, and sweeps that compose."""

from __future__ import annotations

from dygsched.paper import bench
from dygsched.paper.bench import node_tasks, stream_accuracy, stream_scaling, unified
from dygsched.paper.published import rows_of

PLAIN = (str, int, float, bool)


def test_each_benchmark_is_a_project_benchmark_with_plain_settings_and_no_published_rows_but_dyglibs_and_utgs():
    assert [t.name for t in bench.TARGETS] == [
        "bench-flop-counting",
        "bench-vs-pygt",
        "bench-tgn-pyg",
        "bench-stream-scaling",
        "bench-scaling",
        "bench-advise",
        "table-stream-accuracy",
        "table-unified",
        "table-node-tasks",
    ]
    accuracy = (stream_accuracy.STREAM_ACCURACY, unified.UNIFIED, node_tasks.NODE_TASKS)
    for paper_target in bench.TARGETS:  # the accuracy targets under a heading of their own, the rest under Engine speed
        assert paper_target.paper == (bench.ACCURACY_SECTION.key if paper_target in accuracy else bench.SECTION.key)
        for value in [*paper_target.settings.full.values(), *paper_target.settings.smoke.values()]:
            assert isinstance(value, PLAIN) or (isinstance(value, tuple) and all(isinstance(v, PLAIN) for v in value)), value
        published = rows_of(paper_target.name)
        verdict = paper_target.shape is not None and paper_target.headlines is not None
        if paper_target is unified.UNIFIED:  # UTG's figures beside ours, with a verdict (test_unified.py)
            assert paper_target.reproduces_paper and verdict and set(published.paper) == {"utg"}
            continue
        assert not paper_target.reproduces_paper and paper_target.shape is None and paper_target.headlines is None
        if paper_target is stream_accuracy.STREAM_ACCURACY:  # DyGLib's UCI figures beside ours, with no verdict
            assert set(published.paper) == {"dyglib"} and len(published) == 15
        elif paper_target is node_tasks.NODE_TASKS:  # DyGLib's Table 15 and TGB's leaderboard, for real streams' rows
            assert set(published.paper) == {"dyglib", "tgb"} and len(published) == 7
        else:
            assert published.empty


def test_the_sweeps_compose_at_full_and_smoke_size(tmp_path):
    """Each multirun of the two sweeps is a valid ``dygsched run -m`` at its first and last point (the
    first and last model): a bad override would otherwise fail only at full size."""
    from dygsched.launch.checks import precheck
    from dygsched.launch.compose import compose_run
    from dygsched.launch.sweeps import sweep_points

    for sweep in (stream_scaling.STREAM_SCALING_SWEEP, stream_accuracy.STREAM_ACCURACY_SWEEP):
        for run in (*sweep.runs, *sweep.smoke):
            assert "model=tgn,jodie,apan" in run or "model=tgn,jodie" in run
            points = sweep_points([*run, f"results_dir={tmp_path}", "progress=false"])
            for point in (points[0], points[-1]):
                precheck(compose_run(point))
    sizes = [next(o for o in run if o.startswith("dataset.num_events=")) for run in stream_scaling.STREAM_SCALING_SWEEP.runs]
    assert sizes == [f"dataset.num_events={n}" for n in (20_000, 80_000, 157_474, 672_447)]  # smallest first
