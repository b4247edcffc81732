"""bench-flop-counting: what counting graph-convolution FLOPs costs, the same run with counting on and off."""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

import pandas as pd

from dygsched.paper.bench.common import SECTION
from dygsched.paper.common import table_named, write_table
from dygsched.paper.runner import run_or_fail
from dygsched.paper.target import PaperTarget, Regime, Settings, Tables

FLOP_COUNTING_CSV = "bench_flop_counting.csv"


def build_flop_counting(
    results: Path, dataset: str, model: str, epochs: int, world_size: int, pairs: int, extra: tuple[str, ...] = ()
) -> None:
    """The same run with ``metrics.count_flops`` on and off, alternated ``pairs`` times (so drifts of
    the machine hit both alike): the median steady epoch time of each and what counting adds."""
    epoch_times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(pairs):
            for count in (True, False):
                run_id = f"{'on' if count else 'off'}-{pair}"
                overrides = [
                    f"dataset={dataset}",
                    f"model={model}",
                    f"epochs={epochs}",
                    f"world_size={world_size}",
                    f"metrics.count_flops={str(count).lower()}",
                    f"results_dir={scratch}",
                    f"run_id={run_id}",
                    "progress=false",
                    "checkpoint=false",
                    *extra,
                ]
                run_or_fail(overrides, f"bench-flop-counting: the run with count_flops={str(count).lower()}")
                epoch_times[count].append(
                    float(json.loads((Path(scratch) / run_id / "summary.json").read_text())["epoch_time_s"])
                )
    on, off = statistics.median(epoch_times[True]), statistics.median(epoch_times[False])
    overhead = 100 * (on / off - 1)
    table = pd.DataFrame(
        {
            "count_flops": [True, False],
            "median_epoch_s": [on, off],
            "runs": [len(epoch_times[True]), len(epoch_times[False])],
            "overhead_pct": [overhead, float("nan")],  # the baseline has no overhead to report
        }
    )
    write_table(
        table,
        results / FLOP_COUNTING_CSV,
        f"epoch time with counting    {on:.4f} s  (runs: {', '.join(f'{t:.4f}' for t in epoch_times[True])})",
        f"epoch time without counting {off:.4f} s  (runs: {', '.join(f'{t:.4f}' for t in epoch_times[False])})",
        f"counting costs {overhead:+.1f}% of the epoch time",
    )


def read_flop_counting(tables: Tables) -> str:
    table = table_named(tables).set_index("count_flops")
    return f"counting graph-convolution FLOPs costs {table.overhead_pct[True]:+.1f}% of the epoch time"


FLOP_COUNTING = PaperTarget(
    name="bench-flop-counting",
    paper=SECTION.key,
    title="What counting graph-convolution FLOPs costs",
    reproduces="(no paper table)",
    outputs=(FLOP_COUNTING_CSV,),
    repeats="median of 3 alternating pairs of runs",
    minutes=1.6,
    build=build_flop_counting,
    reading=read_flop_counting,
    regime=Regime(
        paper="",
        ours="TGCN on Twitter-Tennis, one process, 6 epochs with and without FLOP counting, 3 alternating pairs",
    ),
    settings=Settings(
        full={"dataset": "twitter_tennis", "model": "tgcn", "epochs": 6, "world_size": 1, "pairs": 3},
        smoke={"pairs": 1, "epochs": 2, "dataset": "synthetic"},
    ),
)
