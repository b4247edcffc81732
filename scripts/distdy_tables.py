"""DistDy's tables and figures (see the `make table-distdy-*` targets).

    python scripts/distdy_tables.py storage   --out results/distdy        # figures 7-9: additive storage vs whole snapshots
    python scripts/distdy_tables.py partition --out results/distdy        # table 3: time to partition and store, cut, balance
    python scripts/distdy_tables.py traffic   results/distdy/traffic      # figure 3: feature-fetch bytes in and out per rank
    python scripts/distdy_tables.py time      results/distdy/time         # figures 4, 5, 10: epoch time, measured and simulated
    python scripts/distdy_tables.py params    --out results/distdy        # figure 11: simulated speedup over M and eta
    python scripts/distdy_tables.py capacity  --out results/distdy        # ours: speedup and balance as D^k grows

`storage`, `partition` and `params` compute in this process from the library (numpy, no ranks).
`traffic` and `time` read a sweep's run folders (2 gloo ranks, every partitioner) and add a simulated
cluster: the per-rank-pair feature rows of an epoch are counted exactly as the strategy samples them
(`dygsched.engine.distdy.cluster.epoch_counts`; a test checks them against what two ranks measure)
for K stores, and priced at a bandwidth with compute costs of a device profile (``--device-profile``:
``cpu`` calibrated on this machine, or the paper's GPUs priced from their datasheets). Simulated
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
from dygsched.data.partition import ONLINE_PARTITIONERS as PARTITIONERS
from dygsched.data.partition.online import (
    over_capacity,
    partition_stream,
    smallest_feasible_factor,
    store_capacity,
)
from dygsched.engine.distdy.cluster import DEVICE_PROFILES, Network, compute_cost, epoch_counts, simulate_epoch
from dygsched.engine.distdy.placement import feature_segments, snapshot_graphs
from dygsched.engine.distdy.sampler import InNeighbours
from dygsched.engine.distdy.strategy import node_split
from dygsched.errors import DygschedError
from dygsched.launch.hydra_app import compose_config
from dygsched.metrics.runs_table import completed_runs

EXPERIMENT = ["+experiment=distdy"]
PAPER_STORAGE = "paper, figures 7-9: additive storage saves more than 70%, up to 92.2% (features and edges)"
PAPER_TABLE3 = (
    "paper, table 3 (seconds to partition and store 500K nodes, storing most of it): Uni500K DistDy 83.78, METIS 105.11, "
    "METIS-layer 119.93 (1.43x DistDy's), hash 78.51; Ex500K DistDy 80.99, METIS 99.35, METIS-layer 118.11, greedy out of memory"
)
PAPER_TRAFFIC = "paper, figure 3: DistDy's feature-fetch traffic is the lowest and the most even over servers"
PAPER_TIME = (
    "paper: up to 1.21x over the baselines at 1 Gbps (figure 4) and 1.39x at 50 Gbps on Ex500K (figure 5); "
    "over METIS 1.23x / 1.25x / 1.11x at w = 4 / 8 / 12 (figure 10)"
)
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
        self.segments = feature_segments(sched["segments"], self.graph.num_features)
        self.snapshot_graphs = snapshot_graphs(self.graph, self.train, sched["batch"], sched["fanouts"], self.segments)
        self.neighbours = [InNeighbours.of(s.edge_index.numpy(), self.graph.num_nodes) for s in self.graph.snapshots]

    def options(self, **changes: float) -> dict:
        """``OnlinePartitioner``'s options as configured, with ``changes``."""
        sched = self.cfg["sched"]
        keys = ("eta", "budget", "clip_rewards", "message_weight", "fetch_weight")
        return {key: changes.get(key, sched[key]) for key in keys}

    def capacity(self, stores: int, factor: float | None = None) -> np.ndarray:
        """``D^k`` as configured (or at ``factor`` times the balanced window storage)."""
        sched = self.cfg["sched"]
        if factor is not None:
            return store_capacity(self.snapshot_graphs, self.cfg["window"], stores, factor)
        return store_capacity(self.snapshot_graphs, self.cfg["window"], stores, sched["capacity_factor"], sched["capacity_bytes"])

    def place(self, stores: int, method: str, factor: float | None = None, **changes: float):
        """Every snapshot's placement on ``stores`` stores, the seconds partitioning took, the capacities."""
        capacity = self.capacity(stores, factor)
        options = self.options(**changes) if method == "distdy" else {}
        if method == "distdy":  # compiles the refinement (once per machine: numba caches it on disk), not timed
            partition_stream(method, self.snapshot_graphs[:1], stores, capacity, self.cfg["window"], **options)
        start = time.perf_counter()
        parts = partition_stream(method, self.snapshot_graphs, stores, capacity, self.cfg["window"], self.cfg["seed"], **options)
        return parts, time.perf_counter() - start, capacity

    def balance(self, parts, stores: int) -> dict[str, float]:
        """Largest store over the mean, the worst step: the window's stored bytes, the newest snapshot's
        nodes and training targets (the targets whose temporal model a store's rank runs), and the
        expected sampled messages its encoders compute over the window."""
        window, worst = self.cfg["window"], dict.fromkeys(("bytes", "nodes", "targets", "messages"), 0.0)
        training = np.zeros(self.graph.num_nodes, dtype=bool)
        training[self.train] = True
        for tau in range(window - 1, len(parts)):
            held = sum(p.stored_bytes for p in parts[tau - window + 1 : tau + 1])
            store = parts[tau].store
            nodes = np.bincount(store[store >= 0], minlength=stores)
            targets = np.bincount(store[(store >= 0) & training], minlength=stores)
            messages = np.zeros(stores)
            for t in range(tau - window + 1, tau + 1):  # a target's encoder runs where it lives in each snapshot
                on = (parts[t].store >= 0) & training & (store >= 0)
                messages += np.bincount(parts[t].store[on], weights=self.snapshot_graphs[t].messages[on], minlength=stores)
            for name, per_store in (("bytes", held), ("nodes", nodes), ("targets", targets), ("messages", messages)):
                worst[name] = max(worst[name], float(np.max(per_store) / max(np.mean(per_store), 1e-12)))
        return {f"balance_{name}": value for name, value in worst.items()}

    def counts(self, placements, stores: int):
        """The counts of one epoch's mini-batches on ``stores`` stores."""
        cfg, sched = self.cfg, self.cfg["sched"]
        return epoch_counts(
            self.graph, placements, stores, self.train, cfg["window"], sched["batch"], sched["batches_per_step"],
            sched["fanouts"], cfg["seed"], neighbours=self.neighbours,
        )  # fmt: skip


class Simulator:
    """Prices an epoch's counted traffic and work for K stores (see dygsched/engine/distdy/cluster.py),
    with the compute costs of a device profile (``cpu``: calibrated here; a GPU's: from its datasheet)."""

    def __init__(self, stream: Stream, profile: str = "cpu") -> None:
        import torch

        from dygsched.engine.worker import build_model

        cfg, graph = stream.cfg, stream.graph
        torch.manual_seed(cfg["seed"])
        model = build_model(cfg["model"], graph)
        self.profile = profile
        self.cost = compute_cost(profile, model, stream.neighbours[:1], graph.snapshots[0].x, cfg["sched"]["fanouts"], cfg["window"])
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
# DistDy as the paper writes it, then with our balance extensions (docs/distdy.md), then the baselines
VARIANTS = (
    ("distdy", {}), ("distdy+messages", {"message_weight": 4.0}), ("distdy+fetch", {"fetch_weight": 16.0}),
    *((m, {}) for m in PARTITIONERS if m != "distdy"),
)  # fmt: skip


def partition(args: argparse.Namespace) -> None:
    rows = []
    for data, hot in (("Uni", 0.0), ("Ex", 0.1)):
        cfg = config(
            f"dataset.num_nodes={args.nodes}",
            f"dataset.num_snapshots={args.snapshots}",
            f"dataset.hot_fraction={hot}",
            f"window={args.window}",
            *args.set,
        )
        stream = Stream(cfg)
        graph = stream.graph
        for stores in args.stores:
            for name, changes in VARIANTS:
                method = name.split("+")[0]
                parts, seconds, capacity = stream.place(stores, method, **changes)
                store_s = _store_all(graph, parts, stores, cfg["window"], stream.segments)
                late = over_capacity(parts, capacity, cfg["window"])
                rows.append({
                    "data": data, "stores": stores, "partitioner": name, "partition_s": seconds, "store_s": store_s,
                    "cut_edges": float(np.mean([p.cut_edges for p in parts])),
                    "cut_weight_share": float(np.mean([1 - p.utility / max(g.weights.sum(), 1e-12) for p, g in zip(parts, stream.snapshot_graphs)])),
                    **stream.balance(parts, stores),
                    "median_passes": float(np.median([p.passes for p in parts])) if method == "distdy" else np.nan,
                    "most_moves": float(max(p.most_moves for p in parts)) if method == "distdy" else np.nan,
                    "out_of_memory": bool(late), "over_capacity_snapshots": len(late),
                })  # fmt: skip
            print(f"{data}: {graph.num_nodes} nodes, {graph.num_snapshots} snapshots, K={stores}, w={args.window}", file=sys.stderr)
    table = pd.DataFrame(rows)
    for baseline in ("metis", "metis_layer"):
        table[f"partition_vs_{baseline}"] = table.partition_s / table.groupby(["data", "stores"]).partition_s.transform(
            lambda s, baseline=baseline: s[table.loc[s.index, "partitioner"] == baseline].iloc[0]
        )
    show(table, args.out, "partition", PAPER_TABLE3,
         "partition_s: the partitioner alone (DistDy: Algorithms 1-3 over every snapshot; numba's one-off compile excluded); "
         "store_s: adding every snapshot to the K additive stores",
         "balance_*: the largest store over the mean at the worst step (window bytes, nodes, training targets, expected sampled messages)",
         "cut_weight_share: the share of the expected feature-fetch weight W_uv on edges between stores",
         "out_of_memory: a store would exceed D^k (the baselines ignore it; DistDy never does)",
         "targets: DistDy balance_bytes <= 1.10 and balance_targets <= 1.20; median passes <= 50; partition_s below metis and metis_layer")  # fmt: skip


def _store_all(graph, parts, stores: int, window: int, segments: int) -> float:
    """Seconds to add every snapshot to the K additive stores."""
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
    row_bytes = stream.graph.num_features * stream.graph.snapshots[0].x.element_size()
    counted = []
    for stores in args.stores:
        for method in PARTITIONERS:
            parts, _, _ = stream.place(stores, method)
            remote = sum(c.remote_fetch_rows() for c in stream.counts(parts, stores)) * row_bytes
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
    simulators = [Simulator(stream, profile) for profile in args.device_profile]
    for simulator in simulators:
        print(f"compute costs ({simulator.profile}): {simulator.cost}", file=sys.stderr)
    rows = []
    for stores in args.stores:
        counts, work = {}, {}
        for name, changes in VARIANTS:
            parts, _, _ = stream.place(stores, name.split("+")[0], **changes)
            counts[name] = stream.counts(parts, stores)
            work[name] = counted_balance(counts[name])
        for simulator in simulators:
            for gbps in args.gbps:
                for method in counts:
                    phases = simulator.epoch(counts[method], gbps)
                    rows.append({"device": simulator.profile, "stores": stores, "gbps": gbps, "partitioner": method,
                                 **phases, **work[method]})  # fmt: skip
    simulated = pd.DataFrame(rows)
    simulated["fetch_share"] = simulated.fetch_s / simulated.epoch_s
    for baseline in PARTITIONERS[1:]:
        simulated[f"speedup_vs_{baseline}"] = (
            simulated.groupby(["device", "stores", "gbps"]).epoch_s.transform(
                lambda s, baseline=baseline: s[simulated.loc[s.index, "partitioner"] == baseline].iloc[0]
            )
            / simulated.epoch_s
        )
    show(simulated, args.results, "time_simulated", PAPER_TIME,
         "device: cpu = compute calibrated on this machine; 1080ti / v100 = compute priced from the paper's cards (docs/distdy.md)",
         "balance_*: the largest rank over the mean, the worst mini-batch, as sampled (targets, encoder messages)",
         "targets: with a GPU profile DistDy >= 1.0x every baseline at 1, 10 and 50 Gbps, >= 1.15x METIS at 1 Gbps")  # fmt: skip


def counted_balance(counts) -> dict[str, float]:
    """The worst mini-batch's largest rank over the mean, in targets and in sampled encoder messages."""
    worst = {"balance_targets": 0.0, "balance_messages": 0.0}
    for step in counts:
        for name, per_rank in (("balance_targets", step.targets), ("balance_messages", step.messages)):
            worst[name] = max(worst[name], float(per_rank.max() / max(per_rank.mean(), 1e-12)))
    return worst


# ---- figure 11 ---------------------------------------------------------------------------------------------
def params(args: argparse.Namespace) -> None:
    cfg = config(*args.set)
    stream = Stream(cfg)
    simulator = Simulator(stream, args.device_profile)
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
                     "median_passes": float(np.median([p.passes for p in parts])),
                     "cut_edges": float(np.mean([p.cut_edges for p in parts])), "epoch_s": epoch, "speedup_vs_metis": metis / epoch})  # fmt: skip
    show(
        pd.DataFrame(rows),
        args.out,
        "params",
        PAPER_PARAMS,
        f"simulated ({args.device_profile}): K={args.stores}, {args.gbps} Gbps, METIS {metis:.3g} s per epoch",
    )


# ---- the capacity sweep (ours) --------------------------------------------------------------------------------
def capacity(args: argparse.Namespace) -> None:
    """DistDy's speedup and balance as ``D^k`` goes from the tightest feasible value to twice it; a baseline
    that would exceed ``D^k`` at some snapshot is out of memory there."""
    cfg = config(*args.set)
    stream = Stream(cfg)
    simulator = Simulator(stream, args.device_profile)
    rows = []
    for stores in args.stores:
        tightest = smallest_feasible_factor(stream.snapshot_graphs, cfg["window"], stores, **stream.options())
        baselines = {}
        for method in PARTITIONERS[1:]:
            parts, _, _ = stream.place(stores, method)
            baselines[method] = (parts, simulator.epoch(stream.counts(parts, stores), args.gbps)["epoch_s"])
        for factor in tightest * np.linspace(1.0, 2.0, args.points):
            parts, seconds, bound = stream.place(stores, "distdy", factor=float(factor))
            epoch = simulator.epoch(stream.counts(parts, stores), args.gbps)["epoch_s"]
            row = {"stores": stores, "factor": float(factor), "of_tightest": float(factor / tightest),
                   "capacity_mb": float(bound[0]) / 2**20, "partition_s": seconds, "epoch_s": epoch,
                   **stream.balance(parts, stores)}  # fmt: skip
            for method, (theirs, their_epoch) in baselines.items():
                oom = bool(over_capacity(theirs, bound, cfg["window"]))
                row[f"speedup_vs_{method}"] = np.nan if oom else their_epoch / epoch  # out of memory: no epoch to compare
                row[f"{method}_out_of_memory"] = oom
            rows.append(row)
    table = pd.DataFrame(rows)
    show(table, args.out, "capacity",
         f"simulated ({args.device_profile}, {args.gbps:g} Gbps); factor: D^k over the balanced window storage; "
         "a baseline out of memory at that D^k has no speedup (NaN)")  # fmt: skip
    _capacity_figure(table, args.out / "capacity.png")


def _capacity_figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, balance) = plt.subplots(1, 2, figsize=(10, 4))
    for stores, group in table.groupby("stores"):
        for method in PARTITIONERS[1:]:
            line = speed.plot(group.of_tightest, group[f"speedup_vs_{method}"], marker="o", label=f"vs {method}, K={stores}")
            oom = group[group[f"{method}_out_of_memory"]]
            speed.scatter(oom.of_tightest, np.ones(len(oom)), marker="x", color=line[0].get_color())
        balance.plot(group.of_tightest, group.balance_bytes, marker="o", label=f"bytes, K={stores}")
        balance.plot(group.of_tightest, group.balance_targets, marker="s", label=f"targets, K={stores}")
    speed.set(xlabel="D^k over the tightest feasible", ylabel="DistDy's speedup (x: baseline out of memory)")
    balance.set(xlabel="D^k over the tightest feasible", ylabel="largest store over mean")
    speed.legend(fontsize=7)
    balance.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"written: {path}")


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
    p.add_argument("--stores", type=int, nargs="+", default=[4, 8])
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
    p = sub.add_parser("capacity")
    p.add_argument("--stores", type=int, nargs="+", default=[4, 8])
    p.add_argument("--gbps", type=float, default=1.0)
    p.add_argument("--points", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("results/distdy"))
    sub.choices["time"].add_argument("--device-profile", nargs="+", default=["cpu", "v100"],
                                     help=f"compute costs: {', '.join(DEVICE_PROFILES)}")  # fmt: skip
    for name in ("params", "capacity"):
        sub.choices[name].add_argument("--device-profile", default="v100", help=f"compute costs: {', '.join(DEVICE_PROFILES)}")
    for name in ("partition", "traffic", "time", "params", "capacity"):
        sub.choices[name].add_argument("--set", nargs="*", default=[], help="config overrides for the counted and simulated part, e.g. sched.capacity_factor=1.0")
    args = parser.parse_args(argv)
    try:
        tables = {"storage": storage, "partition": partition, "traffic": traffic, "time": time_table, "params": params, "capacity": capacity}
        tables[args.table](args)
    except DygschedError as error:
        raise SystemExit(f"distdy_tables: error: {error}") from None


if __name__ == "__main__":
    main()
