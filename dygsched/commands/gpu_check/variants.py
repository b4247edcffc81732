"""The check's runs: every strategy of ``conf/sched`` once on small data, then a few repeats."""

from __future__ import annotations

from dataclasses import dataclass

# Small data, as the tests use: every override is a real config key.
TINY_SNAPSHOTS = (
    "dataset=synthetic",
    "dataset.num_nodes=120",
    "dataset.num_snapshots=12",
    "dataset.feature_dim=8",
    "model.hidden_channels=16",
    "model.num_layers=1",
)
# The stream spans 1,000 s, not the generator's 30 days: TGN's time encoding cos(w dt + b) trains
# w (its first frequency starts at 1) in float32, and at dt of days the product's rounding moves the
# cosine by tenths, so two devices' losses part after a few steps whatever the strategy
# (docs/measurements.md); at 1,000 s they agree to the last digits a twin can hold.
TINY_STREAM = (
    "dataset=bipartite",
    "dataset.num_users=30",
    "dataset.num_items=10",
    "dataset.num_events=500",
    "dataset.duration=1000",
    "model=tgn",
    "model.memory_dim=8",
    "model.time_dim=4",
    "model.neighbours=3",
    "model.dropout=0.0",
)
# What every run of the check sets: two epochs, nothing kept that it does not read, short deadlines.
COMMON = ("epochs=2", "seed=0", "checkpoint=false", "progress=false", "overwrite=true")


@dataclass(frozen=True)
class Variant:
    """One strategy's run of the check: its overrides on small data, the world sizes it runs at, and
    whether a ``device=cpu`` run must train the same (a plan solved from measured times, or by a
    multi-threaded solver under a time limit, may differ between devices: such a run gets no twin)."""

    name: str
    overrides: tuple[str, ...]
    world_sizes: tuple[int, ...] = (1, 2)
    comparable: bool = True


# Every strategy of conf/sched once, with the settings that make it quick on small data, the
# node-memory ones on a small event stream; the switches worth seeing on a GPU are on in them
# (REAL's reuse engine and its streams, FlareDTDG's overlapped exchange, Sven's stale all-reduce and
# two micro-batches). Then a few repeats with the switches off. In the order the check runs them (each
# at one rank, then at two): a check stopped by its budget misses repeats first.
COST_MODEL_PLAN = ("sched.timeline.profile_epochs=0", "sched.executor.reuse_path=diff")  # the same plan on every device
PROFILED = ("sched.timeline.profile_epochs=1",)  # one profiling epoch on this device, then the solved plan
VARIANTS: tuple[Variant, ...] = (
    Variant("psg", (*TINY_SNAPSHOTS, "sched=psg")),
    Variant("greedy", (*TINY_SNAPSHOTS, "sched=greedy", *COST_MODEL_PLAN)),  # REAL-G with the reuse engine
    # the REAL policy with the reuse engine: the ILP, given 10 s whatever the estimated epoch time
    # (not a budget the device's speed decides), one CP-SAT worker: the same plan on every device
    Variant(
        "real",
        (
            *TINY_SNAPSHOTS,
            "sched=real",
            *COST_MODEL_PLAN,
            "sched.planner.time_limit=10",
            "+sched.planner.options.epoch_time=100",
            "+sched.planner.options.workers=1",
        ),
    ),
    Variant("esdg", (*TINY_SNAPSHOTS, "sched=esdg")),
    Variant("blad", (*TINY_SNAPSHOTS, "sched=blad")),
    Variant("flare_overlap_rr", (*TINY_SNAPSHOTS, "sched=flare", "sched.chunks=4", "sched.overlap=rr")),
    Variant("distdy", (*TINY_SNAPSHOTS, "model=sage_temporal", "sched=distdy", "sched.fanouts=[3]", "sched.batch=32")),
    Variant("single", (*TINY_STREAM, "sched=single", "sched.batch_size=70"), world_sizes=(1,)),  # the one-process reference
    Variant("depcache", (*TINY_STREAM, "sched=depcache", "sched.batch_size=35")),
    Variant("depcomm", (*TINY_STREAM, "sched=depcomm", "sched.batch_size=35")),
    Variant(
        "sven_stale_micro2", (*TINY_STREAM, "sched=sven", "sched.batch_size=35", "sched.staleness=1", "sched.micro_batches=2")
    ),
    # link prediction on snapshots (task=link): the pair decoder, its negatives drawn on the host, and
    # FlareDTDG's exchange of the pairs' destination rows
    Variant("psg_link", (*TINY_SNAPSHOTS, "sched=psg", "task=link", "link.embedding_dim=8")),
    Variant("flare_link", (*TINY_SNAPSHOTS, "sched=flare", "sched.chunks=4", "task=link", "link.embedding_dim=8")),
    # the planners after a profiling epoch on this device (its group times, the all-reduce cost alpha)
    Variant(
        "ilp",
        (*TINY_SNAPSHOTS, "sched=ilp", *PROFILED, "sched.executor.reuse_path=diff", "sched.planner.time_limit=5"),
        comparable=False,
    ),
    Variant("dygnex_g", (*TINY_SNAPSHOTS, "sched=dygnex_g", *PROFILED), comparable=False),
    Variant("dygnex_l", (*TINY_SNAPSHOTS, "sched=dygnex_l", *PROFILED, "sched.planner.time_limit=5"), comparable=False),
    Variant(
        "real_g_paper", (*TINY_SNAPSHOTS, "sched=real_g_paper", *PROFILED, "sched.executor.reuse_path=diff"), comparable=False
    ),
    # repeats: the switches off, and the reuse engine on a second model
    Variant("flare", (*TINY_SNAPSHOTS, "sched=flare", "sched.chunks=4")),
    Variant("sven", (*TINY_STREAM, "sched=sven", "sched.batch_size=35")),
    Variant("greedy_gat_lstm", (*TINY_SNAPSHOTS, "model=gat_lstm", "sched=greedy", *COST_MODEL_PLAN)),
)
