"""DistDy's tables and figures (see the `make table-distdy-*` targets).

    python scripts/distdy_tables.py storage   --out results/distdy        # figures 7-9: additive storage vs whole snapshots
    python scripts/distdy_tables.py partition --out results/distdy        # table 3: time to partition and store, cut, balance
    python scripts/distdy_tables.py traffic   results/distdy/traffic      # figure 3: feature-fetch bytes in and out per rank
    python scripts/distdy_tables.py time      results/distdy/time         # figures 4, 5, 10: epoch time, measured and simulated
    python scripts/distdy_tables.py params    --out results/distdy        # figure 11: simulated speedup over M and eta

`storage`, `partition` and `params` compute in this process from the library (numpy, no ranks).
`traffic` and `time` read a sweep's run folders (2 gloo ranks, every partitioner) and add a simulated
cluster: the per-rank-pair feature rows of an epoch are counted exactly as the strategy samples them
(`dygsched.engine.distdy.cluster.epoch_counts`; a test checks them against what two ranks measure)
for K stores, and priced at a bandwidth with compute costs calibrated on this machine. Simulated
figures compare partitions; they do not predict a real cluster's seconds. Each table is printed
and written as CSV.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.data.additive_store import GraphStore, history_storage
from dygsched.data.loading import load_data
from dygsched.engine.distdy.cluster import Network, calibrate, epoch_counts, simulate_epoch
from dygsched.engine.distdy.placement import snapshot_graphs
from dygsched.engine.distdy.sampler import InNeighbours
from dygsched.engine.distdy.strategy import node_split
from dygsched.errors import DygschedError
from dygsched.launch.hydra_app import compose_config
from dygsched.metrics.runs_table import completed_runs
from dygsched.sched.online_partition import PARTITIONERS, partition_stream, store_capacity

EXPERIMENT = ["+experiment=distdy"]
PAPER_STORAGE = "paper, figures 7-9: additive storage saves more than 70%, up to 92.2% (features and edges)"
PAPER_TABLE3 = "paper, table 3 (time to partition and store every snapshot): DistDy 83.8 s, hash 78.5 s, METIS-layer above both"
PAPER_TRAFFIC = "paper, figure 3: DistDy's feature-fetch traffic is the lowest and the most even over servers"
PAPER_TIME = "paper, figures 4, 5, 10: DistDy up to 1.39x faster than METIS at 1 Gbps, the gap closing as bandwidth grows"
PAPER_PARAMS = "paper, figure 11: speedup grows with M up to about 100-300 passes; eta near 6 is best"


# ---- shared ---------------------------------------------------------------------------------------------
def config(*overrides: str, experiment: bool = True) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(compose_config([*(EXPERIMENT if experiment else []), *overrides]), resolve=True)


class Stream:
    """One experiment's graph and what every partitioner and count needs of it, computed once."""

    def __init__(self, cfg: dict) -> None:
        sched = cfg["sched"]
        self.cfg, self.graph = cfg, load_data(cfg["dataset"])
        self.train, _, _ = node_split(self.graph.num_nodes, cfg["split"]["train"], cfg["split"]["val"], cfg["seed"])
        self.snapshot_graphs = snapshot_graphs(self.graph, self.train, sched["batch"], sched["fanouts"], sched["segments"])
        self.neighbours = [InNeighbours.of(s.edge_index.numpy(), self.graph.num_nodes) for s in self.graph.snapshots]

    def place(self, stores: int, method: str, budget: int | None = None, eta: float | None = None):
        """Every snapshot's placement on ``stores`` stores, the seconds partitioning took, the capacities."""
        cfg, sched = self.cfg, self.cfg["sched"]
        capacity = store_capacity(self.snapshot_graphs, cfg["window"], stores, sched["capacity_factor"])
        start = time.perf_counter()
        parts = partition_stream(
            method, self.snapshot_graphs, stores, capacity, cfg["window"], sched["eta"] if eta is None else eta,
            sched["budget"] if budget is None else budget, sched["clip_rewards"], cfg["seed"],
        )  # fmt: skip
        return parts, time.perf_counter() - start, capacity

    def counts(self, placements, stores: int):
        """The counts of one epoch's mini-batches on ``stores`` stores."""
        cfg, sched = self.cfg, self.cfg["sched"]
        return epoch_counts(
            self.graph, placements, stores, self.train, cfg["window"], sched["batch"], sched["batches_per_step"],
            sched["fanouts"], cfg["seed"], neighbours=self.neighbours,
        )  # fmt: skip


class Simulator:
    """Prices an epoch's counted traffic and work for K stores (see dygsched/engine/distdy/cluster.py)."""

    def __init__(self, stream: Stream) -> None:
        import torch

        from dygsched.engine.worker import build_model

        cfg, graph = stream.cfg, stream.graph
        torch.manual_seed(cfg["seed"])
        model = build_model(cfg["model"], graph)
        self.cost = calibrate(model, stream.neighbours[:1], graph.snapshots[0].x, cfg["sched"]["fanouts"], cfg["window"])
        self.row_bytes = graph.num_features * graph.snapshots[0].x.element_size()
        self.embedding_bytes = model.hidden_channels * 4
        self.parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def epoch(self, counts, gbps: float) -> dict[str, float]:
        return simulate_epoch(
            counts, self.cost, Network(gbps, latency_s=50e-6), self.row_bytes, self.embedding_bytes, self.parameter_bytes
        )


def epoch_rows(metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    return metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric)]


def show(table: pd.DataFrame, out: Path, name: str, *notes: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    for note in notes:
        print(note)
    table.to_csv(out / f"{name}.csv", index=False)
    print(f"written: {out / f'{name}.csv'}")


# ---- figures 7-9 -----------------------------------------------------------------------------------------
def storage(args: argparse.Namespace) -> None:
    n, t = args.nodes, args.snapshots
    uniform = ["dataset=uniform", f"dataset.num_nodes={n}", f"dataset.num_snapshots={t}", "dataset.hot_fraction=0.0"]
    settings = [(f"uniform {d}, change 0.3/0.3", [f"dataset.density={d}"]) for d in ("sparse", "medium", "dense")]
    settings += [(f"uniform sparse, feature change {c}", [f"dataset.feature_change={c}"]) for c in (0.1, 0.5, 0.7)]
    settings += [(f"uniform sparse, edge change {c}", [f"dataset.edge_change={c}"]) for c in (0.1, 0.5, 0.7)]
    settings += [("uniform sparse, sparse change 0.05/0.05", ["dataset.feature_change=0.05", "dataset.edge_change=0.05"])]
    long = [f"dataset.num_snapshots={4 * t}", "dataset.feature_change=0.02", "dataset.edge_change=0.02"]
    settings += [(f"uniform sparse, sparse change 0.02/0.02, {4 * t} snapshots", long)]
    rows = []
    for label, extra in settings:
        rows.append(_storage_row(label, config(*uniform, *extra), args.segments))
    for label, extra, segments in (
        ("enron (edge list, 12 snapshots)", ["dataset=edgelist", "dataset.num_snapshots=12"], 2),
        ("twitter_tennis", ["dataset=twitter_tennis"], 4),
    ):
        rows.append(_storage_row(label, config(*extra, experiment=False), segments))
    show(pd.DataFrame(rows), args.out, "storage", PAPER_STORAGE,
         "targets: >= 90% saved with sparse change, >= 70% on the default synthetic setting (uniform sparse, change 0.3/0.3)",
         "bounds: an unchanged row still costs a reference per segment (S x 8 bytes), and the first snapshot is stored whole")  # fmt: skip


def _storage_row(label: str, cfg: dict, segments: int) -> dict:
    graph = load_data(cfg["dataset"])
    segments = min(segments, graph.num_features)
    history = history_storage(
        [(s.x.numpy(), s.edge_index.numpy(), np.flatnonzero(s.node_mask.numpy())) for s in graph.snapshots], segments
    )  # checks every snapshot reconstructs exactly
    full = history.full_feature_bytes + history.full_edge_bytes
    return {
        "setting": label, "nodes": graph.num_nodes, "snapshots": graph.num_snapshots, "features": graph.num_features,
        "segments": segments, "full_mb": full / 2**20,
        "saved_features_only": history.saving(True, False), "saved_edges_only": history.saving(False, True),
        "saved_both": history.saving(True, True), "store_s": history.store_s, "reconstruct_s": history.reconstruct_s,
    }  # fmt: skip


# ---- table 3 ---------------------------------------------------------------------------------------------
def partition(args: argparse.Namespace) -> None:
    rows = []
    for data, hot in (("Uni", 0.0), ("Ex", 0.1)):
        cfg = config(
            f"dataset.num_nodes={args.nodes}",
            f"dataset.num_snapshots={args.snapshots}",
            f"dataset.hot_fraction={hot}",
            f"window={args.window}",
        )
        stream = Stream(cfg)
        graph = stream.graph
        for method in PARTITIONERS:
            parts, seconds, capacity = stream.place(args.stores, method)
            store_s, held = _store_all(graph, parts, args.stores, cfg)
            late = [tau for tau in range(len(parts)) if (held[tau] > capacity * (1 + 1e-12)).any()]
            rows.append({
                "data": data, "partitioner": method, "partition_s": seconds, "store_s": store_s,
                "total_s": seconds + store_s, "per_snapshot_s": (seconds + store_s) / graph.num_snapshots,
                "cut_edges": float(np.mean([p.cut_edges for p in parts])),
                "balance": float(np.mean([h.max() / h.mean() for h in held])),
                "over_capacity_snapshots": len(late),
            })  # fmt: skip
        print(
            f"{data}: {graph.num_nodes} nodes, {graph.num_snapshots} snapshots, K={args.stores}, w={args.window}", file=sys.stderr
        )
    table = pd.DataFrame(rows)
    table["vs_hash"] = table.total_s / table.groupby("data").total_s.transform(
        lambda s: s[table.loc[s.index, "partitioner"] == "hash"].iloc[0]
    )
    show(table, args.out, "partition", PAPER_TABLE3,
         "balance: the largest store's bytes over the mean, averaged over windows; over_capacity_snapshots: where a store would exceed D^k",
         "target: DistDy within 1.1x of hash per snapshot, and below metis_layer")  # fmt: skip


def _store_all(graph, parts, stores: int, cfg: dict) -> tuple[float, list[np.ndarray]]:
    """Seconds to add every snapshot to the K additive stores, and the bytes each holds after each."""
    itemsize = graph.snapshots[0].x.element_size()
    held_stores = [GraphStore(graph.num_features, cfg["window"], cfg["sched"]["segments"], itemsize) for _ in range(stores)]
    seconds, held = 0.0, []
    for tau, (snapshot, placement) in enumerate(zip(graph.snapshots, parts, strict=True)):
        x, edges = snapshot.x.numpy(), snapshot.edge_index.numpy()
        start = time.perf_counter()
        for k, store in enumerate(held_stores):
            store.add(tau, np.flatnonzero(placement.store == k), x, edges)
        seconds += time.perf_counter() - start
        held.append(np.array([(b := s.nbytes())["features_full"] + b["features_additive"] for s in held_stores], dtype=float))
    return seconds, held


# ---- figure 3 --------------------------------------------------------------------------------------------
def traffic(args: argparse.Namespace) -> None:
    rows = []
    for summary, metrics, run_cfg in completed_runs(args.results, "distdy_tables"):
        for metric, way in (("feature_fetch_in_bytes", "in"), ("feature_fetch_out_bytes", "out")):
            per_rank = epoch_rows(metrics, metric).groupby("rank")["value"].mean()
            for rank, value in per_rank.items():
                rows.append(
                    {
                        "stores": summary["world_size"],
                        "source": "measured",
                        "partitioner": run_cfg["sched"]["partition"],
                        "rank": int(rank),
                        "way": way,
                        "mb": value / 2**20,
                    }
                )
    measured = pd.DataFrame(rows)
    cfg = config(*args.set)
    stream = Stream(cfg)
    simulator = Simulator(stream)
    counted = []
    for stores in args.stores:
        for method in PARTITIONERS:
            parts, _, _ = stream.place(stores, method)
            remote = sum(c.remote_fetch_rows() for c in stream.counts(parts, stores)) * simulator.row_bytes
            for rank in range(stores):
                counted.append(
                    {
                        "stores": stores,
                        "source": "counted",
                        "partitioner": method,
                        "rank": rank,
                        "way": "in",
                        "mb": remote[rank].sum() / 2**20,
                    }
                )
                counted.append(
                    {
                        "stores": stores,
                        "source": "counted",
                        "partitioner": method,
                        "rank": rank,
                        "way": "out",
                        "mb": remote[:, rank].sum() / 2**20,
                    }
                )
    table = pd.concat([measured, pd.DataFrame(counted)])
    wide = table.pivot_table(index=["stores", "source", "partitioner"], columns="way", values="mb", aggfunc=["sum", "max"])
    wide.columns = [f"{way}_{agg}_mb" for agg, way in wide.columns]
    wide = wide.reset_index()
    wide["vs_distdy"] = wide.in_sum_mb / wide.groupby(["stores", "source"]).in_sum_mb.transform(
        lambda s: s[wide.loc[s.index, "partitioner"] == "distdy"].iloc[0]
    )
    show(table, args.results, "traffic_per_rank")
    show(
        wide,
        args.results,
        "traffic",
        PAPER_TRAFFIC,
        "per epoch: *_sum over ranks, *_max the busiest rank; target: DistDy's bytes below every baseline's (hot-node graph)",
    )


# ---- figures 4, 5, 10 --------------------------------------------------------------------------------------
def time_table(args: argparse.Namespace) -> None:
    rows = []
    for summary, _, cfg in completed_runs(args.results, "distdy_tables"):
        rows.append({"window": cfg["window"], "partitioner": cfg["sched"]["partition"], "epoch_time_s": summary.get("epoch_time_s"),
                     "test": (summary.get("eval") or {}).get("value")})  # fmt: skip
    measured = pd.DataFrame(rows).sort_values(["window", "partitioner"])
    measured["speedup_vs_metis"] = (
        measured.groupby("window").epoch_time_s.transform(lambda s: s[measured.loc[s.index, "partitioner"] == "metis"].iloc[0])
        / measured.epoch_time_s
    )
    show(
        measured,
        args.results,
        "time_measured",
        "2 gloo ranks on one machine: feature fetches cross shared memory, so partitions differ little here",
    )
    cfg = config(*args.set)
    stream = Stream(cfg)
    simulator = Simulator(stream)
    print(f"calibrated compute: {simulator.cost}", file=sys.stderr)
    rows = []
    for stores in args.stores:
        counts = {}
        for method in PARTITIONERS:
            parts, _, _ = stream.place(stores, method)
            counts[method] = stream.counts(parts, stores)
        for gbps in args.gbps:
            for method in PARTITIONERS:
                phases = simulator.epoch(counts[method], gbps)
                rows.append({"stores": stores, "gbps": gbps, "partitioner": method, **phases})
    simulated = pd.DataFrame(rows)
    simulated["speedup_vs_metis"] = (
        simulated.groupby(["stores", "gbps"]).epoch_s.transform(
            lambda s: s[simulated.loc[s.index, "partitioner"] == "metis"].iloc[0]
        )
        / simulated.epoch_s
    )
    show(simulated, args.results, "time_simulated", PAPER_TIME, "target: DistDy >= 1.2x faster than METIS at 1 Gbps")


# ---- figure 11 ---------------------------------------------------------------------------------------------
def params(args: argparse.Namespace) -> None:
    cfg = config(*args.set)
    stream = Stream(cfg)
    simulator = Simulator(stream)
    parts, _, _ = stream.place(args.stores, "metis")
    metis = simulator.epoch(stream.counts(parts, args.stores), args.gbps)["epoch_s"]
    rows = []
    grid = [("budget", m, m, cfg["sched"]["eta"]) for m in args.budgets] + [
        ("eta", e, cfg["sched"]["budget"], e) for e in args.etas
    ]
    for swept, value, budget, eta in grid:
        parts, seconds, _ = stream.place(args.stores, "distdy", budget=budget, eta=eta)
        epoch = simulator.epoch(stream.counts(parts, args.stores), args.gbps)["epoch_s"]
        rows.append({"swept": swept, "value": value, "budget": budget, "eta": eta, "partition_s": seconds,
                     "cut_edges": float(np.mean([p.cut_edges for p in parts])), "epoch_s": epoch, "speedup_vs_metis": metis / epoch})  # fmt: skip
    show(
        pd.DataFrame(rows),
        args.out,
        "params",
        PAPER_PARAMS,
        f"simulated: K={args.stores}, {args.gbps} Gbps, METIS {metis:.3g} s per epoch",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="table", required=True)
    p = sub.add_parser("storage")
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--snapshots", type=int, default=12)
    p.add_argument("--segments", type=int, default=4)
    p.add_argument("--out", type=Path, default=Path("results/distdy"))
    p = sub.add_parser("partition")
    p.add_argument("--nodes", type=int, default=20000)
    p.add_argument("--snapshots", type=int, default=12)
    p.add_argument("--stores", type=int, default=4)
    p.add_argument("--window", type=int, default=4)
    p.add_argument("--out", type=Path, default=Path("results/distdy"))
    for name in ("traffic", "time"):
        p = sub.add_parser(name)
        p.add_argument("results", type=Path)
        p.add_argument("--stores", type=int, nargs="+", default=[4, 8] if name == "traffic" else [4, 8, 16])
        p.add_argument("--gbps", type=float, nargs="+", default=[1, 10, 50, 100])
    p = sub.add_parser("params")
    p.add_argument("--stores", type=int, default=8)
    p.add_argument("--gbps", type=float, default=1.0)
    p.add_argument("--budgets", type=int, nargs="+", default=[1, 5, 20, 100, 300])
    p.add_argument("--etas", type=float, nargs="+", default=[1, 2, 4, 6, 8, 12])
    p.add_argument("--out", type=Path, default=Path("results/distdy"))
    for name in ("traffic", "time", "params"):
        sub.choices[name].add_argument("--set", nargs="*", default=[], help="config overrides for the counted and simulated part, e.g. sched.capacity_factor=1.0")
    args = parser.parse_args(argv)
    try:
        {"storage": storage, "partition": partition, "traffic": traffic, "time": time_table, "params": params}[args.table](args)
    except DygschedError as error:
        raise SystemExit(f"distdy_tables: error: {error}") from None


if __name__ == "__main__":
    main()
