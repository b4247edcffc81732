"""Runs that differ only in their seed, and their metrics as mean ± standard deviation over the seeds.

``seed_groups`` groups runs by their resolved configs with the seed and the bookkeeping
(``BOOKKEEPING``: the run's id and folder, resume, progress, checkpointing, the launcher, what is
counted) left out: two runs share a group only when everything that decides what they compute is
equal. ``over_seeds`` gives, per group and metric, the mean, the sample standard deviation
(``ddof=1``; NaN for one seed), ``seeds`` (how many had the metric: a missing value is left out,
never averaged as 0) and ``runs`` (how many runs the group has). ``dygsched runs --aggregate seed``
and the paper targets that report seeds (``table-stream-accuracy``) both use it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

# Top-level settings that do not change what a run computes, besides the seed.
BOOKKEEPING = (
    "seed",
    "run_id",
    "results_dir",
    "resume",
    "overwrite",
    "progress",
    "checkpoint",
    "launcher",
    "metrics",
    "dist_timeout_s",
)


def config_key(config: Mapping[str, Any], ignore: Sequence[str] = BOOKKEEPING) -> str:
    """A run's config without ``ignore``, as canonical text: equal for runs that differ only there."""
    kept = {key: value for key, value in config.items() if key not in ignore}
    return json.dumps(kept, sort_keys=True, default=str)


def seed_groups(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Each run id -> its group number (groups numbered in the order their first run comes)."""
    numbers: dict[str, int] = {}
    groups: dict[str, int] = {}
    for run_id, config in configs.items():
        key = config_key(config)
        groups[run_id] = numbers.setdefault(key, len(numbers))
    return groups


def over_seeds(long: pd.DataFrame, keys: Sequence[str], value: str = "value") -> pd.DataFrame:
    """Per ``keys`` group of a long table (one row per run and metric): ``mean``, ``std`` (sample,
    over the seeds that have a value), ``seeds`` (how many have one) and ``runs`` (rows in the group)."""
    grouped = long.groupby(list(keys), sort=False, dropna=False)[value]
    table = grouped.agg(mean="mean", std="std", seeds="count", runs="size").reset_index()
    return table


def shown(mean: float, std: float, seeds: int, runs: int) -> str:
    """``0.812 ± 0.010``, with ``(2 of 3 seeds)`` when some seeds lack it; ``-`` when none has it."""
    if seeds == 0:
        return "-"
    text = f"{mean:.4g}" if seeds == 1 or pd.isna(std) else f"{mean:.4g} ± {std:.2g}"
    return text if seeds == runs else f"{text} ({seeds} of {runs} seeds)"
