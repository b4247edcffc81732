"""Composing a run: the one place ``dygsched run``, the paper stage and the tests get its typed config.

``compose_run`` composes the real configs (``dygsched/conf``) with Hydra's compose API and builds
the run's ``RunConfig`` from the result, once: every value is checked as the typed tree is built
(``dygsched.engine.run_config``), so what comes back is the value the launcher, the ranks, the
checkpoint and the paper stage receive. Hydra's and OmegaConf's own errors become one line each:
an unknown key names the keys of the block it was set in (as the command's own choices composed
it: ``dataset=collegemsg dataset.foo=1`` lists CollegeMsg's keys), an override that does not parse
says how to quote it.

``register`` puts the typed tree's defaults into Hydra's config store before anything is composed:
``run_schema`` (``RunConfig``'s, which ``conf/config.yaml`` starts from), for every strategy's
configuration class ``strategy_config/<Class>`` (which its ``conf/sched`` file starts from), and
``dataset_config/stream`` (``dataset.snapshot``, which every stream's dataset config starts from).
Nothing here imports torch.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import fields
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from dygsched.data.dataset_config import DatasetConfig
from dygsched.data.paths import register_resolver
from dygsched.engine.distdy.config import DistDyConfig
from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.node_memory.config import DepCacheConfig, DepCommConfig, SingleProcessConfig, SvenConfig
from dygsched.engine.run_config import RunConfig
from dygsched.engine.snapshot_groups.config import SnapshotGroupConfig
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError, DygschedError, closest
from dygsched.launch.resolvers import register as register_launch_resolvers

CONFIG_MODULE = "dygsched.conf"
STREAM_DEFAULTS = "/dataset_config/stream@_here_"  # what a stream's dataset config starts from
CONFIG_NAME = "config"
# strategy_config/<Class>: what each conf/sched file starts from (Hydra's store needs the classes before
# any config is composed; a strategy's own class, which imports torch, is not loaded that early)
STRATEGY_CONFIGS: tuple[type[StrategyConfig], ...] = (
    SnapshotGroupConfig,
    FlareConfig,
    DistDyConfig,
    SingleProcessConfig,
    DepCacheConfig,
    DepCommConfig,
    SvenConfig,
)


def register() -> None:
    store = ConfigStore.instance()
    store.store(name="run_schema", node=RunConfig.defaults())
    store.store(group="dataset_config", name="stream", node=DatasetConfig.stream_defaults())
    for config_type in STRATEGY_CONFIGS:
        store.store(group="strategy_config", name=config_type.__name__, node=config_type.defaults())


register()
register_resolver()
register_launch_resolvers()


def compose_run(overrides: list[str]) -> RunConfig:
    """The run ``dygsched run <overrides>`` describes, composed and typed (one ``ConfigError`` line if not)."""
    return typed_run(compose_config(overrides))


def typed_run(cfg: DictConfig) -> RunConfig:
    """A composed config (Hydra's job's, or ``compose_config``'s) as the typed run."""
    return RunConfig.from_config(resolved(cfg))


def compose_config(overrides: list[str]) -> DictConfig:
    """Compose the real configs with ``overrides`` (untyped: ``compose_run`` types them)."""
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    check_added_keys(overrides)
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            return compose(config_name=CONFIG_NAME, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        message = " ".join(str(exc).split()).split(" Config search path")[0]
        if "LexerNoViableAltException" in message or "mismatched input" in message:
            override = message.split(": ", 1)[-1].split(" See https")[0].removesuffix("^").strip()
            raise ConfigError(
                f"cannot parse the override {override!r}: a value with spaces, non-ASCII letters or other "
                "special characters must be quoted for Hydra, e.g. 'dataset.path=\"/data/my file.csv\"' "
                "(docs/operations.md)"
            ) from None
        unknown = re.match(r"Could not override '([^']+)'\. To append to your config use \+", message)
        if unknown and unknown.group(1) == "dataset.snapshot":
            raise ConfigError(not_a_stream_message(overrides)) from None
        if unknown:  # Hydra's advice (add it with +) would only make the setting silently unread here
            raise ConfigError(unknown_key_message(unknown.group(1), overrides)) from None
        if exc.__cause__ is not None:  # e.g. the type error behind "Error merging override"
            message += ": " + str(exc.__cause__).strip().splitlines()[0]
        message = message.replace("In 'config': ", "").replace(" Available options", "; available options")
        missing = re.match(r"Could not find '([^'/]+)/([^']+)'; available options in '[^']+': (.*)$", message)
        if missing:  # a mistyped dataset, model, sched ...: the closest names first
            group, name, options = missing.groups()
            hint = closest(name, options.split(), f"{group}=")
            if hint:
                message = f"unknown {group} '{name}': {hint} (available options in '{group}': {options})"
        raise ConfigError(message) from None


def config_groups() -> list[str]:
    """The config groups (folders of ``conf/``): ``model=``, ``sched=``, ``+experiment=``..."""
    from importlib.resources import files

    return sorted(entry.name for entry in files(CONFIG_MODULE).iterdir() if entry.is_dir() and not entry.name.startswith("_"))


def group_choices(overrides: list[str]) -> list[str]:
    """The overrides that pick a config group's file (``model=gcn``, ``+experiment=...``)."""
    groups = config_groups()
    return [o for o in overrides if "=" in o and "." not in o.split("=", 1)[0] and o.lstrip("+~").split("=", 1)[0] in groups]


def top_level_keys() -> list[str]:
    return sorted(item.name for item in fields(RunConfig))


def unknown_key_message(key: str, overrides: list[str] | None = None) -> str:
    """One line for a key no config has, with the keys and groups that are close to it: for a key
    inside a block, the keys of that block as the command's own group choices compose it."""
    head, _, rest = key.lstrip("+~").partition(".")
    known = sorted(set(top_level_keys()) | set(config_groups()))
    if rest and head in known:
        block, parts = head, rest.split(".")
        siblings = _keys_at(block, group_choices(list(overrides or [])))
        while len(parts) > 1 and parts[0] in siblings:  # the deepest block the key names that exists
            block, parts = f"{block}.{parts[0]}", parts[1:]
            siblings = _keys_at(block, group_choices(list(overrides or [])))
        close = difflib.get_close_matches(parts[0], siblings, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(f'{block}.{c}' for c in close)}? " if close else ""
        return f"unknown key '{key}': {hint}{block} has {', '.join(siblings)}"
    close = difflib.get_close_matches(head, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"unknown key '{key}': {hint}keys: {', '.join(top_level_keys())}; groups: {', '.join(config_groups())}"


def _keys_at(block: str, choices: list[str]) -> list[str]:
    """The keys of ``block`` in the config the group ``choices`` compose (none where that fails)."""
    try:
        node = OmegaConf.select(compose_config(choices), block)
    except DygschedError:
        return []
    return sorted(str(name) for name in node.keys()) if isinstance(node, DictConfig) else []


def not_a_stream_message(overrides: list[str]) -> str:
    """``dataset.snapshot`` set on a dataset whose config has no such key: it is not an event stream."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").split("=", 1)[0] == "dataset"]
    which = f"dataset={chosen[-1]}" if chosen else "the default dataset"
    return (
        f"dataset.snapshot cuts an event stream into snapshots, and {which} is not one (it gives snapshots already); "
        f"the streams that can be cut: {', '.join(stream_datasets())}"
    )


def stream_datasets() -> list[str]:
    """The dataset configs that are event streams: those that start from ``dataset_config/stream``
    (``dataset.snapshot``), themselves or through the config they start from."""
    from importlib.resources import files

    folder = files(CONFIG_MODULE) / "dataset"
    configs = {entry.name.removesuffix(".yaml"): entry for entry in folder.iterdir() if entry.name.endswith(".yaml")}

    def is_stream(name: str, seen: frozenset[str] = frozenset()) -> bool:
        node = OmegaConf.create(configs[name].read_text())
        if not isinstance(node, DictConfig):
            return False
        defaults = [d for d in node.get("defaults", []) if isinstance(d, str)]
        if "snapshot" in node or STREAM_DEFAULTS in defaults:
            return True
        parents = [d for d in defaults if d in configs and d not in seen]
        return any(is_stream(parent, seen | {name}) for parent in parents)

    return sorted(name for name in configs if is_stream(name))


def check_added_keys(overrides: list[str]) -> None:
    """``+name=value`` may add a config group (``+experiment=...``) or a key inside a component
    (``+model.option=...``, which its class then checks); a new top-level key would be read by
    nothing, so it is refused with what is close to it."""
    known = set(top_level_keys()) | set(config_groups())
    for override in overrides:
        if override.startswith("+") and not override.startswith("++") and "=" in override:
            key = override[1:].split("=", 1)[0]
            if key.split(".")[0] not in known:
                raise ConfigError(unknown_key_message(key, overrides))


def resolver_refusal(exc: BaseException) -> ConfigError | None:
    """The ``ConfigError`` a config resolver raised (e.g. ``dygsched_slurm_tasks``), which OmegaConf
    hands on as its own error with the message in its first line; ``None`` for other errors."""
    prefix = "ConfigError raised while resolving interpolation: "
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ConfigError(first.removeprefix(prefix)) if first.startswith(prefix) else None


def resolved(cfg: DictConfig) -> dict[str, Any]:
    """``cfg`` with every interpolation resolved, as plain containers; a resolver's refusal or an
    interpolation that cannot resolve is one ``ConfigError`` line."""
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:
        raise resolver_refusal(exc) or ConfigError(f"invalid configuration: {str(exc).splitlines()[0]}") from None
    if not isinstance(container, dict):
        raise ConfigError(f"expected a run configuration (a mapping), got a {type(container).__name__}")
    return {str(key): value for key, value in container.items()}
