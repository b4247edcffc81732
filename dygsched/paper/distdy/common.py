"""What DistDy's targets share: their report section, the paper's labels, the experiment's configuration and a sweep's runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dygsched.paper.common import completed_runs
from dygsched.paper.target import Section

if TYPE_CHECKING:
    from dygsched.engine.run_config import RunConfig

SECTION = Section(
    "distdy", "DistDy", "Online partitioning of a growing graph, additive storage, sampled training over graph stores."
)
EXPERIMENT = "+experiment=distdy"
SMOKE_SIZES = "+smoke=distdy"  # conf/smoke/distdy.yaml: 600 nodes, 6 snapshots, one epoch
ALL_PARTITIONERS = "distdy,metis,hash,greedy,metis_layer"
# our partitioner names -> the paper's column labels (Table 3); our graphs -> its datasets (Uni: no hot
# nodes, Ex: 10% hot nodes, as the paper's Uni500K and Ex500K at a size this machine holds)
PARTITIONER_LABELS = {"metis": "Metis", "hash": "Hash", "greedy": "Greedy", "metis_layer": "Metis-layer", "distdy": "DistDy"}
DATA_LABELS = {"Uni": "Uni500K", "Ex": "Ex500K"}
HOT_FRACTIONS = {"Uni": 0.0, "Ex": 0.1}


def baseline_partitioners() -> tuple[str, ...]:
    from dygsched.data.partition import ONLINE_PARTITIONERS as PARTITIONERS

    return tuple(name for name in PARTITIONERS if name != "distdy")


def variants() -> tuple[tuple[str, dict[str, float]], ...]:
    """DistDy as the paper writes it, then with our balance extensions (docs/distdy.md), then the baselines."""
    return (
        ("distdy", {}),
        ("distdy+messages", {"message_weight": 4.0}),
        ("distdy+fetch", {"fetch_weight": 16.0}),
        *((name, {}) for name in baseline_partitioners()),
    )


def config(*overrides: str, experiment: bool = True) -> RunConfig:
    """The experiment's run (composed and typed as ``dygsched run`` would) with ``overrides``."""
    from dygsched.launch.compose import compose_run

    return compose_run([*([EXPERIMENT] if experiment else []), *overrides])


def sweep_runs(folder: Path) -> list[tuple[pd.Series, RunConfig]]:
    """Every finished run of a sweep folder: its row of ``runs.parquet`` and its typed configuration."""
    from dygsched.engine.run_config import saved_run

    return [(row, saved_run(folder / row["run_id"])) for _, row in completed_runs(folder).iterrows()]


def ratio_to(table: pd.DataFrame, keys: list[str], value: str, column: str, baseline: str) -> pd.Series:
    """``value`` of the ``baseline`` row (by ``column``) within each ``keys`` group, for every row."""
    return table.groupby(keys)[value].transform(lambda s: s[table.loc[s.index, column] == baseline].iloc[0])
