"""Every paper target the report shows: which Make target builds it, what it reproduces, the files it
writes under a results root, and the sizes `make paper SMOKE=1` shrinks it to.

A target is a row here plus its Make target; the report, `make paper` and CI's smoke run all read
this one list, so a target that is added here is built, rendered and smoke-tested everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    about: str


@dataclass(frozen=True)
class PaperTarget:
    name: str  # the Make target (`make <name>`)
    section: str  # a Section's key
    title: str
    reproduces: str  # the paper's table or figure, as the paper numbers it
    outputs: tuple[str, ...]  # files under the results root: .csv tables, .png figures
    repeats: str  # how many times each number was measured, and how they are combined
    minutes: float  # wall time at full size on a 2-core CPU machine (docs/report.md)
    smoke: dict[str, str] = field(default_factory=dict)  # Make variables for SMOKE=1 (seconds, not minutes)

    @property
    def expected(self) -> str:
        """Its wall time at full size, in words: "about 10 min", "under a minute"."""
        return "under a minute" if self.minutes < 1 else f"about {round(self.minutes)} min"

    @property
    def duration(self) -> str:
        return f"{self.expected} at full size on 2 CPU cores"

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(path for path in self.outputs if path.endswith(".csv"))

    @property
    def figures(self) -> tuple[str, ...]:
        return tuple(path for path in self.outputs if path.endswith(".png"))


SECTIONS = (
    Section("dygnex", "DyGNeX", "Snapshot-group schedules across GPUs: epoch time, imbalance, convergence, solve time."),
    Section("real", "REAL", "Cross-group scheduling with snapshot- and group-level reuse: the ablation and the reuse memory."),
    Section("flaredtdg", "FlareDTDG", "Node-partitioned training on hybrid batches with temporal decay, shrinking and overlap."),
    Section("distdy", "DistDy", "Online partitioning of a growing graph, additive storage, sampled training over graph stores."),
    Section("sven", "Sven", "Memory-based continuous-time models (TGN, JODIE, APAN) with distributed node memory."),
    Section("planner", "Planner", "The solvers against their bounds and against the published DyGNeX-G, on every instance family."),
    Section("simulation", "Scaling simulation", "Parallel efficiency from 4 to 1,024 simulated GPUs."),
    Section("reuse", "Reuse", "REAL's reuse against PSG on an Arxiv-sized graph, and what counting FLOPs costs."),
    Section("engine", "Engine speed", "One rank against the loops users write by hand with PyTorch Geometric (Temporal)."),
)

# The smoke run's sizes for the training sweeps: conf/smoke/<kind>.yaml, appended after the experiment.
_SMALL_SNAPSHOTS = "+smoke=snapshots"
_SMALL_FLARE = "+smoke=flare"
_SMALL_DISTDY = "+smoke=distdy"
_SMALL_EVENTS = "+smoke=events"

TARGETS = (
    PaperTarget(
        "table-epoch-time", "dygnex", "Epoch time and imbalance per strategy and model", "DyGNeX table 4",
        ("table_epoch_time/table_epoch_time.csv",), "median over epochs 2-10 of one run per cell", 10,
        {"TABLE_SCHEDS": "psg,greedy", "TABLE_MODELS": "tgcn", "TABLE_ARGS": _SMALL_SNAPSHOTS},
    ),
    PaperTarget(
        "fig-convergence", "dygnex", "Loss and accuracy per epoch per strategy", "DyGNeX figure 3",
        ("fig_convergence/convergence.csv", "fig_convergence/convergence.png"), "one run per strategy, every epoch", 2,
        {"FIG_SCHEDS": "greedy", "FIG_ARGS": _SMALL_SNAPSHOTS},
    ),
    PaperTarget(
        "table-solve-time", "dygnex", "Solve time by number of snapshots; ILP time by optimality gap", "DyGNeX tables 5 and 6",
        ("solve_time_greedy.csv", "solve_time_ilp.csv"), "one solve per cell", 0.6,
        {"SOLVE_TIME_ARGS": "--max-snapshots 50"},
    ),
    PaperTarget(
        "table-ablation", "real", "PSG, + type I, + type II, + REAL-G, + REAL-L as cumulative speedups", "REAL figure 13",
        ("table_ablation/table_ablation.csv",), "median over epochs 2-8 of one run per cell", 11,
        {"ABLATION_MODELS": "tgcn", "ABLATION_STEPS": "psg,real_l", "ABLATION_ARGS": _SMALL_SNAPSHOTS},
    ),
    PaperTarget(
        "table-reuse-memory", "real", "Full graphs against diff maps and degrees; diff-map build time", "REAL tables 4 and 5",
        ("table_reuse_memory.csv",), "one build per dataset", 0.1,
        {"REUSE_MEMORY_ARGS": "--datasets synthetic,twitter_tennis"},
    ),
    PaperTarget(
        "table-flare-accuracy", "flaredtdg", "Test MSE: Full-History, Recent-Only, FlareDTDG per model", "FlareDTDG table 6",
        ("flare/variants/flare_accuracy.csv",), "one run per cell (4 epochs)", 40,
        {"FLARE_MODELS": "tgcn", "FLARE_VARIANTS": "full_history,flare", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "table-flare-memory", "flaredtdg",
        "Memory per rank, each measure under its own name: GPU allocator peak (GPU runs only), peak resident set, "
        "bytes saved for the backward, training memory; Full-History against FlareDTDG",
        "FlareDTDG tables 5 and 7 (the paper's figures are the GPU allocator's peak per GPU)",
        ("flare/variants/flare_memory.csv",), "the runs of table 6 (made once for 6, 5/7 and 12); per-epoch peaks, median over epochs 2-4", 40,
        {"FLARE_MODELS": "tgcn", "FLARE_VARIANTS": "full_history,flare", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "table-flare-convergence", "flaredtdg",
        "Time to convergence: training time and epochs until the validation MSE first reaches Full-History's best + a tolerance "
        "(5% unless FLARE_CONVERGENCE_TOLERANCE says otherwise), epoch time beside",
        "FlareDTDG table 8", ("flare/convergence/flare_convergence.csv",), "one run per cell, every epoch", 30,
        {"FLARE_CONVERGENCE_MODELS": "tgcn", "FLARE_CONVERGENCE_VARIANTS": "full_history,recent_only,flare",
         "FLARE_CONVERGENCE_EPOCHS": "3", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "table-flare-time", "flaredtdg", "Epoch time; shrinking on and off; overlap none, rr, mlp",
        "FlareDTDG tables 9-11 (as epoch time; table 8's convergence time is table-flare-convergence)",
        ("flare/time/flare_time.csv",), "median over epochs 2-4 of one run per cell", 25,
        {"FLARE_TIME_MODELS": "tgcn", "FLARE_TIME_VARIANTS": "flare", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "table-flare-breakdown", "flaredtdg", "Chunking, shuffle, remap, forward, backward, communication, load",
        "FlareDTDG table 12", ("flare/variants/flare_breakdown.csv",), "the runs of table 6 (made once for 6, 5/7 and 12); median over epochs", 40,
        {"FLARE_MODELS": "tgcn", "FLARE_VARIANTS": "full_history,flare", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "fig-flare-heatmap", "flaredtdg", "MSE, memory and time over K x alpha", "FlareDTDG figure 8",
        ("flare/heatmap/flare_heatmap.csv", "flare/heatmap/flare_heatmap.png"), "one run per cell (4 epochs)", 13,
        {"FLARE_HEATMAP_K": "2", "FLARE_HEATMAP_ALPHA": "0.3", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "fig-flare-scaling", "flaredtdg", "Epoch time and memory on 1 and 2 ranks", "FlareDTDG figure 7",
        ("flare/scaling/flare_scaling.csv",), "median over epochs 2-4 of one run per rank count", 7,
        {"FLARE_SCALING_RANKS": "1,2", "FLARE_ARGS": _SMALL_FLARE},
    ),
    PaperTarget(
        "table-distdy-storage", "distdy", "Whole snapshots against additive features, edges, both", "DistDy figures 7-9",
        ("distdy/storage.csv",), "one build per setting", 0.8,
        {"DISTDY_TABLE_ARGS": "--nodes 500 --snapshots 4"},
    ),
    PaperTarget(
        "table-distdy-partition", "distdy", "Time to partition and store every snapshot; cut and balance", "DistDy table 3",
        ("distdy/partition.csv",), "one pass per partitioner", 1.4,
        {"DISTDY_TABLE_ARGS": "--nodes 500 --snapshots 4"},
    ),
    PaperTarget(
        "table-distdy-traffic", "distdy", "Feature-fetch bytes in and out per rank", "DistDy figure 3",
        ("distdy/traffic/traffic.csv", "distdy/traffic/traffic_per_rank.csv"), "bytes counted over one run per partitioner",
        1.3, {"DISTDY_PARTITIONS": "distdy,metis", "DISTDY_ARGS": _SMALL_DISTDY, "DISTDY_TABLE_ARGS": "--stores 4 --set +smoke=distdy"},
    ),
    PaperTarget(
        "table-distdy-time", "distdy", "Epoch time for windows 4, 8, 12; simulated clusters at 1-100 Gbps",
        "DistDy figures 4, 5 and 10", ("distdy/time/time_measured.csv", "distdy/time/time_simulated.csv"),
        "median over epochs of one run per cell", 3.7,
        {"DISTDY_PARTITIONS": "distdy,metis", "DISTDY_WINDOWS": "4",
         "DISTDY_ARGS": _SMALL_DISTDY, "DISTDY_TABLE_ARGS": "--stores 4 --gbps 1 10 --set +smoke=distdy"},
    ),
    PaperTarget(
        "fig-distdy-params", "distdy", "Simulated speedup over METIS against the budget M and eta", "DistDy figure 11",
        ("distdy/params.csv",), "one simulated epoch per setting", 0.3,
        {"DISTDY_TABLE_ARGS": "--budgets 1 5 --etas 1 4 --set +smoke=distdy"},
    ),
    PaperTarget(
        "fig-distdy-capacity", "distdy", "Simulated speedup and balance as the capacity D^k grows; baselines out of memory",
        "DistDy section 4 (ours: the paper sweeps no capacity)", ("distdy/capacity.csv", "distdy/capacity.png"),
        "one simulated epoch per capacity", 0.4,
        {"DISTDY_TABLE_ARGS": "--stores 4 --points 2 --set +smoke=distdy"},
    ),
    PaperTarget(
        "table-sven-comm", "sven", "Bytes per epoch of DepCache, DepComm and Sven, 2-64 ranks", "Sven figure 12",
        ("sven/sven_comm.csv",), "bytes counted exactly over one epoch", 0.1,
        {"SVEN_TABLE_ARGS": "--datasets events --batches 600 --ranks 2 4"},
    ),
    PaperTarget(
        "table-sven-balance", "sven", "Per-step link balance of Sven's dispatch under range, interval and Re-FlexBiCut owners",
        "Sven figure 14", ("sven/sven_balance.csv", "sven/sven_balance.png"),
        "counted over 10 epochs' steps (every step of every epoch in the box plots)", 4,
        {"SVEN_BALANCE_ARGS": "--datasets events --model apan --batches 600 --ranks 4 --epochs 1"},
    ),
    PaperTarget(
        "table-sven-accuracy", "sven", "Test AP and AUC: one process against Sven on 2 ranks, staleness 0 and 1",
        "Sven table 4", ("sven/accuracy/sven_accuracy.csv",), "mean and spread over SVEN_SEEDS (default one seed)", 2,
        {"SVEN_MODELS": "jodie", "SVEN_STALENESS": "1", "SVEN_ARGS": _SMALL_EVENTS},
    ),
    PaperTarget(
        "table-sven-breakdown", "sven", "Epoch time of DepCache, DepComm and Sven as each mechanism is added",
        "Sven figure 15 and table 2", ("sven/breakdown/sven_breakdown.csv",), "median over epochs 2-5 of one run per step", 2,
        {"SVEN_STEPS": "depcomm async_allreduce", "SVEN_ARGS": _SMALL_EVENTS},
    ),
    PaperTarget(
        "bench-planner", "planner", "Gaps to the lower bound and solve times on every instance family", "(no paper table)",
        ("bench_planner.csv",), "one solve per instance and solver", 3.1,
        {"PLANNER_ARGS": "--only trend-100-4"},
    ),
    PaperTarget(
        "bench-planner-certify", "planner", "The same gaps against certified iteration and configuration bounds",
        "(no paper table)", ("bench_planner_certified.csv",), "one solve per instance and solver", 35,
        {"PLANNER_ARGS": "--only trend-100-4 --certify 2 --certify-configurations 2"},
    ),
    PaperTarget(
        "simulate", "simulation", "Parallel efficiency from 4 to 1,024 simulated GPUs", "REAL figure 15, DyGNeX figure 5",
        ("simulate_scaling.csv", "simulate_scaling.png"), "one plan per GPU count and solver", 0.02,
        {"SIMULATE_ARGS": "--snapshots 200 --gpus 4,8,16"},
    ),
    PaperTarget(
        "bench-reuse", "reuse", "REAL's reuse against PSG: FLOPs and epoch time", "REAL section 5 (speedups)",
        ("bench_reuse/bench_reuse_tgcn_1l.csv",), "median over epochs 2-5 of one run per strategy", 6,
        {"BENCH_REUSE_ARGS": "--dataset synthetic --snapshots 12 --epochs 2 --profile-epochs 1"},
    ),
    PaperTarget(
        "bench-flop-counting", "reuse", "What counting graph-convolution FLOPs costs", "(no paper table)",
        ("bench_flop_counting.csv",), "median of 3 alternating pairs of runs", 1.6,
        {"FLOP_COUNTING_ARGS": "--pairs 1 --epochs 2 --dataset synthetic"},
    ),
    PaperTarget(
        "bench-vs-pygt", "engine", "One rank against a plain PyTorch Geometric Temporal loop", "(no paper table)",
        ("bench_vs_pygt.csv",), "median over 3 epochs of each loop", 2,
        {"VS_PYGT_ARGS": "--datasets twitter_tennis --models tgcn --epochs 1"},
    ),
    PaperTarget(
        "bench-tgn-pyg", "engine", "The reference TGN against a TGN of PyG's temporal modules", "(no paper table)",
        ("bench_tgn_pyg.csv",), "median over 3 epochs of each", 0.3,
        {"TGN_PYG_ARGS": "--epochs 1 --batch 2000"},
    ),
    PaperTarget(
        "bench-stream-scaling", "engine", "TGN, JODIE and APAN in one process as the stream grows to REDDIT's size",
        "(no paper table)", ("stream_scaling/stream_scaling.csv", "stream_scaling/stream_scaling.png"),
        "one run per model and size, median over its epochs", 19,
        {"STREAM_SCALING_ARGS": "--users 200 --items 40 --events 2000,4000 --epochs 1"},
    ),
    PaperTarget(
        "bench-scaling", "engine", "PSG, greedy, FlareDTDG and DistDy as the snapshot graph grows in nodes and in snapshots",
        "(no paper table)", ("scaling/scaling.csv", "scaling/scaling_exponents.csv", "scaling/scaling.png"),
        "one run per strategy and size, its last (2nd) epoch", 39,
        {"SCALING_ARGS": "--scheds psg,greedy --nodes 300,600 --snapshots 10,20 --base-nodes 300 --base-snapshots 10"},
    ),
    PaperTarget(
        "table-stream-accuracy", "engine", "TGN, JODIE and APAN: test AP and AUC, transductive and inductive, over seeds",
        "(no paper table; DyGLib's protocol)", ("stream_accuracy/stream_accuracy.csv",),
        "one run per model and seed; test at the best validation epoch; mean and standard deviation over 3 seeds", 45,
        {"STREAM_ACCURACY_ARGS": "--datasets bipartite --seeds 0 --epochs 1 --extra dataset.num_users=200 dataset.num_items=40 dataset.num_events=3000"},
    ),
)


def target(name: str) -> PaperTarget:
    for candidate in TARGETS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown paper target '{name}' (known: {', '.join(t.name for t in TARGETS)})")
