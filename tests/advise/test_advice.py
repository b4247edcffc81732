"""The advice: ranked per GPU count, a recommendation that fits, a tidy table and a figure."""

import math

import pandas as pd
import pytest

from dygsched.advise.advice import Advice
from dygsched.advise.hardware import SAME_DEVICE, link_named
from dygsched.advise.pricing import EXACT, STALE, Prediction, Target, refused


def target(gpus, memory=10**9):
    return Target(gpus, 1, link_named("nvlink"), SAME_DEVICE, memory, False, 2)


def prediction(name, gpus, seconds, memory=1e8, exact=True, compute=None):
    compute = seconds * 0.8 if compute is None else compute
    return Prediction(
        name,
        "sequential",
        gpus,
        seconds,
        compute,
        seconds - compute,
        0.0,
        10,
        memory,
        {"allreduce": 1e6} if gpus > 1 else {},
        EXACT if exact else STALE,
        exact,
    )


def advice():
    predictions = (
        prediction("psg", 1, 10.0),
        prediction("greedy", 1, 8.0),
        prediction("psg", 4, 3.0),
        prediction("greedy", 4, 2.0, memory=2e9),  # faster, but does not fit
        prediction("sven", 4, 2.5, exact=False),
        refused("esdg", "sequential", 4, "esdg needs at least 4 snapshots per group"),
    )
    return Advice(predictions, (target(1), target(4)), {"dataset": "synthetic", "model": "tgcn"})


def test_the_table_ranks_what_runs_and_fits_per_gpu_count():
    table = advice().table
    four = table[table.gpus == 4].set_index("sched")
    assert four.loc["sven", "rank"] == 1 and four.loc["psg", "rank"] == 2
    assert not four.loc["greedy", "fits"] and math.isnan(four.loc["greedy", "rank"])
    assert not four.loc["esdg", "runs"] and "at least 4" in four.loc["esdg", "reason"]
    assert math.isnan(four.loc["esdg", "epoch_time_s"])  # not predicted is missing, never 0
    assert four.loc["psg", "traffic_allreduce"] == 1e6


def test_the_recommendation_is_the_fastest_that_fits_and_names_the_exact_alternative():
    line = advice().recommendation()
    assert line.startswith("use sched=sven on 4 GPU(s)")
    assert "1.20x faster than psg" in line and "the fastest exact one is psg" in line


def test_nothing_fits_is_said(tmp_path):
    only = Advice((prediction("psg", 2, 1.0, memory=5e9),), (target(2),), {})
    assert only.recommendation().startswith("no strategy runs and fits on 2 GPU(s)")


def test_written_table_and_figure(tmp_path):
    written = advice().write(tmp_path)
    assert pd.read_parquet(written["advice.parquet"]).shape[0] == 6
    assert written["advice.png"].stat().st_size > 0
    assert "cannot run: esdg needs" in advice().text()


@pytest.mark.parametrize("gpus", [1, 4])
def test_each_gpu_count_has_a_first(gpus):
    table = advice().table
    assert (table[table.gpus == gpus]["rank"] == 1).sum() == 1
