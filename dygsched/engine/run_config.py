"""``RunConfig``: a run's configuration as one frozen, typed tree, the value every stage receives.

These dataclasses are Hydra's schema and the run's value at once: ``dygsched.launch.compose``
registers ``RunConfig.defaults()`` as the config ``run_schema`` that ``conf/config.yaml`` starts from
(its groups pick the dataset, model, strategy, optimizer and launcher), composes the command's
overrides once and builds one ``RunConfig`` from the result, which ``dygsched run`` hands to Hydra's
job, the launcher, every rank, the checkpoint and the paper stage. Each default is written here
once; each block checks its values when it is constructed (``dygsched.typed_config``: the types;
``__post_init__``: ranges and choices), so a bad value is the same one line from the command
line, a paper sweep or a test. Strategies read their run-level settings from it too
(``settings.split.train``, ``settings.eval.hits_k``).

The components are typed by what they build: ``sched`` by the strategy's configuration class
(``StrategyConfig``: its ``_target_``), ``dataset`` by ``DatasetConfig`` and its source's class,
``model`` and ``launcher`` as ``Part``s of their classes, ``optim`` by ``OptimizerConfig``. It pickles
(it crosses to spawned ranks); ``to_container`` gives back the resolved config, as a run folder's
``config.yaml`` keeps it, and ``from_saved`` reads one back. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from dygsched.data.dataset_config import DatasetConfig
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError
from dygsched.typed_config import Part, Typed

S = TypeVar("S", bound=StrategyConfig)

TASKS = ("node", "link")
LINK_PROCEDURES = ("windows", "utg")
PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# torch.distributed's backends (``Backend.backend_list``, less its placeholders), named here to check a
# setting without importing torch; whether this machine's build has one is checked where the group starts
DIST_BACKENDS = ("gloo", "nccl", "mpi", "ucc", "xccl")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Split(Typed):
    """``split.*``: by time, train, then validation, then test (the rest)."""

    key: ClassVar[str] = "split"

    train: float = 0.7
    val: float = 0.15
    new_nodes: float = 0.0  # event streams: share of nodes hidden from training (DyGLib's inductive split: 0.1)
    by: str = "events"  # event streams: events (count, TGL) | time (timestamp quantiles: DyGLib, TGB, PyG)
    new_nodes_draw: str = "ours"  # which nodes new_nodes hides: ours (numpy, round) | dyglib (Python's random, as DyGLib)


@dataclass(frozen=True)
class Eval(Typed):
    """``eval.*``: how link prediction's validation and test draw their negatives (docs/models.md)."""

    key: ClassVar[str] = "eval"

    negatives: Any = "random"  # random | historical | inductive, or several: [random,historical,inductive]
    negative_pool: str = "all"  # random's destinations: all (TGL) | destinations (DyGLib)
    random_share: float = 0.0  # historical/inductive: share drawn at random anyway (0: DyGLib; 0.5: TGB's mix)
    hits_k: int = 10  # hits@k beside MRR when eval_negatives > 1
    inductive: str = "in_phase"  # *_inductive metrics: in_phase (the phase's pass) | apart (DyGLib's new-node pass)
    average: str = "pooled"  # AP and AUC: pooled over the phase's pairs | per_batch (the mean over batches: TGL, DyGLib)
    # > 0: rank every positive against this many fixed negatives (TGB's hist_rnd, half historical), generated
    # once per dataset, cut, split and seed and stored in the cache, read by snapshot and event models alike
    one_vs_many: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.one_vs_many, bool) or not isinstance(self.one_vs_many, int) or self.one_vs_many < 0:
            raise ConfigError(f"eval.one_vs_many must be a whole number of negatives (0: off), got {self.one_vs_many!r}")
        super().__post_init__()

    @property
    def samplers(self) -> tuple[str, ...]:
        """``negatives`` as sampler names (an unknown one refused in one line)."""
        from dygsched.data.negative_edges import sampler_names

        return sampler_names(self.negatives)

    @property
    def default_negatives(self) -> bool:
        """TGL's rule alone: uniform destinations among all nodes (metric names carry no sampler)."""
        return self.samplers == ("random",) and self.negative_pool == "all"


@dataclass(frozen=True)
class Link(Typed):
    """``link.*``: link prediction with snapshot models (``task=link``, docs/models.md)."""

    key: ClassVar[str] = "link"

    negatives: int = 1  # training negatives per positive pair (uniform destinations, drawn anew each epoch)
    embedding_dim: int = 64  # the width of the node embeddings the decoder scores
    # windows: each group from zero states, evaluated alone | utg: UTG's training procedure (each window starts
    # from the state the one before left; evaluation streams every snapshot in order, scoring the next)
    procedure: str = "windows"

    def __post_init__(self) -> None:
        for name in ("negatives", "embedding_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"link.{name} must be an integer of at least 1, got {value!r}")
        super().__post_init__()
        if self.procedure not in LINK_PROCEDURES:
            raise ConfigError(f"link.procedure must be one of {', '.join(LINK_PROCEDURES)}, got {self.procedure!r}")


BACKBONES = ("frozen", "fine_tune", "link")


@dataclass(frozen=True)
class NodeTask(Typed):
    """``node_task.*``: node property prediction on event streams (``task=node``; docs/models.md).

    ``init_from``: a finished link-prediction run (its folder, or its run id in ``results_dir``)
    whose weights the model starts from. ``backbone``: ``frozen`` (only the classifier trains,
    DyGLib's and TGN's protocol), ``fine_tune`` (the classifier's loss trains the model too) or
    ``link`` (the model trains by link prediction while the classifier trains on its detached
    embeddings, one run); ``None``: ``frozen`` with ``init_from``, ``link`` without. ``dropout``:
    the classifier's (DyGLib's 0.1)."""

    key: ClassVar[str] = "node_task"

    init_from: str | None = None
    backbone: str | None = None
    dropout: float = 0.1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.backbone is not None and self.backbone not in BACKBONES:
            raise ConfigError(f"node_task.backbone must be one of {', '.join(BACKBONES)} (or null), got {self.backbone!r}")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ConfigError(f"node_task.dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def mode(self) -> str:
        """The backbone's mode, the default resolved."""
        return self.backbone or ("frozen" if self.init_from else "link")


@dataclass(frozen=True)
class GradSync(Typed):
    """``grad_sync.*``: one bucketed all-reduce of the gradients per optimizer step."""

    key: ClassVar[str] = "grad_sync"

    bucket_mb: float = 25.0
    overlap: bool = False  # start each bucket's all-reduce during the step's last backward

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.bucket_mb > 0:
            raise ConfigError(f"grad_sync.bucket_mb must be a positive number, got {self.bucket_mb!r}")


@dataclass(frozen=True)
class Metrics(Typed):
    """``metrics.*``: what a run counts besides its timings (docs/measurements.md)."""

    key: ClassVar[str] = "metrics"

    count_flops: bool = True  # graph-convolution FLOPs per epoch (docs/measurements.md: what counting costs)
    count_syncs: bool = False  # the training steps' host-device synchronisations (dygsched/engine/host_syncs.py)


@dataclass(frozen=True)
class EarlyStop(Typed):
    """``early_stop.*``: stop once a validation metric stopped improving; off unless both are set (docs/models.md)."""

    key: ClassVar[str] = "early_stop"

    metric: str | None = None  # val.<metric>, e.g. val.ap (event streams) or val.mse (snapshot regression)
    patience: int | None = None  # epochs without improvement before the run stops (at least 1)
    mode: str | None = None  # max | min; unset: min for loss, mse and mae, max otherwise

    def __post_init__(self) -> None:
        """Its values alone; whether the run records the metric is checked with the data."""
        from dygsched.metrics.early_stop import parse_metric

        metric, patience, mode = self.metric, self.patience, self.mode
        if metric is None and patience is None:
            if mode is not None:
                raise ConfigError(
                    "early_stop.mode is set but early stopping is off: give early_stop.metric and early_stop.patience"
                )
            return
        if metric is None or patience is None:
            raise ConfigError("early stopping needs both early_stop.metric (e.g. val.ap) and early_stop.patience (epochs)")
        parse_metric(str(metric))
        if not _integer(patience) or patience < 1:
            raise ConfigError(f"early_stop.patience must be an integer of at least 1 epoch, got {patience!r}")
        if mode is not None and mode not in ("max", "min"):
            raise ConfigError(f"early_stop.mode must be max or min, got {mode!r}")
        super().__post_init__()

    @property
    def enabled(self) -> bool:
        return self.metric is not None or self.patience is not None


@dataclass(frozen=True)
class OptimizerConfig(Part):
    """``optim``: any optimizer class (``_target_``, e.g. ``torch.optim.Adam``) and its settings, each a
    number, a flag or a list of numbers (Adam's ``betas``); ``lr`` typed, as the run and the paper's
    benchmarks read it."""

    lr: float | None = None

    def __post_init__(self) -> None:
        lr = self.lr
        if isinstance(lr, bool) or not isinstance(lr, (int, float)):
            raise ConfigError(f"optim.lr must be a number, got {lr!r}")
        if not lr > 0:
            raise ConfigError(f"optim.lr must be positive, got {lr}")
        for key, value in self.settings.items():  # every setting a number or a flag, not text or null
            if not isinstance(value, (int, float, bool, list, tuple)):
                raise ConfigError(f"optim.{key} must be a number, got {value!r}")
        if float(self.settings.get("weight_decay") or 0.0) < 0:
            raise ConfigError(f"optim.weight_decay must be non-negative, got {self.settings['weight_decay']}")
        super().__post_init__()

    @property
    def learning_rate(self) -> float:
        """``lr`` as a number (construction refuses a part without one)."""
        if self.lr is None:
            raise ConfigError("optim.lr must be a number, got None")
        return float(self.lr)


def check_world_size(value: Any) -> None:
    """A positive integer (or a string of one, as a shell passes it), or ``auto``."""
    if value == "auto":
        return
    if isinstance(value, bool) or not (_integer(value) or (isinstance(value, str) and value.strip().lstrip("-").isdigit())):
        raise ConfigError(f"world_size must be a positive integer or 'auto', got {value!r}")
    if int(value) < 1:
        raise ConfigError(f"world_size must be at least 1, got {int(value)}")


def check_dist_backend(value: Any, device: Any = "auto") -> None:
    """``auto``, a backend (``gloo``, ``nccl``, ...) or one per device type (``cpu:gloo,cuda:nccl``), as
    ``torch.distributed.init_process_group`` takes it; with ``device=cpu`` it must serve CPU tensors."""
    if value == "auto":
        return
    usage = (
        f"dist_backend must be auto, a backend ({', '.join(DIST_BACKENDS)}) or device:backend pairs "
        f"such as cpu:gloo,cuda:nccl, got {value!r}"
    )
    if not isinstance(value, str) or not value:
        raise ConfigError(usage)
    if ":" not in value:
        if value not in DIST_BACKENDS:
            raise ConfigError(usage)
        if device == "cpu" and value in ("nccl", "xccl"):  # GPU-only backends
            raise ConfigError(f"dist_backend={value} has no backend for CPU tensors, and device=cpu (use gloo or cpu:gloo)")
        return
    devices = []
    for pair in value.split(","):
        device_type, _, backend = pair.partition(":")
        if not re.fullmatch(r"[a-z]+", device_type) or backend not in DIST_BACKENDS:
            raise ConfigError(usage)
        devices.append(device_type)
    if len(set(devices)) != len(devices):
        raise ConfigError(f"dist_backend names a device type twice: {value!r}")
    if device == "cpu" and "cpu" not in devices:
        raise ConfigError(f"dist_backend={value} has no backend for CPU tensors, and device=cpu (add cpu:gloo)")


def check_plain_name(name: str, what: str) -> None:
    """A name the project turns into a path (a run folder): letters, digits, '-', '_' and '.', no
    separator, not '.' or '..', so it cannot point outside the folder it is meant for."""
    if not PLAIN_NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(f"{what} must be a plain name (letters, digits, '-', '_', '.'; no path), got {name!r}")


def _listed(value: Any) -> str:
    """A setting that is a name, ``a,b`` or a list, as ``a,b`` (what the runs table shows)."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return ",".join(str(item).strip() for item in items)


@dataclass(frozen=True)
class RunConfig(Typed):
    """Every top-level setting of ``dygsched run``, its type and its default, in the order
    ``config.yaml`` keeps them; the five components come from the config groups."""

    dataset: DatasetConfig
    model: Part
    sched: StrategyConfig
    optim: OptimizerConfig
    launcher: Part
    world_size: int | str = 2  # ranks: an integer, or 'auto' = one per GPU, else 2 CPU processes
    epochs: int = 5
    seed: int = 0
    window: int = 4  # snapshots per group (sliding windows)
    # node | link; null: node targets on snapshots (regression or classification, as the dataset's),
    # link prediction on event streams. task=link with a snapshot model scores the next snapshot's pairs;
    # task=node on a labelled event stream predicts its labels (node_task: the classifier's settings)
    task: str | None = None
    link: Link = field(default_factory=Link)
    node_task: NodeTask = field(default_factory=NodeTask)  # task=node on a labelled event stream: the classifier's settings
    split: Split = field(default_factory=Split)
    eval_negatives: int = 1  # event streams: negatives per validation/test event (1: TGL's AP/AUC; e.g. 100 adds TGB's MRR)
    # event streams: <folder>/<name> reads TGB's fixed negatives <name>_val_ns.pkl, <name>_test_ns.pkl
    tgb_negatives: str | None = None
    eval: Eval = field(default_factory=Eval)
    grad_sync: GradSync = field(default_factory=GradSync)
    metrics: Metrics = field(default_factory=Metrics)
    early_stop: EarlyStop = field(default_factory=EarlyStop)
    device: str = "auto"  # auto | cpu | cuda
    # process group backend; auto: cpu:gloo,cuda:nccl when every rank has a GPU of its own, else gloo;
    # or e.g. gloo, nccl, cpu:gloo
    dist_backend: str = "auto"
    dist_timeout_s: float = 300.0  # collective timeout: a lost rank cannot hang the run for longer
    checkpoint: bool = True  # write checkpoint.pt (model, optimizer, plan, RNG states, metrics) after every epoch
    # a run folder (its own settings); true: the latest checkpointed run with these settings, refused
    # when there is none; auto: that run, else a new one
    resume: bool | str | None = None
    results_dir: str = "results"
    run_id: str | None = None  # generated when null; a plain name (letters, digits, - _ .)
    overwrite: bool = False  # true: a run_id that names an earlier run moves that run aside (<id>.replaced-<time>)
    progress: bool = True

    def __post_init__(self) -> None:
        check_world_size(self.world_size)
        if self.resume is not None and not isinstance(self.resume, (bool, str)):
            raise ConfigError(f"resume must be true, false, auto or a run folder, got {self.resume!r}")
        if not _number(self.dist_timeout_s) or not self.dist_timeout_s > 0:
            raise ConfigError(f"dist_timeout_s must be positive seconds, got {self.dist_timeout_s!r}")
        super().__post_init__()
        for name, block in (("dataset", DatasetConfig), ("model", Part), ("optim", OptimizerConfig), ("launcher", Part)):
            if not isinstance(getattr(self, name), block):
                raise ConfigError(f"{name} must be a {block.__name__}, got {getattr(self, name)!r}")
        if not isinstance(self.sched, StrategyConfig):
            raise ConfigError(f"sched must be a strategy's configuration (a StrategyConfig), got {self.sched!r}")
        if self.epochs < 1:
            raise ConfigError(f"epochs must be at least 1, got {self.epochs}")
        if not 0 <= self.seed < 2**32:
            raise ConfigError(f"seed must be in [0, 2**32), got {self.seed}")
        if self.window < 1:
            raise ConfigError(f"window must be at least 1 snapshot, got {self.window}")
        if self.task is not None and self.task not in TASKS:
            raise ConfigError(f"task must be one of {', '.join(TASKS)} (or null: the data's own), got {self.task!r}")
        check_dist_backend(self.dist_backend, self.device)
        if self.run_id is not None:
            check_plain_name(self.run_id, "run_id")

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)

    def strategy_settings(self, config_type: type[S]) -> S:
        """``sched`` as the strategy's own configuration class (one line if the run's strategy is another)."""
        if not isinstance(self.sched, config_type):
            raise ConfigError(f"sched={self.sched.name} is configured by {type(self.sched).__name__}, not {config_type.__name__}")
        return self.sched

    def link_metric_names(self, ranking: bool) -> frozenset[str]:
        """What link prediction's evaluation reports under ``eval.negatives`` (``ranking``: with MRR and hits@k)."""
        from dygsched.metrics.link_prediction import link_metric_names, sampler_label

        labels = (
            None if self.eval.default_negatives else tuple(sampler_label(s, self.eval.negative_pool) for s in self.eval.samplers)
        )
        return link_metric_names(ranking, self.eval.hits_k, labels)

    @property
    def resolved_node_task(self) -> NodeTask:
        """``node_task`` with ``init_from`` as the run folder it names (a run id is looked for in
        ``results_dir``); ``mode`` resolves the backbone's."""
        from pathlib import Path

        block = self.node_task
        init_from = None
        if block.init_from:
            path = Path(str(block.init_from)).expanduser()
            named = Path(self.results_dir) / str(block.init_from)
            init_from = str((path if path.is_dir() or not named.is_dir() else named).resolve())
        return dataclasses.replace(block, init_from=init_from)

    def identity(self, run_id: str, world_size: int) -> dict[str, Any]:
        """What names a run in its summary and the runs table, known before it trains."""
        return {
            "run_id": run_id,
            "dataset": self.dataset.name,
            # an event stream cut into snapshots (dataset.snapshot): runs of other cuts are other data
            "snapshot": None if self.dataset.snapshot is None else str(self.dataset.snapshot),
            "model": self.model.name,
            "sched": self.sched.name,
            "world_size": world_size,
            "epochs": self.epochs,
            "seed": self.seed,
            # link prediction on event streams: AP, AUC, MRR and hits@k compare only under one rule
            "negatives": _listed(self.eval.negatives),
            "negative_pool": self.eval.negative_pool,
            "split_by": self.split.by,
            "inductive": self.eval.inductive,
            "new_nodes_draw": self.split.new_nodes_draw,
            "average": self.eval.average,
        }

    @classmethod
    def from_saved(cls, config: Mapping[str, Any]) -> RunConfig:
        """A run folder's ``config.yaml`` (resolved when it was written), also one written before a
        setting existed (its default) or before the strategies' blocks were their configuration
        classes (``FORMER_STRATEGIES``)."""
        values = {**ADDED_LATER, **config}
        sched = dict(values.get("sched") or {})
        target = str(sched.get("_target_", ""))
        if target in FORMER_STRATEGIES:
            sched["_target_"] = FORMER_STRATEGIES[target]
            for block in ("planner", "timeline"):
                if isinstance(sched.get(block), Mapping):
                    sched[block] = {k: v for k, v in sched[block].items() if k != "_target_"}
            values["sched"] = sched
        return cls.from_config(values)


def saved_run(run_dir: Any) -> RunConfig:
    """The typed configuration a run folder's ``config.yaml`` holds (``RunConfig.from_saved``); a file
    that is missing, unreadable or not a run's configuration is one ``ConfigError`` line."""
    from pathlib import Path

    from omegaconf import OmegaConf

    path = Path(run_dir) / CONFIG_FILE
    try:
        data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as exc:  # missing, unreadable, not YAML
        raise ConfigError(f"cannot read {path} ({str(exc).strip().splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a run configuration")
    try:
        return RunConfig.from_saved({str(key): value for key, value in data.items()})
    except ConfigError as exc:
        raise ConfigError(f"{path} is not a run configuration of this version ({exc})") from None


CONFIG_FILE = "config.yaml"  # a run folder's configuration, as it ran (resolved)
# What older run folders' config.yaml lacks (their runs had these defaults), and the strategy classes
# their sched blocks named before each strategy's block composed into its configuration class.
ADDED_LATER: dict[str, Any] = {"eval": {}, "early_stop": {}, "task": None, "link": {}, "node_task": {}}
FORMER_STRATEGIES = {
    "dygsched.engine.snapshot_groups.SnapshotGroupStrategy": "dygsched.engine.snapshot_groups.config.SnapshotGroupConfig",
    "dygsched.engine.flare.FlareStrategy": "dygsched.engine.flare.config.FlareConfig",
    "dygsched.engine.distdy.DistDyStrategy": "dygsched.engine.distdy.config.DistDyConfig",
    "dygsched.engine.node_memory.single.SingleProcessStrategy": "dygsched.engine.node_memory.config.SingleProcessConfig",
    "dygsched.engine.node_memory.depcache.DepCacheStrategy": "dygsched.engine.node_memory.config.DepCacheConfig",
    "dygsched.engine.node_memory.depcomm.DepCommStrategy": "dygsched.engine.node_memory.config.DepCommConfig",
    "dygsched.engine.node_memory.sven.SvenStrategy": "dygsched.engine.node_memory.config.SvenConfig",
}
