"""``RunConfig``: a run's settings as typed values, what the launcher and every rank receive.

``dygsched run`` composes the config with Hydra (``RunSchema`` in ``dygsched/launch/schema.py``
types and defaults every key), checks it once, then builds one ``RunConfig`` from it. The worker
and the launchers read its fields (``run.grad_sync.bucket_mb``, ``run.launcher.params``), so a
mistyped key is an attribute a type checker finds, not a ``KeyError`` mid-run. The blocks that are
open-ended components (the dataset source, the model, the strategy, the optimizer, the launcher)
stay as their ``_target_`` and settings (``ComponentSpec``), typed by the class each builds. It
pickles (it crosses to spawned ranks); a rank under torchrun composes the same one from the same
overrides. ``to_container`` gives back the resolved config, as the run folder's ``config.yaml``
keeps it and ``find_resume`` compares it. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from omegaconf import DictConfig, ListConfig

    from dygsched.engine.strategy import RunSettings


def plain_config(config: DictConfig | ListConfig, resolve: bool = True) -> dict[str, Any]:
    """``config`` as plain containers (interpolations resolved where ``resolve``), typed as what a run
    config is: a dict whose keys are strings (``OmegaConf.to_container`` is typed for any node). A
    saved file that holds a list, not a mapping, is one clear error."""
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(config, resolve=resolve)
    if not isinstance(container, dict):
        raise ConfigError(f"expected a run configuration (a mapping), got a {type(container).__name__}")
    return {str(key): value for key, value in container.items()}


@dataclass(frozen=True)
class ComponentSpec(Mapping[str, Any]):
    """A component block as composed: ``name``, ``_target_`` and its settings. It reads as the
    mapping it came from (what ``instantiate_component`` and the data loaders take)."""

    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        name = self.fields.get("name")
        return None if name is None else str(name)

    @property
    def target(self) -> str | None:
        target = self.fields.get("_target_")
        return None if target is None else str(target)

    @property
    def params(self) -> dict[str, Any]:
        """Its settings, without ``name`` (which names the config file, not an argument)."""
        return {key: value for key, value in self.fields.items() if key != "name"}

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


@dataclass(frozen=True)
class Split:
    train: float = 0.7
    val: float = 0.15
    new_nodes: float = 0.0
    by: str = "events"
    new_nodes_draw: str = "ours"


@dataclass(frozen=True)
class Eval:
    negatives: Any = "random"  # a sampler, "a,b" or a list (dygsched/data/negative_edges.py)
    negative_pool: str = "all"
    random_share: float = 0.0
    hits_k: int = 10
    inductive: str = "in_phase"
    average: str = "pooled"
    one_vs_many: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.one_vs_many, bool) or not isinstance(self.one_vs_many, int) or self.one_vs_many < 0:
            raise ConfigError(f"eval.one_vs_many must be a whole number of negatives (0: off), got {self.one_vs_many!r}")


TASKS = ("node", "link")
LINK_PROCEDURES = ("windows", "utg")


@dataclass(frozen=True)
class Link:
    """``link.*``: link prediction with snapshot models (``task=link``)."""

    negatives: int = 1
    embedding_dim: int = 64
    procedure: str = "windows"

    def __post_init__(self) -> None:
        for name in ("negatives", "embedding_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"link.{name} must be an integer of at least 1, got {value!r}")
        if self.procedure not in LINK_PROCEDURES:
            raise ConfigError(f"link.procedure must be one of {', '.join(LINK_PROCEDURES)}, got {self.procedure!r}")


BACKBONES = ("frozen", "fine_tune", "link")


@dataclass(frozen=True)
class NodeTask:
    """``node_task.*``: node property prediction on event streams (``task=node``; docs/models.md).

    ``init_from``: a finished link-prediction run (its folder, or its run id in ``results_dir``)
    whose weights the model starts from. ``backbone``: ``frozen`` (only the classifier trains,
    DyGLib's and TGN's protocol), ``fine_tune`` (the classifier's loss trains the model too) or
    ``link`` (the model trains by link prediction while the classifier trains on its detached
    embeddings, one run); ``None``: ``frozen`` with ``init_from``, ``link`` without. ``dropout``:
    the classifier's (DyGLib's 0.1)."""

    init_from: str | None = None
    backbone: str | None = None
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.backbone is not None and self.backbone not in BACKBONES:
            raise ConfigError(f"node_task.backbone must be one of {', '.join(BACKBONES)} (or null), got {self.backbone!r}")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ConfigError(f"node_task.dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def mode(self) -> str:
        """The backbone's mode, the default resolved."""
        return self.backbone or ("frozen" if self.init_from else "link")


@dataclass(frozen=True)
class GradSync:
    bucket_mb: float = 25.0
    overlap: bool = False


@dataclass(frozen=True)
class Metrics:
    count_flops: bool = True
    count_syncs: bool = False


@dataclass(frozen=True)
class EarlyStop:
    """``early_stop.*``: off unless ``metric`` and ``patience`` are set (``dygsched.metrics.early_stop``)."""

    metric: str | None = None
    patience: int | None = None
    mode: str | None = None

    @property
    def enabled(self) -> bool:
        return self.metric is not None or self.patience is not None


_BLOCKS: dict[str, type] = {
    "split": Split,
    "eval": Eval,
    "grad_sync": GradSync,
    "metrics": Metrics,
    "early_stop": EarlyStop,
    "link": Link,
    "node_task": NodeTask,
}


def _listed(value: Any) -> str:
    """A setting that is a name, ``a,b`` or a list, as ``a,b`` (what the runs table shows)."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return ",".join(str(item).strip() for item in items)


# what older run folders' config.yaml lacks
_ADDED_LATER: dict[str, Any] = {"eval": {}, "early_stop": {}, "task": None, "link": {}, "node_task": {}}
_COMPONENTS = ("dataset", "model", "sched", "optim", "launcher")


@dataclass(frozen=True)
class RunConfig:
    """Every top-level key of ``RunSchema``, in its order (the order ``config.yaml`` keeps)."""

    dataset: ComponentSpec
    model: ComponentSpec
    sched: ComponentSpec
    optim: ComponentSpec
    launcher: ComponentSpec
    world_size: int | str  # 'auto' until the launcher resolves it
    epochs: int
    seed: int
    window: int
    task: str | None
    link: Link
    node_task: NodeTask
    split: Split
    eval_negatives: int
    tgb_negatives: str | None
    eval: Eval
    grad_sync: GradSync
    metrics: Metrics
    early_stop: EarlyStop
    device: str
    dist_backend: str
    dist_timeout_s: float
    checkpoint: bool
    resume: bool | str | None
    results_dir: str
    run_id: str | None
    overwrite: bool
    progress: bool

    def __post_init__(self) -> None:
        if self.task is not None and self.task not in TASKS:
            raise ConfigError(f"task must be one of {', '.join(TASKS)} (or null: the data's own), got {self.task!r}")

    @classmethod
    def of(cls, config: Mapping[str, Any] | RunConfig) -> RunConfig:
        """From a composed config (a ``DictConfig``, resolved here, or its resolved container)."""
        if isinstance(config, RunConfig):
            return config
        from omegaconf import DictConfig

        if isinstance(config, DictConfig):
            config = plain_config(config)
        names = [f.name for f in dataclasses.fields(cls)]
        config = {**_ADDED_LATER, **config}  # a run folder written before a block existed reads its defaults
        unknown = sorted(set(config) - set(names))
        missing = [name for name in names if name not in config]
        if unknown or missing:
            raise ConfigError(
                f"not a run configuration: {'unknown keys ' + ', '.join(unknown) if unknown else 'no ' + ', '.join(missing)}"
            )
        values: dict[str, Any] = {}
        for name in names:
            value = config[name]
            if name in _COMPONENTS:
                value = ComponentSpec(dict(value or {}))
            elif name in _BLOCKS:
                value = _BLOCKS[name](**value)
            values[name] = value
        return cls(**values)

    def to_container(self) -> dict[str, Any]:
        """The resolved config as plain containers, in the schema's order."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, ComponentSpec):
                value = dict(value.fields)
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                value = dataclasses.asdict(value)
            out[f.name] = value
        return out

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)

    @property
    def settings(self) -> RunSettings:
        """The run-level settings a strategy reads."""
        from dygsched.data.negative_edges import sampler_names
        from dygsched.engine.strategy import RunSettings

        return RunSettings(
            window=int(self.window),
            train_fraction=float(self.split.train),
            val_fraction=float(self.split.val),
            seed=int(self.seed),
            epochs=int(self.epochs),
            new_node_fraction=float(self.split.new_nodes),
            eval_negatives=int(self.eval_negatives),
            tgb_negatives=str(self.tgb_negatives) if self.tgb_negatives else None,
            split_by=str(self.split.by),
            eval_samplers=sampler_names(self.eval.negatives),
            negative_pool=str(self.eval.negative_pool),
            random_share=float(self.eval.random_share),
            hits_k=int(self.eval.hits_k),
            inductive_events=str(self.eval.inductive),
            new_node_draw=str(self.split.new_nodes_draw),
            score_average=str(self.eval.average),
            task=self.task,
            train_negatives=int(self.link.negatives),
            embedding_dim=int(self.link.embedding_dim),
            one_vs_many=int(self.eval.one_vs_many),
            link_procedure=str(self.link.procedure),
            node_task=self.resolved_node_task,
        )

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
            "snapshot": None if self.dataset.fields.get("snapshot") is None else str(self.dataset.fields["snapshot"]),
            "model": self.model.name,
            "sched": self.sched.name,
            "world_size": world_size,
            "epochs": int(self.epochs),
            "seed": int(self.seed),
            # link prediction on event streams: AP, AUC, MRR and hits@k compare only under one rule
            "negatives": _listed(self.eval.negatives),
            "negative_pool": str(self.eval.negative_pool),
            "split_by": str(self.split.by),
            "inductive": str(self.eval.inductive),
            "new_nodes_draw": str(self.split.new_nodes_draw),
            "average": str(self.eval.average),
        }
