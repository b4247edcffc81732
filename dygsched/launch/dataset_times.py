"""Group times for ``dygsched plan --dataset``: a configured dataset's training groups priced by the cost model."""

from __future__ import annotations

from dygsched.data.loading import load_graph
from dygsched.engine.build import run_settings
from dygsched.engine.objective import build_split
from dygsched.engine.run_config import plain_config
from dygsched.launch.compose import compose_config
from dygsched.planner.cost_model import CostModel, group_times_from_sizes


def dataset_group_times(overrides: list[str], cost_model: CostModel) -> list[float]:
    """Compose the run config with ``overrides`` (``dataset=...``, ``window=...``) and price its training groups."""
    cfg = plain_config(compose_config(overrides))
    graph = load_graph(cfg["dataset"])
    split = build_split(graph, run_settings(cfg))
    sizes = [group.work(graph) for group in split.train]
    return group_times_from_sizes([n for n, _ in sizes], [e for _, e in sizes], cost_model)
