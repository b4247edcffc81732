"""Table 3: each partitioner's partitioning time, balance and cut, and the stores' time to hold the window."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dygsched.paper.common import percent, published_value, span, table_named, times, write_table
from dygsched.paper.distdy.common import DATA_LABELS, HOT_FRACTIONS, PARTITIONER_LABELS, SECTION, config, ratio_to, variants
from dygsched.paper.distdy.simulation import Stream
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Regime, Settings, Tables

if TYPE_CHECKING:
    from dygsched.data.partition.online import SnapshotPartition
    from dygsched.data.temporal_graph import TemporalGraph

PARTITION_CSV = "distdy/partition.csv"


def build_partition(
    results: Path, *, nodes: int, snapshots: int, stores: tuple[int, ...], window: int, overrides: tuple[str, ...]
) -> None:
    """Time to partition and to store every snapshot, the cut and the balance, per partitioner, on a
    uniform graph and on a hot-node one."""
    from dygsched.data.partition.online import over_capacity

    rows = []
    for data, hot in HOT_FRACTIONS.items():
        run = config(
            f"dataset.num_nodes={nodes}",
            f"dataset.num_snapshots={snapshots}",
            f"dataset.hot_fraction={hot}",
            f"window={window}",
            *overrides,
        )
        stream = Stream(run)
        for count in stores:
            for name, changes in variants():
                method = name.split("+")[0]
                parts, seconds, capacity = stream.place(count, method, **changes)
                late = over_capacity(parts, capacity, run.window)
                rows.append(
                    {
                        "data": data,
                        "stores": count,
                        "partitioner": name,
                        "partition_s": seconds,
                        "store_s": _store_all(stream.graph, parts, count, run.window, stream.segments),
                        "cut_edges": float(np.mean([p.cut_edges for p in parts])),
                        "cut_weight_share": float(
                            np.mean([1 - p.utility / max(g.weights.sum(), 1e-12) for p, g in zip(parts, stream.snapshot_graphs)])
                        ),
                        **stream.balance(parts, count),
                        "median_passes": float(np.median([p.passes for p in parts])) if method == "distdy" else np.nan,
                        "most_moves": float(max(p.most_moves for p in parts)) if method == "distdy" else np.nan,
                        "out_of_memory": bool(late),
                        "over_capacity_snapshots": len(late),
                    }
                )
            print(
                f"{data}: {stream.graph.num_nodes} nodes, {stream.graph.num_snapshots} snapshots, K={count}, w={run.window}",
                file=sys.stderr,
            )
    table = pd.DataFrame(rows)
    for baseline in ("metis", "metis_layer"):
        table[f"partition_vs_{baseline}"] = table.partition_s / ratio_to(
            table, ["data", "stores"], "partition_s", "partitioner", baseline
        )
    write_table(
        table,
        results / PARTITION_CSV,
        "partition_s: the partitioner alone (DistDy: Algorithms 1-3 over every snapshot; numba's one-off compile excluded); "
        "store_s: adding every snapshot to the K additive stores",
        "balance_*: the largest store over the mean at the worst step "
        "(window bytes, nodes, training targets, expected sampled messages)",
        "cut_weight_share: the share of the expected feature-fetch weight W_uv on edges between stores",
        "out_of_memory: a store would exceed D^k (the baselines ignore it; DistDy never does)",
        "targets: DistDy balance_bytes <= 1.10 and balance_targets <= 1.20; median passes <= 50; "
        "partition_s below metis and metis_layer",
    )


def _store_all(graph: TemporalGraph, parts: Sequence[SnapshotPartition], stores: int, window: int, segments: int) -> float:
    """Seconds to add every snapshot to the K additive stores."""
    from dygsched.data.additive_store import GraphStore

    itemsize = graph.snapshots[0].x.element_size()
    held_stores = [GraphStore(graph.num_features, window, segments, itemsize) for _ in range(stores)]
    seconds = 0.0
    for tau, (snapshot, placement) in enumerate(zip(graph.snapshots, parts, strict=True)):
        x, edges = snapshot.x.numpy(), snapshot.edge_index.numpy()
        start = time.perf_counter()
        for k, store in enumerate(held_stores):
            store.add(tau, np.flatnonzero(placement.store == k), x, edges)
        seconds += time.perf_counter() - start
    return seconds


def read_partition(tables: Tables) -> str:
    table = table_named(tables)
    parts = []
    for (data, stores), group in table.groupby(["data", "stores"], sort=False):
        rows = group.set_index("partitioner")
        distdy, others = rows.loc["distdy"], rows.drop(index=[p for p in rows.index if p.startswith("distdy")])
        oom = [name for name, row in others.iterrows() if row.out_of_memory]
        parts.append(
            f"{data}, K={int(stores)}: DistDy cuts {percent(distdy.cut_weight_share)} of the fetch weight against "
            f"{span(others.cut_weight_share, percent)}, largest store over mean {distdy.balance_bytes:.2f} in bytes and "
            f"{distdy.balance_targets:.2f} in targets, median {distdy.median_passes:g} passes, partitioning "
            f"{times(distdy.partition_vs_metis)} METIS's and {times(distdy.partition_vs_metis_layer)} METIS-layer's time"
            + (f"; out of memory: {', '.join(oom)}" if oom else "")
        )
    return "; ".join(parts)


def _partition_and_store(tables: Tables) -> pd.DataFrame:
    """Seconds to partition and store every snapshot, the paper's datasets as rows and its partitioners
    as columns: the median over the K we ran (the paper prints one K)."""
    table = table_named(tables)
    table = table[table.partitioner.isin(PARTITIONER_LABELS) & table.data.isin(DATA_LABELS)].assign(
        seconds=lambda t: t.partition_s + t.store_s
    )
    frame = table.pivot_table(index="data", columns="partitioner", values="seconds", aggfunc="median")
    frame = frame.rename(index=DATA_LABELS, columns=PARTITIONER_LABELS)
    return frame.loc[
        [d for d in DATA_LABELS.values() if d in frame.index], [p for p in PARTITIONER_LABELS.values() if p in frame.columns]
    ]


def shape_partition(tables: Tables) -> PaperShape:
    """Table 3's layout: each dataset a row ranking the partitioners by the seconds to partition and
    store (ours at 20,000 nodes, the paper's at 500,000: the order is compared, not the seconds)."""
    return PaperShape(_partition_and_store(tables), paper_ref="Table 3", paper_dataset="Uni500K", rank_within="rows", unit="s")


def headlines_partition(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """METIS's and METIS-layer's time to partition and store over DistDy's, on both of table 3's
    datasets (the shape's order compares one): the paper's from its cells, ours the same way."""
    frame = _partition_and_store(tables)
    headlines = []
    for dataset in DATA_LABELS.values():
        for baseline in ("Metis", "Metis-layer"):
            paper = published_value(published, dataset, baseline) / published_value(published, dataset, "DistDy")
            ours = None
            if dataset in frame.index and {baseline, "DistDy"} <= set(frame.columns):
                ours = float(frame.loc[dataset, baseline] / frame.loc[dataset, "DistDy"])
            headlines.append(Headline(f"{baseline} over DistDy, time to partition and store, {dataset}", paper, ours))
    return tuple(headlines)


PARTITION = PaperTarget(
    name="table-distdy-partition",
    paper=SECTION.key,
    title="Time to partition and store every snapshot; cut and balance",
    reproduces="DistDy table 3",
    outputs=(PARTITION_CSV,),
    repeats="one pass per partitioner",
    minutes=1.4,
    build=build_partition,
    reading=read_partition,
    departures=(
        "Partitioning is fast (numba: 0.5-1.1 s for 12 snapshots of 20,000 nodes) and below METIS-layer, but not "
        "below METIS (0.52-0.61 s for the same snapshots); storing dominates the sum as in the paper "
        '(docs/measurements.md, "DistDy").'
    ),
    settings=Settings(
        full={"nodes": 20000, "snapshots": 12, "stores": (4, 8), "window": 4, "overrides": ()},
        smoke={"nodes": 500, "snapshots": 4},
    ),
    shape=shape_partition,
    headlines=headlines_partition,
    regime=Regime(
        paper="Uni500K and Ex500K (500,000 nodes, 2.5 million edges, 20 snapshots; Ex with 10% hot nodes) on cluster 1 "
        "(four 1080Ti servers, so 4 stores), D^k = 100 MB per store.",
        ours="Uni and Ex at 20,000 nodes, 12 snapshots, windows of 4, on K = 4 and 8 stores, D^k 1.75 times the balanced "
        "window storage; every partitioner in one process.",
        why="500,000 nodes over 20 snapshots for every partitioner is beyond 2 CPU cores' time, so table 3's order of the "
        "seconds is compared, not the seconds.",
    ),
)
