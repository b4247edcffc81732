"""DistDy: online partitioning of a growing graph and additive storage.

``storage``, ``partition``, ``params`` and ``capacity`` compute in this process from the library
(numpy, no ranks). ``traffic`` and ``time`` read a sweep's run folders (2 gloo ranks, every
partitioner) and add a simulated cluster: the per-rank-pair feature rows of an epoch are counted
exactly as the strategy samples them (``dygsched.engine.distdy.cluster.epoch_counts``; a test checks
them against what two ranks measure) for K stores, and priced at a bandwidth with the compute costs of
a device profile (``cpu`` calibrated on this machine, or the paper's GPUs priced from their
datasheets). Simulated figures compare partitions; they do not predict a real cluster's seconds.

The library (and torch) is imported inside the functions that measure: listing the targets and
rendering the report import none of it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dygsched.paper.common import completed_runs, percent, published_value, span, table_named, times, write_table
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Section, Settings, Sweep, Tables

SECTION = Section("distdy", "DistDy", "Online partitioning of a growing graph, additive storage, sampled training over graph stores.")

EXPERIMENT = "+experiment=distdy"
SMOKE_SIZES = "+smoke=distdy"  # conf/smoke/distdy.yaml: 600 nodes, 6 snapshots, one epoch
ALL_PARTITIONERS = "distdy,metis,hash,greedy,metis_layer"

# our partitioner names -> the paper's column labels (Table 3); our graphs -> its datasets (Uni: no hot
# nodes, Ex: 10% hot nodes, as the paper's Uni500K and Ex500K at a size this machine holds)
PARTITIONER_LABELS = {"metis": "Metis", "hash": "Hash", "greedy": "Greedy", "metis_layer": "Metis-layer", "distdy": "DistDy"}
DATA_LABELS = {"Uni": "Uni500K", "Ex": "Ex500K"}
HOT_FRACTIONS = {"Uni": 0.0, "Ex": 0.1}


# ---- shared ---------------------------------------------------------------------------------------------
def _baselines() -> tuple[str, ...]:
    from dygsched.data.partition import ONLINE_PARTITIONERS as PARTITIONERS

    return tuple(name for name in PARTITIONERS if name != "distdy")


def _variants() -> tuple[tuple[str, dict[str, float]], ...]:
    """DistDy as the paper writes it, then with our balance extensions (docs/distdy.md), then the baselines."""
    return (("distdy", {}), ("distdy+messages", {"message_weight": 4.0}), ("distdy+fetch", {"fetch_weight": 16.0}),
            *((name, {}) for name in _baselines()))  # fmt: skip


def _config(*overrides: str, experiment: bool = True) -> dict:
    """The experiment's configuration (composed as ``dygsched run`` would) with ``overrides``, resolved."""
    from omegaconf import OmegaConf

    from dygsched.launch.compose import compose_config

    return OmegaConf.to_container(compose_config([*([EXPERIMENT] if experiment else []), *overrides]), resolve=True)


def _sweep_runs(folder: Path) -> list[tuple[pd.Series, dict]]:
    """Every finished run of a sweep folder: its row of ``runs.parquet`` and its config (unresolved)."""
    from omegaconf import OmegaConf

    runs = completed_runs(folder)
    found = []
    for _, row in runs.iterrows():
        cfg = OmegaConf.to_container(OmegaConf.load(folder / row["run_id"] / "config.yaml"), resolve=False)
        found.append((row, cfg))
    return found


class Stream:
    """One experiment's graph and what every partitioner and count needs of it, computed once."""

    def __init__(self, cfg: dict) -> None:
        from dygsched.data.loading import load_data
        from dygsched.engine.distdy.placement import feature_segments, snapshot_graphs
        from dygsched.engine.distdy.sampler import InNeighbours
        from dygsched.engine.distdy.strategy import node_split

        sched = cfg["sched"]
        self.cfg, self.graph = cfg, load_data(cfg["dataset"])
        self.train, _, _ = node_split(self.graph.num_nodes, cfg["split"]["train"], cfg["split"]["val"], cfg["seed"])
        self.segments = feature_segments(sched["segments"], self.graph.num_features)
        self.snapshot_graphs = snapshot_graphs(self.graph, self.train, sched["batch"], sched["fanouts"], self.segments)
        self.neighbours = [InNeighbours.of(s.edge_index.numpy(), self.graph.num_nodes) for s in self.graph.snapshots]

    @property
    def row_bytes(self) -> int:
        return self.graph.num_features * self.graph.snapshots[0].x.element_size()

    def options(self, **changes: float) -> dict:
        """``OnlinePartitioner``'s options as configured, with ``changes``."""
        sched = self.cfg["sched"]
        keys = ("eta", "budget", "clip_rewards", "message_weight", "fetch_weight")
        return {key: changes.get(key, sched[key]) for key in keys}

    def capacity(self, stores: int, factor: float | None = None) -> np.ndarray:
        """``D^k`` as configured (or at ``factor`` times the balanced window storage)."""
        from dygsched.data.partition.online import store_capacity

        sched, window = self.cfg["sched"], self.cfg["window"]
        if factor is not None:
            return store_capacity(self.snapshot_graphs, window, stores, factor)
        return store_capacity(self.snapshot_graphs, window, stores, sched["capacity_factor"], sched["capacity_bytes"])

    def place(self, stores: int, method: str, factor: float | None = None, **changes: float) -> tuple[list, float, np.ndarray]:
        """Every snapshot's placement on ``stores`` stores, the seconds partitioning took, the capacities."""
        from dygsched.data.partition.online import partition_stream

        capacity, window = self.capacity(stores, factor), self.cfg["window"]
        options = self.options(**changes) if method == "distdy" else {}
        if method == "distdy":  # compiles the refinement (once per machine: numba caches it on disk), not timed
            partition_stream(method, self.snapshot_graphs[:1], stores, capacity, window, **options)
        start = time.perf_counter()
        parts = partition_stream(method, self.snapshot_graphs, stores, capacity, window, self.cfg["seed"], **options)
        return parts, time.perf_counter() - start, capacity

    def balance(self, parts: list, stores: int) -> dict[str, float]:
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

    def counts(self, placements: list, stores: int) -> list:
        """The counts of one epoch's mini-batches on ``stores`` stores."""
        from dygsched.engine.distdy.cluster import epoch_counts

        cfg, sched = self.cfg, self.cfg["sched"]
        return epoch_counts(
            self.graph, placements, stores, self.train, cfg["window"], sched["batch"], sched["batches_per_step"],
            sched["fanouts"], cfg["seed"], neighbours=self.neighbours,
        )  # fmt: skip


class Simulator:
    """Prices an epoch's counted traffic and work for K stores (see dygsched/engine/distdy/cluster.py),
    with the compute costs of a device profile (``cpu``: calibrated here; a GPU's: from its datasheet)."""

    def __init__(self, stream: Stream, profile: str) -> None:
        import torch

        from dygsched.engine.build import build_model
        from dygsched.engine.distdy.cluster import compute_cost

        cfg, graph = stream.cfg, stream.graph
        torch.manual_seed(cfg["seed"])
        model = build_model(cfg["model"], graph)
        self.profile = profile
        self.cost = compute_cost(profile, model, stream.neighbours[:1], graph.snapshots[0].x, cfg["sched"]["fanouts"], cfg["window"])
        self.row_bytes = stream.row_bytes
        self.embedding_bytes = model.hidden_channels * 4
        self.parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def epoch(self, counts: list, gbps: float) -> dict[str, float]:
        from dygsched.engine.distdy.cluster import Network, simulate_epoch

        return simulate_epoch(counts, self.cost, Network(gbps, latency_s=50e-6), self.row_bytes, self.embedding_bytes, self.parameter_bytes)


def _ratio_to(table: pd.DataFrame, keys: list[str], value: str, column: str, baseline: str) -> pd.Series:
    """``value`` of the ``baseline`` row (by ``column``) within each ``keys`` group, for every row."""
    return table.groupby(keys)[value].transform(lambda s: s[table.loc[s.index, column] == baseline].iloc[0])


# ---- figures 7-9: additive storage -------------------------------------------------------------------------
STORAGE_CSV = "distdy/storage.csv"
DEFAULT_CHANGE = "change 0.3/0.3"  # the uniform graph's default feature and edge change between snapshots


def density_setting(density: str) -> str:
    return f"uniform {density}, {DEFAULT_CHANGE}"


def feature_change_setting(change: float) -> str:
    return f"uniform sparse, feature change {change}"


def edge_change_setting(change: float) -> str:
    return f"uniform sparse, edge change {change}"


def _storage_settings(snapshots: int) -> list[tuple[str, list[str]]]:
    """Every synthetic setting's label and overrides: density, feature change, edge change, sparse change."""
    settings = [(density_setting(d), [f"dataset.density={d}"]) for d in ("sparse", "medium", "dense")]
    settings += [(feature_change_setting(c), [f"dataset.feature_change={c}"]) for c in (0.1, 0.5, 0.7)]
    settings += [(edge_change_setting(c), [f"dataset.edge_change={c}"]) for c in (0.1, 0.5, 0.7)]
    settings += [("uniform sparse, sparse change 0.05/0.05", ["dataset.feature_change=0.05", "dataset.edge_change=0.05"])]
    long = [f"dataset.num_snapshots={4 * snapshots}", "dataset.feature_change=0.02", "dataset.edge_change=0.02"]
    settings += [(f"uniform sparse, sparse change 0.02/0.02, {4 * snapshots} snapshots", long)]
    return settings


def build_storage(results: Path, *, nodes: int, snapshots: int, segments: int) -> None:
    """Whole snapshots against additive features, edges and both, on uniform graphs by density and
    change ratio and on two real graphs; every snapshot is checked to reconstruct exactly."""
    uniform = ["dataset=uniform", f"dataset.num_nodes={nodes}", f"dataset.num_snapshots={snapshots}", "dataset.hot_fraction=0.0"]
    rows = [_storage_row(label, _config(*uniform, *extra), segments) for label, extra in _storage_settings(snapshots)]
    for label, extra, real_segments in (
        ("enron (edge list, 12 snapshots)", ["dataset=edgelist", "dataset.num_snapshots=12"], 2),
        ("twitter_tennis", ["dataset=twitter_tennis"], 4),
    ):
        rows.append(_storage_row(label, _config(*extra, experiment=False), real_segments))
    write_table(pd.DataFrame(rows), results / STORAGE_CSV,
                "targets: >= 90% saved with sparse change, >= 70% on the default synthetic setting (uniform sparse, change 0.3/0.3)",
                "bounds: an unchanged row still costs a reference per segment (S x 8 bytes), and the first snapshot is stored whole")  # fmt: skip


def _storage_row(label: str, cfg: dict, segments: int) -> dict[str, Any]:
    from dygsched.data.additive_store import history_storage
    from dygsched.data.loading import load_data

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


def read_storage(tables: Tables) -> str:
    table = table_named(tables)
    return (
        f"additive storage saves {span(table.saved_both, percent)} of whole snapshots (features only "
        f"{span(table.saved_features_only, percent)}, edges only {span(table.saved_edges_only, percent)}) over {len(table)} settings"
    )


def _saved(table: pd.DataFrame, setting: str, column: str) -> float | None:
    """The share saved in one setting, in percent; ``None`` where the setting is not in the table."""
    match = table.loc[table.setting == setting, column]
    return 100 * float(match.iloc[0]) if len(match) else None


def headlines_storage(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """The savings the paper's text states, in percent (plain values, checked for closeness): the most
    saved over every setting (the abstract's), features and edges together on a sparse and a dense
    graph (figure 8), and the feature bytes saved when 10% of the features change (figure 9a). Our
    graphs are synthetic at 10,000 nodes, not the paper's Yelp or 100K-node graphs."""
    table = table_named(tables)
    best = 100 * float(table.saved_both.max()) if len(table) else None
    return (
        Headline("storage saved (%), the best setting (features and edges)", published_value(published, "DistDy", "storage reduction"), best, ratio=False),
        Headline("storage saved (%), sparse graph (features and edges)", published_value(published, "sparse graph", "storage reduction (around)"),
                 _saved(table, density_setting("sparse"), "saved_both"), ratio=False),
        Headline("storage saved (%), dense graph (features and edges)", published_value(published, "dense graph", "storage reduction (around)"),
                 _saved(table, density_setting("dense"), "saved_both"), ratio=False),
        Headline("feature storage saved (%), 10% feature changes", published_value(published, "sparse 100K nodes, 10% feature changes", "storage saving"),
                 _saved(table, feature_change_setting(0.1), "saved_features_only"), ratio=False),
    )  # fmt: skip


STORAGE = PaperTarget(
    name="table-distdy-storage",
    paper=SECTION.key,
    title="Whole snapshots against additive features, edges, both",
    reproduces="DistDy figures 7-9",
    outputs=(STORAGE_CSV,),
    repeats="one build per setting",
    minutes=0.8,
    build=build_storage,
    reading=read_storage,
    settings=Settings(full={"nodes": 10000, "snapshots": 12, "segments": 4}, smoke={"nodes": 500, "snapshots": 4}),
    headlines=headlines_storage,
)


# ---- table 3: partition and store ---------------------------------------------------------------------------
PARTITION_CSV = "distdy/partition.csv"


def build_partition(results: Path, *, nodes: int, snapshots: int, stores: tuple[int, ...], window: int, overrides: tuple[str, ...]) -> None:
    """Time to partition and to store every snapshot, the cut and the balance, per partitioner, on a
    uniform graph and on a hot-node one."""
    from dygsched.data.partition.online import over_capacity

    rows = []
    for data, hot in HOT_FRACTIONS.items():
        cfg = _config(f"dataset.num_nodes={nodes}", f"dataset.num_snapshots={snapshots}", f"dataset.hot_fraction={hot}",
                      f"window={window}", *overrides)  # fmt: skip
        stream = Stream(cfg)
        for count in stores:
            for name, changes in _variants():
                method = name.split("+")[0]
                parts, seconds, capacity = stream.place(count, method, **changes)
                late = over_capacity(parts, capacity, cfg["window"])
                rows.append({
                    "data": data, "stores": count, "partitioner": name, "partition_s": seconds,
                    "store_s": _store_all(stream.graph, parts, count, cfg["window"], stream.segments),
                    "cut_edges": float(np.mean([p.cut_edges for p in parts])),
                    "cut_weight_share": float(np.mean([1 - p.utility / max(g.weights.sum(), 1e-12) for p, g in zip(parts, stream.snapshot_graphs)])),
                    **stream.balance(parts, count),
                    "median_passes": float(np.median([p.passes for p in parts])) if method == "distdy" else np.nan,
                    "most_moves": float(max(p.most_moves for p in parts)) if method == "distdy" else np.nan,
                    "out_of_memory": bool(late), "over_capacity_snapshots": len(late),
                })  # fmt: skip
            print(f"{data}: {stream.graph.num_nodes} nodes, {stream.graph.num_snapshots} snapshots, K={count}, w={cfg['window']}", file=sys.stderr)
    table = pd.DataFrame(rows)
    for baseline in ("metis", "metis_layer"):
        table[f"partition_vs_{baseline}"] = table.partition_s / _ratio_to(table, ["data", "stores"], "partition_s", "partitioner", baseline)
    write_table(table, results / PARTITION_CSV,
                "partition_s: the partitioner alone (DistDy: Algorithms 1-3 over every snapshot; numba's one-off compile excluded); "
                "store_s: adding every snapshot to the K additive stores",
                "balance_*: the largest store over the mean at the worst step (window bytes, nodes, training targets, expected sampled messages)",
                "cut_weight_share: the share of the expected feature-fetch weight W_uv on edges between stores",
                "out_of_memory: a store would exceed D^k (the baselines ignore it; DistDy never does)",
                "targets: DistDy balance_bytes <= 1.10 and balance_targets <= 1.20; median passes <= 50; partition_s below metis and metis_layer")  # fmt: skip


def _store_all(graph: Any, parts: list, stores: int, window: int, segments: int) -> float:
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
    return frame.loc[[d for d in DATA_LABELS.values() if d in frame.index], [p for p in PARTITIONER_LABELS.values() if p in frame.columns]]


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
    settings=Settings(
        full={"nodes": 20000, "snapshots": 12, "stores": (4, 8), "window": 4, "overrides": ()},
        smoke={"nodes": 500, "snapshots": 4},
    ),
    shape=shape_partition,
    headlines=headlines_partition,
)


# ---- figure 3: feature-fetch traffic -----------------------------------------------------------------------
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
    for run, cfg in _sweep_runs(folder):
        metrics = pd.read_parquet(folder / run["run_id"] / "metrics.parquet")
        epochs = metrics[(metrics.iteration == -1) & (metrics.phase == "train")]
        for metric, way in (("feature_fetch_in_bytes", "in"), ("feature_fetch_out_bytes", "out")):
            per_rank = epochs[epochs.metric == metric].groupby("rank")["value"].mean()
            for rank, value in per_rank.items():
                rows.append({"stores": int(run["world_size"]), "source": "measured", "partitioner": cfg["sched"]["partition"],
                             "rank": int(rank), "way": way, "mb": value / 2**20})  # fmt: skip
    stream = Stream(_config(*overrides))
    for count in stores:
        for method in PARTITIONERS:
            parts, _, _ = stream.place(count, method)
            remote = sum(c.remote_fetch_rows() for c in stream.counts(parts, count)) * stream.row_bytes
            for rank in range(count):
                for way, mb in (("in", remote[rank].sum() / 2**20), ("out", remote[:, rank].sum() / 2**20)):
                    rows.append({"stores": count, "source": "counted", "partitioner": method, "rank": rank, "way": way, "mb": mb})
    table = pd.DataFrame(rows)
    wide = table.pivot_table(index=["stores", "source", "partitioner"], columns="way", values="mb", aggfunc=["sum", "max"])
    wide.columns = [f"{way}_{agg}_mb" for agg, way in wide.columns]
    wide = wide.reset_index()
    wide["vs_distdy"] = wide.in_sum_mb / _ratio_to(wide, ["stores", "source"], "in_sum_mb", "partitioner", "distdy")
    write_table(table, results / TRAFFIC_PER_RANK_CSV)
    write_table(wide, results / TRAFFIC_CSV,
                "per epoch: *_sum over ranks, *_max the busiest rank; target: DistDy's bytes below every baseline's (hot-node graph)")  # fmt: skip


def read_traffic(tables: Tables) -> str:
    table = table_named(tables, "traffic.csv")
    parts = []
    for (stores, source), group in table.groupby(["stores", "source"]):
        others = group[group.partitioner != "distdy"]
        lowest = bool((others.vs_distdy >= 1).all())  # vs_distdy: bytes fetched over DistDy's
        parts.append(f"{int(stores)} stores ({source}): others fetch {span(others.vs_distdy, times)} DistDy's bytes"
                     + ("" if lowest else " (DistDy not the lowest)"))  # fmt: skip
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


# ---- figures 4, 5 and 10: epoch time -------------------------------------------------------------------------
TIME_SWEEP = Sweep(
    folder="distdy/time",
    runs=((EXPERIMENT, "window=4,8,12", f"sched.partition={ALL_PARTITIONERS}"),),
    smoke=((EXPERIMENT, "window=4", "sched.partition=distdy,metis", SMOKE_SIZES),),
)
TIME_MEASURED_CSV = f"{TIME_SWEEP.folder}/time_measured.csv"
TIME_SIMULATED_CSV = f"{TIME_SWEEP.folder}/time_simulated.csv"
CALIBRATED_PROFILE = "cpu"  # the device profile calibrated on this machine; the others price the paper's cards


def build_time(
    results: Path, *, stores: tuple[int, ...], gbps: tuple[float, ...], device_profiles: tuple[str, ...], overrides: tuple[str, ...]
) -> None:
    """Epoch time per window and partitioner, measured on the sweep's 2 ranks; then simulated for K
    stores at each bandwidth with each device profile's compute costs."""
    rows = []
    for run, cfg in _sweep_runs(results / TIME_SWEEP.folder):
        rows.append({"window": cfg["window"], "partitioner": cfg["sched"]["partition"], "epoch_time_s": run.get("epoch_time_s"),
                     "test": run.get("eval.value")})  # fmt: skip
    measured = pd.DataFrame(rows).sort_values(["window", "partitioner"])
    measured["speedup_vs_metis"] = _ratio_to(measured, ["window"], "epoch_time_s", "partitioner", "metis") / measured.epoch_time_s
    write_table(measured, results / TIME_MEASURED_CSV, "2 gloo ranks on one machine: feature fetches cross shared memory, so partitions differ little here")
    stream = Stream(_config(*overrides))
    simulators = [Simulator(stream, profile) for profile in device_profiles]
    for simulator in simulators:
        print(f"compute costs ({simulator.profile}): {simulator.cost}", file=sys.stderr)
    rows = []
    for count in stores:
        counts, work = {}, {}
        for name, changes in _variants():
            parts, _, _ = stream.place(count, name.split("+")[0], **changes)
            counts[name] = stream.counts(parts, count)
            work[name] = _counted_balance(counts[name])
        for simulator in simulators:
            for bandwidth in gbps:
                for method in counts:
                    phases = simulator.epoch(counts[method], bandwidth)
                    rows.append({"device": simulator.profile, "stores": count, "gbps": bandwidth, "partitioner": method, **phases, **work[method]})
    simulated = pd.DataFrame(rows)
    simulated["fetch_share"] = simulated.fetch_s / simulated.epoch_s
    for baseline in _baselines():
        simulated[f"speedup_vs_{baseline}"] = _ratio_to(simulated, ["device", "stores", "gbps"], "epoch_s", "partitioner", baseline) / simulated.epoch_s
    write_table(simulated, results / TIME_SIMULATED_CSV,
                "device: cpu = compute calibrated on this machine; 1080ti / v100 = compute priced from the paper's cards (docs/distdy.md)",
                "balance_*: the largest rank over the mean, the worst mini-batch, as sampled (targets, encoder messages)",
                "targets: with a GPU profile DistDy >= 1.0x every baseline at 1, 10 and 50 Gbps, >= 1.15x METIS at 1 Gbps")  # fmt: skip


def _counted_balance(counts: list) -> dict[str, float]:
    """The worst mini-batch's largest rank over the mean, in targets and in sampled encoder messages."""
    worst = {"balance_targets": 0.0, "balance_messages": 0.0}
    for step in counts:
        for name, per_rank in (("balance_targets", step.targets), ("balance_messages", step.messages)):
            worst[name] = max(worst[name], float(per_rank.max() / max(per_rank.mean(), 1e-12)))
    return worst


def read_time(tables: Tables) -> str:
    measured = table_named(tables, "time_measured.csv")
    simulated = table_named(tables, "time_simulated.csv")
    measured_distdy = measured[measured.partitioner == "distdy"]
    parts = [f"measured on 2 ranks, DistDy {span(measured_distdy.speedup_vs_metis, times)} METIS's speed"]
    for device, group in simulated[simulated.partitioner == "distdy"].groupby("device", sort=False):
        slow = group[group.gbps == group.gbps.min()]
        lowest = group[[c for c in group.columns if c.startswith("speedup_vs_")]].min(axis=1)
        parts.append(
            f"simulated ({device}) at {slow.gbps.iloc[0]:g} Gbps {span(slow.speedup_vs_metis, times)} METIS's speed, "
            f"its lowest speedup over any baseline {span(lowest, times)} over every bandwidth and K"
        )
    return "; ".join(parts)


def headlines_time(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """The paper prints figures, not a table, so there is no shape: its text's speedups on Ex500K (our
    experiment's hot-node graph is its small likeness). Figure 5's largest speedup over any baseline
    beside ours simulated with the paper's cards (over every K and bandwidth); figure 10's speedup
    over METIS at windows 4, 8 and 12 beside ours measured on 2 ranks."""
    measured = table_named(tables, "time_measured.csv")
    simulated = table_named(tables, "time_simulated.csv")
    ex500k = published[published.dataset == DATA_LABELS["Ex"]]
    distdy = simulated[simulated.partitioner == "distdy"]
    on_cards = distdy[distdy.device != CALIBRATED_PROFILE]
    speedups = (on_cards if len(on_cards) else distdy)[[c for c in simulated.columns if c.startswith("speedup_vs_")]]
    best = float(speedups.max().max()) if speedups.size else None
    headlines = [Headline("DistDy over the baselines, the largest speedup (simulated)", published_value(ex500k, "DistDy vs baselines", "speedup (up to)"), best)]
    for window in (4, 8, 12):
        match = measured[(measured.partitioner == "distdy") & (measured.window == window)].speedup_vs_metis
        headlines.append(Headline(f"DistDy over METIS, window {window} (measured)",
                                  published_value(ex500k, "DistDy vs Metis", f"speedup (up to), window {window}"),
                                  float(match.iloc[0]) if len(match) else None))  # fmt: skip
    return tuple(headlines)


TIME = PaperTarget(
    name="table-distdy-time",
    paper=SECTION.key,
    title="Epoch time for windows 4, 8, 12; simulated clusters at 1-100 Gbps",
    reproduces="DistDy figures 4, 5 and 10",
    outputs=(TIME_MEASURED_CSV, TIME_SIMULATED_CSV),
    repeats="median over epochs of one run per cell",
    minutes=3.7,
    build=build_time,
    reading=read_time,
    sweep=TIME_SWEEP,
    settings=Settings(
        full={"stores": (4, 8, 16), "gbps": (1.0, 10.0, 50.0, 100.0), "device_profiles": ("cpu", "v100"), "overrides": ()},
        smoke={"stores": (4,), "gbps": (1.0, 10.0), "overrides": (SMOKE_SIZES,)},
    ),
    headlines=headlines_time,
)


# ---- figure 11: the budget M and eta -------------------------------------------------------------------------
PARAMS_CSV = "distdy/params.csv"


def build_params(
    results: Path, *, stores: int, gbps: float, budgets: tuple[int, ...], etas: tuple[float, ...], device_profile: str, overrides: tuple[str, ...]
) -> None:
    """DistDy's simulated speedup over METIS as the refinement budget M and eta vary (one at a time)."""
    cfg = _config(*overrides)
    stream = Stream(cfg)
    simulator = Simulator(stream, device_profile)
    parts, _, _ = stream.place(stores, "metis")
    metis = simulator.epoch(stream.counts(parts, stores), gbps)["epoch_s"]
    grid = [("budget", m, m, cfg["sched"]["eta"]) for m in budgets] + [("eta", e, cfg["sched"]["budget"], e) for e in etas]
    rows = []
    for swept, value, budget, eta in grid:
        parts, seconds, _ = stream.place(stores, "distdy", budget=budget, eta=eta)
        epoch = simulator.epoch(stream.counts(parts, stores), gbps)["epoch_s"]
        rows.append({"swept": swept, "value": value, "budget": budget, "eta": eta, "partition_s": seconds,
                     "median_passes": float(np.median([p.passes for p in parts])),
                     "cut_edges": float(np.mean([p.cut_edges for p in parts])), "epoch_s": epoch, "speedup_vs_metis": metis / epoch})  # fmt: skip
    write_table(pd.DataFrame(rows), results / PARAMS_CSV, f"simulated ({device_profile}): K={stores}, {gbps:g} Gbps, METIS {metis:.3g} s per epoch")


def read_params(tables: Tables) -> str:
    table = table_named(tables)
    speed = next(column for column in table.columns if column.startswith("speedup"))
    best = table.loc[table[speed].idxmax()]
    return f"simulated speedup over METIS {span(table[speed], times)}; best at budget {best.budget:g}, eta {best.eta:g}"


PARAMS = PaperTarget(
    name="fig-distdy-params",
    paper=SECTION.key,
    title="Simulated speedup over METIS against the budget M and eta",
    reproduces="DistDy figure 11",
    outputs=(PARAMS_CSV,),
    repeats="one simulated epoch per setting",
    minutes=0.3,
    build=build_params,
    reading=read_params,
    settings=Settings(
        full={"stores": 8, "gbps": 1.0, "budgets": (1, 5, 20, 100, 300), "etas": (1.0, 2.0, 4.0, 6.0, 8.0, 12.0), "device_profile": "v100", "overrides": ()},
        smoke={"budgets": (1, 5), "etas": (1.0, 4.0), "overrides": (SMOKE_SIZES,)},
    ),
)  # figure 11 prints no number: "with a larger budget, the speedup ... first increases and then remains the same"; "with a larger eta, ... a similar speedup"


# ---- ours: the capacity D^k -----------------------------------------------------------------------------------
CAPACITY_CSV = "distdy/capacity.csv"
CAPACITY_PNG = "distdy/capacity.png"


def build_capacity(results: Path, *, stores: tuple[int, ...], gbps: float, points: int, device_profile: str, overrides: tuple[str, ...]) -> None:
    """DistDy's speedup and balance as ``D^k`` goes from the tightest feasible value to twice it; a
    baseline that would exceed ``D^k`` at some snapshot is out of memory there."""
    from dygsched.data.partition.online import over_capacity, smallest_feasible_factor

    cfg = _config(*overrides)
    stream = Stream(cfg)
    simulator = Simulator(stream, device_profile)
    rows = []
    for count in stores:
        tightest = smallest_feasible_factor(stream.snapshot_graphs, cfg["window"], count, **stream.options())
        baselines = {}
        for method in _baselines():
            parts, _, _ = stream.place(count, method)
            baselines[method] = (parts, simulator.epoch(stream.counts(parts, count), gbps)["epoch_s"])
        for factor in tightest * np.linspace(1.0, 2.0, points):
            parts, seconds, bound = stream.place(count, "distdy", factor=float(factor))
            epoch = simulator.epoch(stream.counts(parts, count), gbps)["epoch_s"]
            row = {"stores": count, "factor": float(factor), "of_tightest": float(factor / tightest),
                   "capacity_mb": float(bound[0]) / 2**20, "partition_s": seconds, "epoch_s": epoch,
                   **stream.balance(parts, count)}  # fmt: skip
            for method, (theirs, their_epoch) in baselines.items():
                oom = bool(over_capacity(theirs, bound, cfg["window"]))
                row[f"speedup_vs_{method}"] = np.nan if oom else their_epoch / epoch  # out of memory: no epoch to compare
                row[f"{method}_out_of_memory"] = oom
            rows.append(row)
    table = pd.DataFrame(rows)
    write_table(table, results / CAPACITY_CSV,
                f"simulated ({device_profile}, {gbps:g} Gbps); factor: D^k over the balanced window storage; "
                "a baseline out of memory at that D^k has no speedup (NaN)")  # fmt: skip
    _capacity_figure(table, results / CAPACITY_PNG)


def _capacity_figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, balance) = plt.subplots(1, 2, figsize=(10, 4))
    for stores, group in table.groupby("stores"):
        for method in _baselines():
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
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"written: {path}")


def read_capacity(tables: Tables) -> str:
    table = table_named(tables, "capacity.csv")
    parts = []
    for stores, group in table.groupby("stores"):
        oom = [c.removesuffix("_out_of_memory") for c in group.columns if c.endswith("_out_of_memory") and group[c].any()]
        parts.append(
            f"K={int(stores)}: from the tightest feasible D^k to twice it, speedup over METIS "
            f"{span(group.speedup_vs_metis, times)}, largest store over mean {span(group.balance_bytes, lambda v: f'{v:.2f}')} "
            f"in bytes" + (f"; out of memory at some capacity: {', '.join(oom)}" if oom else "")
        )
    return "; ".join(parts)


CAPACITY = PaperTarget(
    name="fig-distdy-capacity",
    paper=SECTION.key,
    title="Simulated speedup and balance as the capacity D^k grows; baselines out of memory",
    reproduces="(no paper table; ours, beside DistDy section 4: the paper sweeps no capacity)",
    outputs=(CAPACITY_CSV, CAPACITY_PNG),
    repeats="one simulated epoch per capacity",
    minutes=0.4,
    build=build_capacity,
    reading=read_capacity,
    settings=Settings(
        full={"stores": (4, 8), "gbps": 1.0, "points": 5, "device_profile": "v100", "overrides": ()},
        smoke={"stores": (4,), "points": 2, "overrides": (SMOKE_SIZES,)},
    ),
)

TARGETS: tuple[PaperTarget, ...] = (STORAGE, PARTITION, TRAFFIC, TIME, PARAMS, CAPACITY)
