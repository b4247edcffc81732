"""The Hydra application behind ``dygsched run``.

Overrides are composed once up front with Hydra's compose API, so an unknown name or a bad
value is one clear line before anything starts; then ``hydra.main`` runs the job (or a sweep with
``-m``), so launcher plugins and multirun work as in any Hydra app. As each run of a sweep starts,
one line says which of how many it is and what it sets (quiet with ``progress=false``).
"""

from __future__ import annotations

import difflib
import itertools
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from dygsched.data.paths import register_resolver
from dygsched.errors import ConfigError, DygschedError
from dygsched.launch.resolvers import register as register_launch_resolvers
from dygsched.launch.schema import register as register_schema

CONFIG_MODULE = "dygsched.conf"
CONFIG_NAME = "config"


@dataclass(frozen=True)
class SweepShape:
    """A ``-m`` sweep as its progress lines name it: how many runs, and the keys that vary."""

    runs: int
    varied: tuple[str, ...]


_failures: list[DygschedError] = []
_sweep: SweepShape | None = None  # the sweep ``main`` is running, where it could expand its points
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
            raise ConfigError(
                f"cannot parse the override {message.split(': ', 1)[-1].split(' See https')[0].removesuffix('^').strip()!r}: a value with spaces, "
                "non-ASCII letters or other special characters must be quoted for Hydra, e.g. 'dataset.path=\"/data/my file.csv\"' "
                "(docs/operations.md)"
            ) from None
        unknown = re.match(r"Could not override '([^']+)'\. To append to your config use \+", message)
        if unknown:  # Hydra's advice (add it with +) would only make the setting silently unread here
            raise ConfigError(unknown_key_message(unknown.group(1))) from None
        if exc.__cause__ is not None:  # e.g. the type error behind "Error merging override"
            message += ": " + str(exc.__cause__).strip().splitlines()[0]
        raise ConfigError(message.replace("In 'config': ", "").replace(" Available options", "; available options")) from None


def config_groups() -> list[str]:
    """The config groups (folders of ``conf/``): ``model=``, ``sched=``, ``+experiment=``..."""
    from importlib.resources import files

    return sorted(entry.name for entry in files(CONFIG_MODULE).iterdir() if entry.is_dir() and not entry.name.startswith("_"))


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
            siblings = sorted(node.keys()) if isinstance(node, DictConfig) else []
        except DygschedError:
            siblings = []
        close = difflib.get_close_matches(rest.split(".")[0], siblings, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(f'{head}.{c}' for c in close)}? " if close else ""
        return f"unknown key '{key}': {hint}{head} has {', '.join(siblings)}"
    close = difflib.get_close_matches(head, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"unknown key '{key}': {hint}keys: {', '.join(top_level_keys())}; groups: {', '.join(config_groups())}"


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


def print_summary(summary: dict[str, Any], run_dir: str) -> None:
    evaluation = summary.get("eval") or {}
    rows = [
        ("run", summary.get("run_id")),
        ("status", summary.get("status")),
        ("epoch time (s, median)", _fmt(summary.get("epoch_time_s"))),
        ("imbalance ratio", _fmt(summary.get("imbalance_ratio"))),
        ("final train loss", _fmt(summary.get("final_train_loss"))),
        (f"test {evaluation.get('metric', 'metric')}", _fmt(evaluation.get("value"))),
        ("all-reduce bytes / epoch", (summary.get("comm_bytes_per_epoch") or {}).get("allreduce")),
        ("GPU peak allocated (MB)", _megabytes(summary.get("gpu_peak_allocated_bytes"), "not measured (no GPU)")),
        ("peak resident set (MB)", _megabytes(summary.get("peak_rss_bytes"), "not measured")),
    ]
    if summary.get("saved_for_backward_bytes") is not None:
        rows.append(("saved for backward (MB)", _megabytes(summary["saved_for_backward_bytes"], "")))
    if summary.get("switch_epoch") is not None:
        rows.append(("plan switch epoch / solve (s)", f"{summary['switch_epoch']} / {summary['plan_solve_time_s']:.4f}"))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(f"results in {run_dir}", flush=True)


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _megabytes(value: int | None, otherwise: str) -> str:
    return _fmt(value / 2**20) if value is not None else otherwise


@hydra.main(config_path="pkg://dygsched.conf", config_name=CONFIG_NAME, version_base="1.3")
def _hydra_job(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from dygsched.launch.app import run
    from dygsched.launch.torchrun import SUPERVISED_ENV
    from dygsched.metrics.log import LOGGER, configure_logging

    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN and os.environ.get("SLURM_PROCID", "0") == "0":  # one line per run, not per SLURM task
        configure_logging(bool(cfg.progress))
        logging.getLogger(LOGGER).info(sweep_run_line(int(hydra_cfg.job.num), list(hydra_cfg.overrides.task), _sweep))
    try:
        summary = run(cfg, overrides=list(hydra_cfg.overrides.task))
    except DygschedError as exc:
        print(f"dygsched: error: {exc}", file=sys.stderr, flush=True)
        _failures.append(exc)
        return
    if summary and not os.environ.get(SUPERVISED_ENV):  # empty on ranks other than 0; the launcher prints its own
        print_summary(summary, str(summary.get("run_dir") or Path(str(cfg.results_dir)) / str(summary.get("run_id"))))


def sweep_run_line(number: int, overrides: list[str], sweep: SweepShape | None) -> str:
    """``sweep: run 3 of 8: sched=greedy model=tgcn``, as the sweep's run ``number`` (from 0) starts:
    the overrides of the keys the sweep varies (all of them where the sweep could not be expanded)."""
    if sweep is None:
        return f"sweep: run {number + 1}: {' '.join(overrides) or 'defaults'}"
    shown = [o for o in overrides if o.split("=", 1)[0] in sweep.varied] or overrides
    return f"sweep: run {number + 1} of {sweep.runs}: {' '.join(shown) or 'defaults'}"


def _sweep_choices(overrides: list[str]) -> list[tuple[str, list[str]]]:
    """Each override's key and its values as overrides (several for an ``a,b`` or ``range()`` sweep)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    choices = []
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.get_key_element()
        if override.is_sweep_override():
            values = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            values = [override.input_line]
        choices.append((key, values))
    return choices


def sweep_points(overrides: list[str]) -> list[list[str]]:
    """The override lists of every job a ``-m`` sweep runs (``a,b`` and ``range()`` sweeps expanded)."""
    return [list(point) for point in itertools.product(*(values for _, values in _sweep_choices(overrides)))]


def sweep_shape(overrides: list[str]) -> SweepShape | None:
    """How many runs a ``-m`` sweep has and which keys vary; ``None`` for a form only Hydra expands."""
    try:
        choices = _sweep_choices(overrides)
    except Exception:  # a glob or another sweeper's syntax
        return None
    runs = 1
    for _, values in choices:
        runs *= len(values)
    return SweepShape(runs, tuple(key for key, values in choices if len(values) > 1))


def check_sweep(overrides: list[str]) -> None:
    """Compose and check every point of a sweep before the first job starts (or is submitted)."""
    try:
        points = sweep_points(overrides)
    except Exception:  # a sweep form expanded only by Hydra's sweeper (glob, ...): it reports its own errors
        return
    checked_points(points)


def checked_points(points: list[list[str]]) -> list[tuple[list[str], DictConfig]]:
    """Every point composed and checked (the settings alone, then what the launcher and the strategy
    refuse without data), before any of them runs; a refusal is one line naming its point."""
    composed = []
    for point in points:  # what the settings alone refuse, for every point, before torch is imported
        cfg = compose_config(point)
        try:
            precheck(cfg, point)
        except DygschedError as exc:
            raise ConfigError(f"{exc} (sweep point: {' '.join(point) or 'defaults'})") from None
        composed.append((point, cfg))
    from dygsched.launch.app import static_checks

    for point, cfg in composed:
        try:
            static_checks(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]
        except DygschedError as exc:
            raise ConfigError(f"{exc} (sweep point: {' '.join(point) or 'defaults'})") from None
    return composed


def precheck(cfg: DictConfig, overrides: list[str]) -> None:
    """What the settings alone can refuse, before torch is imported (see ``config_checks``)."""
    from dygsched.launch.config_checks import check_group_types, check_results_dir, check_settings

    try:
        config = OmegaConf.to_container(cfg, resolve=True)
        choices = [o for o in overrides if "=" in o and "." not in o.split("=", 1)[0] and o.lstrip("+~").split("=", 1)[0] in config_groups()]
        defaults = OmegaConf.to_container(compose_config(choices), resolve=True)
    except Exception as exc:  # an interpolation that cannot resolve: the run says so in its own words
        refusal = resolver_refusal(exc)
        if refusal is not None:
            raise refusal from None
        return
    check_settings(config)  # type: ignore[arg-type]
    check_group_types(config, defaults)  # type: ignore[arg-type]
    check_results_dir(Path(str(config["results_dir"])), keep=False)  # type: ignore[index]
    dataset_path = (config.get("dataset") or {}).get("path")  # type: ignore[union-attr]
    if isinstance(dataset_path, str):
        from dygsched.data.download import ensure_readable

        ensure_readable(dataset_path)  # a catalogued download: there, and its bytes intact
    if (config.get("launcher") or {}).get("name") == "local" and "RANK" not in os.environ:  # type: ignore[union-attr]
        from dygsched.launch.fork_server import serves, start_fork_server

        if serves(str(config.get("device", "auto"))):  # type: ignore[union-attr]
            start_fork_server()  # the ranks' imports now, beside the launcher's


def resolver_refusal(exc: BaseException) -> ConfigError | None:
    """The ``ConfigError`` a config resolver raised (e.g. ``dygsched_slurm_tasks``), which OmegaConf
    hands on as its own error with the message in its first line; ``None`` for other errors."""
    prefix = "ConfigError raised while resolving interpolation: "
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ConfigError(first.removeprefix(prefix)) if first.startswith(prefix) else None


def main(argv: list[str]) -> int:
    global _sweep
    multirun_flags = {"-m", "--multirun"}
    flags = {*multirun_flags, "--help", "-h", "--cfg", "-c", "--info", "--hydra-help", "--resolve"}
    multirun = any(arg in multirun_flags for arg in argv)
    sweep_args = [arg for arg in argv if arg not in multirun_flags]
    if not any(arg in flags or arg.startswith("--cfg") for arg in argv):
        precheck(compose_config(argv), argv)
    elif multirun and not any(arg in flags - multirun_flags for arg in argv):
        check_sweep(sweep_args)
    _failures.clear()
    _sweep = sweep_shape(sweep_args) if multirun else None
    saved = sys.argv
    sys.argv = ["dygsched run", *argv]
    try:
        _hydra_job()
    finally:
        sys.argv = saved
    return max(getattr(failure, "exit_code", 1) for failure in _failures) if _failures else 0
