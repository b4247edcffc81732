"""Figure 3: feature-fetch traffic between ranks per partitioner, counted on the sweep's runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.paper.common import span, table_named, times, write_table
from dygsched.paper.distdy.common import ALL_PARTITIONERS, EXPERIMENT, SECTION, SMOKE_SIZES, config, ratio_to, sweep_runs
from dygsched.paper.distdy.simulation import Stream
from dygsched.paper.target import PaperTarget, Settings, Sweep, Tables

TRAFFIC_SWEEP = Sweep(
    folder="distdy/traffic",
    runs=((EXPERIMENT, f"sched.partition={ALL_PARTITIONERS}"),),
    smoke=((EXPERIMENT, "sched.partition=distdy,metis", SMOKE_SIZES),),
)
TRAFFIC_CSV = f"{TRAFFIC_SWEEP.folder}/traffic.csv"
TRAFFIC_PER_RANK_CSV = f"{TRAFFIC_SWEEP.folder}/traffic_per_rank.csv"


def build_traffic(results: Path, *, stores: tuple[int, ...], overrides: tuple[str, ...]) -> None:
    """Feature-fetch bytes in and out per rank: measured over the sweep's runs (2 ranks) and counted
    for K stores per partitioner, each summed over ranks and at the busiest rank."""
    from dygsched.data.partition import ONLINE_PARTITIONERS as PARTITIONERS

    folder = results / TRAFFIC_SWEEP.folder
    rows = []
    for run, cfg in sweep_runs(folder):
        metrics = pd.read_parquet(folder / run["run_id"] / "metrics.parquet")
        epochs = metrics[(metrics.iteration == -1) & (metrics.phase == "train")]
        for metric, way in (("feature_fetch_in_bytes", "in"), ("feature_fetch_out_bytes", "out")):
            per_rank = epochs[epochs.metric == metric].groupby("rank")["value"].mean()
            for rank, value in per_rank.items():
                rows.append(
                    {
                        "stores": int(run["world_size"]),
                        "source": "measured",
                        "partitioner": cfg["sched"]["partition"],
                        "rank": int(rank),
                        "way": way,
                        "mb": value / 2**20,
                    }
                )
    stream = Stream(config(*overrides))
    for count in stores:
        for method in PARTITIONERS:
            parts, _, _ = stream.place(count, method)
            remote = np.sum([c.remote_fetch_rows() for c in stream.counts(parts, count)], axis=0) * stream.row_bytes
            for rank in range(count):
                for way, mb in (("in", remote[rank].sum() / 2**20), ("out", remote[:, rank].sum() / 2**20)):
                    rows.append({"stores": count, "source": "counted", "partitioner": method, "rank": rank, "way": way, "mb": mb})
    table = pd.DataFrame(rows)
    wide = table.pivot_table(index=["stores", "source", "partitioner"], columns="way", values="mb", aggfunc=["sum", "max"])
    wide.columns = [f"{way}_{agg}_mb" for agg, way in wide.columns]
    wide = wide.reset_index()
    wide["vs_distdy"] = wide.in_sum_mb / ratio_to(wide, ["stores", "source"], "in_sum_mb", "partitioner", "distdy")
    write_table(table, results / TRAFFIC_PER_RANK_CSV)
    write_table(
        wide,
        results / TRAFFIC_CSV,
        "per epoch: *_sum over ranks, *_max the busiest rank; target: DistDy's bytes below every baseline's (hot-node graph)",
    )


def read_traffic(tables: Tables) -> str:
    table = table_named(tables, "traffic.csv")
    parts = []
    for (stores, source), group in table.groupby(["stores", "source"]):
        others = group[group.partitioner != "distdy"]
        lowest = bool((others.vs_distdy >= 1).all())  # vs_distdy: bytes fetched over DistDy's
        parts.append(
            f"{int(stores)} stores ({source}): others fetch {span(others.vs_distdy, times)} DistDy's bytes"
            + ("" if lowest else " (DistDy not the lowest)")
        )
    return "; ".join(parts)


TRAFFIC = PaperTarget(
    name="table-distdy-traffic",
    paper=SECTION.key,
    title="Feature-fetch bytes in and out per rank",
    reproduces="DistDy figure 3",
    outputs=(TRAFFIC_CSV, TRAFFIC_PER_RANK_CSV),
    repeats="bytes counted over one run per partitioner",
    minutes=1.3,
    build=build_traffic,
    reading=read_traffic,
    sweep=TRAFFIC_SWEEP,
    settings=Settings(full={"stores": (4, 8), "overrides": ()}, smoke={"stores": (4,), "overrides": (SMOKE_SIZES,)}),
)
