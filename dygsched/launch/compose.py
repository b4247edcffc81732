"""Composing a run's config: the one place ``dygsched run``, the paper stage and the tests get one.

``compose_config`` composes the real configs (``dygsched/conf``, typed by ``RunSchema``) with
Hydra's compose API and rewrites Hydra's and OmegaConf's errors into one line each: an unknown key
names the keys close to it, an override that does not parse says how to quote it. Nothing here
imports torch.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

from dygsched.data.paths import register_resolver
from dygsched.engine.run_config import plain_config
from dygsched.errors import ConfigError, DygschedError, closest
from dygsched.launch.resolvers import register as register_launch_resolvers
from dygsched.launch.schema import register as register_schema

CONFIG_MODULE = "dygsched.conf"
CONFIG_NAME = "config"

register_schema()
register_resolver()
register_launch_resolvers()


def compose_config(overrides: list[str]) -> DictConfig:
    """Compose the real configs with ``overrides`` (what tests and the pre-check use)."""
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
            raise ConfigError(unknown_key_message(unknown.group(1))) from None
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
    from dygsched.launch.schema import RunSchema

    return sorted(RunSchema.__dataclass_fields__)


def unknown_key_message(key: str) -> str:
    """One line for a key no config has, with the keys and groups that are close to it."""
    head, _, rest = key.lstrip("+~").partition(".")
    known = sorted(set(top_level_keys()) | set(config_groups()))
    if rest and head in known:
        try:
            node = OmegaConf.select(compose_config([]), head)
            siblings = sorted(str(name) for name in node.keys()) if isinstance(node, DictConfig) else []
        except DygschedError:
            siblings = []
        close = difflib.get_close_matches(rest.split(".")[0], siblings, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(f'{head}.{c}' for c in close)}? " if close else ""
        return f"unknown key '{key}': {hint}{head} has {', '.join(siblings)}"
    close = difflib.get_close_matches(head, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"unknown key '{key}': {hint}keys: {', '.join(top_level_keys())}; groups: {', '.join(config_groups())}"


def not_a_stream_message(overrides: list[str]) -> str:
    """``dataset.snapshot`` set on a dataset whose config has no such key: it is not an event stream."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").split("=", 1)[0] == "dataset"]
    which = f"dataset={chosen[-1]}" if chosen else "the default dataset"
    return (
        f"dataset.snapshot cuts an event stream into snapshots, and {which} is not one (it gives snapshots already); "
        f"the streams that can be cut: {', '.join(stream_datasets())}"
    )


def stream_datasets() -> list[str]:
    """The dataset configs that are event streams: those with a ``snapshot`` setting, their own or
    from the config they start from."""
    from importlib.resources import files

    folder = files(CONFIG_MODULE) / "dataset"
    configs = {entry.name.removesuffix(".yaml"): entry for entry in folder.iterdir() if entry.name.endswith(".yaml")}

    def is_stream(name: str, seen: frozenset[str] = frozenset()) -> bool:
        node = OmegaConf.create(configs[name].read_text())
        if not isinstance(node, DictConfig):
            return False
        if "snapshot" in node:
            return True
        parents = [d for d in node.get("defaults", []) if isinstance(d, str) and d in configs and d not in seen]
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
                raise ConfigError(unknown_key_message(key))


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
        return plain_config(cfg)
    except Exception as exc:
        raise resolver_refusal(exc) or ConfigError(f"invalid configuration: {str(exc).splitlines()[0]}") from None
