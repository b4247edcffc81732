"""Where a CPU rank starts: the advisor measures it in a rank started as the launcher starts one."""

import pytest

from dygsched.advise.measure import rank_baseline_bytes


@pytest.mark.slow
def test_a_rank_forked_from_the_fork_server_starts_below_a_fresh_interpreter(compose):
    """A forked rank's resident set holds only the library pages it touched; a fresh interpreter's holds
    every page its imports touched (470 MB against 340 MB for TGCN on Twitter-Tennis here). The advisor
    used the fresh interpreter for every run, and predicted the snapshot strategies' memory 23% high."""
    from dygsched.launch.fork_server import start_fork_server

    run = compose("dataset=twitter_tennis", "model=tgcn")
    forked = rank_baseline_bytes(run.dataset, run.model, False, start_method=start_fork_server())
    fresh = rank_baseline_bytes(run.dataset, run.model, False, start_method="spawn")
    assert forked < fresh - 30 * 2**20, (forked / 2**20, fresh / 2**20)


@pytest.mark.slow
def test_a_rank_that_scores_pairs_starts_its_second_epoch_with_the_evaluations_libraries(compose):
    """A stream rank's peak rose by about 100 MB from its second epoch on (JODIE on the Enron events: 380
    MB in its first, 477-480 after): its first evaluation brought scikit-learn and SciPy in, and the
    epoch's Parquet rows pyarrow's writer. The advisor measured the rank before any of it and priced the
    stream strategies' memory 21-23% low."""
    from dygsched.launch.fork_server import start_fork_server

    run = compose("dataset=events", "model=jodie")
    method = start_fork_server()
    before = rank_baseline_bytes(run.dataset, run.model, False, start_method=method)
    after = rank_baseline_bytes(run.dataset, run.model, True, start_method=method)
    assert after > before + 40 * 2**20, (before / 2**20, after / 2**20)


def test_the_command_measures_where_a_cpu_rank_starts_in_a_fork_of_the_launchers_server(monkeypatch, tmp_path):
    """``dygsched advise`` on a CPU hands the profiler the start method the local launcher uses for CPU ranks."""
    import dygsched.advise.advisor as advisor
    from dygsched.cli import main

    seen = {}

    class Seen(Exception):
        pass

    def profile_cases(*args, rank_start="spawn", **kwargs):
        seen["rank_start"] = rank_start
        raise Seen

    monkeypatch.setattr(advisor, "profile_cases", profile_cases)
    with pytest.raises(Seen):
        main(
            [
                "advise",
                "dataset=synthetic",
                "model=tgcn",
                "--sched",
                "psg",
                "--gpus",
                "1",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
    assert seen["rank_start"] == "forkserver"


@pytest.mark.parametrize(
    "sched, family", [("single", "node_memory"), ("depcache", "node_memory"), ("depcomm", "depcomm"), ("sven", "sven")]
)
def test_the_node_memory_backends_that_compute_unlike_the_reference_are_profiled_apart(compose, sched, family):
    """DepComm's step took 3.5x the reference's epoch on one rank in bench-advise (nothing to move there),
    Sven's 1.4x: one profile for the four priced them alike."""
    from dygsched.advise.cases import family_of
    from dygsched.engine.build import build_strategy

    run = compose("dataset=events", "model=tgn", f"sched={sched}")
    assert family_of(build_strategy(run.sched)) == family
