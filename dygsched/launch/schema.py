"""The typed schema of the run config, and the one place of every top-level default.

``RunSchema`` gives each top-level key of ``dygsched run`` its type and default (``conf/config.yaml``
only picks the groups), so ``epochs=abc`` is one clear error before anything starts and every
reader of a composed config finds each key there. The groups (dataset, model, sched, optim,
launcher) stay free-form: each names its own ``_target_`` and arguments, typed by the class it
builds. A strategy with flat settings types them with its ``StrategyConfig`` dataclass, whose
defaults are registered here as ``strategy_config/<name>``, the config its ``conf/sched`` file
starts from. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore

from dygsched.engine.distdy.config import DistDyConfig
from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.node_memory.config import NodeMemoryConfig, ShardedMemoryConfig, SvenConfig
from dygsched.engine.strategy_config import StrategyConfig

# strategy_config/<name>: what each conf/sched file with flat settings starts from
STRATEGY_CONFIGS: dict[str, type[StrategyConfig]] = {
    "flare": FlareConfig,
    "distdy": DistDyConfig,
    "node_memory": NodeMemoryConfig,
    "sharded_memory": ShardedMemoryConfig,
    "sven": SvenConfig,
}


@dataclass
class SplitSchema:
    """By time: train, then validation, then test (the rest)."""

    train: float = 0.7
    val: float = 0.15
    new_nodes: float = 0.0  # event streams: share of nodes hidden from training (DyGLib's inductive split: 0.1)
    by: str = "events"  # event streams: events (count, TGL) | time (timestamp quantiles: DyGLib, TGB, PyG)
    new_nodes_draw: str = "ours"  # which nodes new_nodes hides: ours (numpy, round) | dyglib (Python's random, as DyGLib)


@dataclass
class EvalSchema:
    """Link prediction on event streams: how validation and test draw their negatives (docs/models.md)."""

    negatives: Any = "random"  # random | historical | inductive, or several: [random,historical,inductive]
    negative_pool: str = "all"  # random's destinations: all (TGL) | destinations (DyGLib)
    random_share: float = 0.0  # historical/inductive: share drawn at random anyway (0: DyGLib; 0.5: TGB's mix)
    hits_k: int = 10  # hits@k beside MRR when eval_negatives > 1
    inductive: str = "in_phase"  # *_inductive metrics: in_phase (the phase's pass) | apart (DyGLib's new-node pass)
    average: str = "pooled"  # AP and AUC: pooled over the phase's pairs | per_batch (the mean over batches: TGL, DyGLib)
    # > 0: rank every positive against this many fixed negatives (TGB's hist_rnd, half historical), generated
    # once per dataset, cut, split and seed and stored in the cache, read by snapshot and event models alike
    one_vs_many: int = 0


@dataclass
class LinkSchema:
    """Link prediction with snapshot models (``task=link``): docs/models.md."""

    negatives: int = 1  # training negatives per positive pair (uniform destinations, drawn anew each epoch)
    embedding_dim: int = 64  # the width of the node embeddings the decoder scores
    # windows: each group from zero states, evaluated alone | utg: UTG's training procedure (each window starts
    # from the state the one before left; evaluation streams every snapshot in order, scoring the next)
    procedure: str = "windows"


@dataclass
class NodeTaskSchema:
    """Node property prediction on event streams (``task=node``): docs/models.md."""

    # a finished link-prediction run (its folder, or its run_id in results_dir) whose weights the model starts from
    init_from: str | None = None
    # frozen: only the classifier trains (DyGLib, TGN) | fine_tune: its loss trains the model too | link: the model
    # trains by link prediction, the classifier on its detached embeddings; null: frozen with init_from, link without
    backbone: str | None = None
    dropout: float = 0.1  # the classifier's dropout (DyGLib's MLPClassifier)


@dataclass
class GradSyncSchema:
    """One bucketed all-reduce of the gradients per optimizer step."""

    bucket_mb: float = 25.0
    overlap: bool = False  # start each bucket's all-reduce during the step's last backward


@dataclass
class MetricsSchema:
    count_flops: bool = True  # graph-convolution FLOPs per epoch (docs/metrics.md: what counting costs)
    count_syncs: bool = False  # the training steps' host-device synchronisations (dygsched/engine/host_syncs.py)


@dataclass
class EarlyStopSchema:
    """Stop once a validation metric stopped improving; off unless both are set (docs/models.md)."""

    metric: str | None = None  # val.<metric>, e.g. val.ap (event streams) or val.mse (snapshot regression)
    patience: int | None = None  # epochs without improvement before the run stops (at least 1)
    mode: str | None = None  # max | min; unset: min for loss, mse and mae, max otherwise


@dataclass
class RunSchema:
    dataset: Any = None
    model: Any = None
    sched: Any = None
    optim: Any = None
    launcher: Any = None
    world_size: Any = 2  # ranks: an integer, or 'auto' = one per GPU, else 2 CPU processes
    epochs: int = 5
    seed: int = 0
    window: int = 4  # snapshots per group (sliding windows)
    # node | link; null: node targets on snapshots (regression or classification, as the dataset's),
    # link prediction on event streams. task=link with a snapshot model scores the next snapshot's pairs;
    # task=node on a labelled event stream predicts its labels (node_task: the classifier's settings)
    task: str | None = None
    link: LinkSchema = field(default_factory=LinkSchema)
    node_task: NodeTaskSchema = field(default_factory=NodeTaskSchema)
    split: SplitSchema = field(default_factory=SplitSchema)
    eval_negatives: int = 1  # event streams: negatives per validation/test event (1: TGL's AP/AUC; e.g. 100 adds TGB's MRR)
    # event streams: <folder>/<name> reads TGB's fixed negatives <name>_val_ns.pkl, <name>_test_ns.pkl
    tgb_negatives: str | None = None
    eval: EvalSchema = field(default_factory=EvalSchema)
    grad_sync: GradSyncSchema = field(default_factory=GradSyncSchema)
    metrics: MetricsSchema = field(default_factory=MetricsSchema)
    early_stop: EarlyStopSchema = field(default_factory=EarlyStopSchema)
    device: str = "auto"  # auto | cpu | cuda
    # process group backend; auto: cpu:gloo,cuda:nccl when every rank has a GPU of its own, else gloo;
    # or e.g. gloo, nccl, cpu:gloo
    dist_backend: str = "auto"
    dist_timeout_s: float = 300.0  # collective timeout: a lost rank cannot hang the run for longer
    checkpoint: bool = True  # write checkpoint.pt (model, optimizer, plan, RNG states, metrics) after every epoch
    resume: Any = None  # true: continue the latest checkpointed run with these settings; or a run folder
    results_dir: str = "results"
    run_id: str | None = None  # generated when null; a plain name (letters, digits, - _ .)
    overwrite: bool = False  # true: a run_id that names an earlier run moves that run aside (<id>.replaced-<time>)
    progress: bool = True


def register() -> None:
    store = ConfigStore.instance()
    store.store(name="run_schema", node=RunSchema)
    for name, config_type in STRATEGY_CONFIGS.items():
        store.store(group="strategy_config", name=name, node=config_type.defaults())
