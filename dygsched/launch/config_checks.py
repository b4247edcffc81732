"""The checks a run's settings get before anything heavy is imported.

``dygsched run`` composes the config and runs these at once, so a mistyped number, a run id that
is a path or a results folder that cannot be written is refused in about the time Python and
Hydra take to start. What needs the code of a component (a strategy's own options, the data, the
model) is checked afterwards, still before any worker starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dygsched.errors import ConfigError

PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_settings(cfg: Mapping[str, Any]) -> None:
    """The top-level settings and the optimiser's, from their values alone."""
    for key in ("epochs", "seed"):
        if not _integer(cfg[key]):
            raise ConfigError(f"{key} must be an integer, got {cfg[key]!r}")
    if cfg["epochs"] < 1:
        raise ConfigError(f"epochs must be at least 1, got {cfg['epochs']}")
    if not 0 <= cfg["seed"] < 2**32:
        raise ConfigError(f"seed must be in [0, 2**32), got {cfg['seed']}")
    check_world_size(cfg["world_size"])
    optim = cfg["optim"]
    for key, value in optim.items():  # every setting of the optimiser a number or a flag, not text or null
        if key not in ("name", "_target_") and not isinstance(value, (int, float, bool, list, tuple)):
            raise ConfigError(f"optim.{key} must be a number, got {value!r}")
    if "lr" in optim and not float(optim["lr"]) > 0:
        raise ConfigError(f"optim.lr must be positive, got {optim['lr']}")
    if float(optim.get("weight_decay") or 0.0) < 0:
        raise ConfigError(f"optim.weight_decay must be non-negative, got {optim['weight_decay']}")
    if not _number(cfg["dist_timeout_s"]) or not cfg["dist_timeout_s"] > 0:
        raise ConfigError(f"dist_timeout_s must be positive seconds, got {cfg['dist_timeout_s']!r}")
    check_dist_backend(cfg.get("dist_backend", "auto"), cfg.get("device", "auto"))
    bucket_mb = cfg["grad_sync"]["bucket_mb"]
    if not _number(bucket_mb) or not bucket_mb > 0:
        raise ConfigError(f"grad_sync.bucket_mb must be a positive number, got {bucket_mb!r}")
    resume = cfg.get("resume")
    if resume is not None and not isinstance(resume, (bool, str)):
        raise ConfigError(f"resume must be true, false or a run folder, got {resume!r}")
    if cfg.get("run_id") is not None:
        check_plain_name(str(cfg["run_id"]), "run_id")
    check_early_stop(cfg.get("early_stop") or {})


def check_early_stop(early_stop: Mapping[str, Any]) -> None:
    """``early_stop.*`` from its values alone; whether the run records the metric is checked with the data."""
    from dygsched.metrics.early_stop import parse_metric

    metric, patience, mode = early_stop.get("metric"), early_stop.get("patience"), early_stop.get("mode")
    if metric is None and patience is None:
        if mode is not None:
            raise ConfigError("early_stop.mode is set but early stopping is off: give early_stop.metric and early_stop.patience")
        return
    if metric is None or patience is None:
        raise ConfigError("early stopping needs both early_stop.metric (e.g. val.ap) and early_stop.patience (epochs)")
    parse_metric(str(metric))
    if not _integer(patience) or patience < 1:
        raise ConfigError(f"early_stop.patience must be an integer of at least 1 epoch, got {patience!r}")
    if mode is not None and mode not in ("max", "min"):
        raise ConfigError(f"early_stop.mode must be max or min, got {mode!r}")


GROUPS_CHECKED = ("dataset", "model", "sched", "launcher")


def check_group_types(cfg: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """Every setting of a component keeps the kind of its default: a number where the config
    file has a number (or null, which the component then refuses or fills in), a flag where it
    has true/false. ``defaults`` is the config composed with the same choices and no values."""
    for group in GROUPS_CHECKED:
        _check_types(cfg.get(group), defaults.get(group), group)


def _check_types(value: Any, default: Any, where: str) -> None:
    if isinstance(default, Mapping) and isinstance(value, Mapping):
        for key, inner in value.items():
            if key in default:
                _check_types(inner, default[key], f"{where}.{key}")
        return
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
    elif _number(default) and value is not None and not _number(value):
        raise ConfigError(f"{where} must be a number, got {value!r}")


# torch.distributed's backends (``Backend.backend_list``, less its placeholders), named here to check a
# setting without importing torch; whether this machine's build has one is checked where the group starts
DIST_BACKENDS = ("gloo", "nccl", "mpi", "ucc", "xccl")


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


def check_world_size(value: Any) -> None:
    """A positive integer (or a string of one, as a shell passes it), or ``auto``."""
    if value == "auto":
        return
    if isinstance(value, bool) or not (_integer(value) or (isinstance(value, str) and value.strip().lstrip("-").isdigit())):
        raise ConfigError(f"world_size must be a positive integer or 'auto', got {value!r}")
    if int(value) < 1:
        raise ConfigError(f"world_size must be at least 1, got {int(value)}")


def check_results_dir(results: Path, keep: bool = True) -> None:
    """``results_dir`` must be a folder this process can create and write, checked before any rank
    starts; with ``keep=False`` the folders the check had to create are removed again (a run
    refused later leaves nothing behind)."""
    missing = [folder for folder in [results, *results.parents] if not folder.exists()]
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"results_dir {results} cannot be used: {exc.strerror or exc}") from None
    writable = os.access(results, os.W_OK | os.X_OK)
    if not keep:
        for folder in missing:  # deepest first
            folder.rmdir()
    if not writable:
        raise ConfigError(f"results_dir {results} cannot be used: not writable")


def check_plain_name(name: str, what: str) -> None:
    """A name the project turns into a path (a run folder): letters, digits, '-', '_' and '.', no
    separator, not '.' or '..', so it cannot point outside the folder it is meant for."""
    if not PLAIN_NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(f"{what} must be a plain name (letters, digits, '-', '_', '.'; no path), got {name!r}")
