"""PyTorch Geometric Temporal: its signal objects, and its dataset loaders fed from local files.

The loaders of ``torch_geometric_temporal`` download their JSON in ``__init__``; the sources here
subclass them and read the same JSON from a local path instead, so every feature and target
transformation stays the library's own. ``torch_geometric_temporal`` is imported lazily: the
rest of dygsched does not need it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError


def from_signal(signal: Any, name: str, task: Task = Task.REGRESSION, num_classes: int = 0) -> TemporalGraph:
    """Convert any PyG Temporal signal (``DynamicGraphTemporalSignal``, ``StaticGraphTemporalSignal``,
    ``DynamicGraphStaticSignal``, ...) that iterates over ``Data`` snapshots into a ``TemporalGraph``."""
    snapshots = []
    try:
        for data in signal:
            num_nodes = int(data.x.shape[0])
            edge_index = data.edge_index.long()
            if edge_index.numel() == 0:  # a snapshot without edges: kept, as [2, 0]
                edge_index = edge_index.reshape(2, 0)
            weight = data.edge_attr
            if weight is None:
                weight = torch.ones(edge_index.shape[1])
            y = data.y.long() if task is Task.CLASSIFICATION else data.y.float()
            if y.dim() > 1:
                y = y.reshape(num_nodes, -1)[:, 0]
            snapshots.append(
                Snapshot(
                    edge_index=edge_index,
                    edge_weight=weight.float().reshape(-1),
                    x=data.x.float(),
                    y=y,
                    node_mask=torch.ones(num_nodes, dtype=torch.bool),
                )
            )
    except (TypeError, ValueError, IndexError, AttributeError, RuntimeError) as exc:  # torch's shape errors are RuntimeErrors
        raise DataError(f"dataset '{name}': not a valid PyTorch Geometric Temporal signal ({exc})") from None
    return TemporalGraph(name, tuple(snapshots), task, num_classes)


def read_json(path: str | Path, name: str) -> dict:
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"dataset '{name}': file not found: {path}")
    try:
        with path.open() as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"dataset '{name}': {path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"dataset '{name}': {path} must hold a JSON object")
    return data


def time_periods(data: dict, path: Path, name: str) -> int:
    """The JSON's ``time_periods``: a positive integer (the loaders iterate ``range`` of it)."""
    if "time_periods" not in data:
        raise DataError(f"dataset '{name}': {path} misses key 'time_periods'")
    value = data["time_periods"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"dataset '{name}': 'time_periods' in {path} must be a positive integer, got {value!r}")
    return value


def _call_loader(name: str, path: Path, build: Any) -> Any:
    """Run a PyG Temporal loader's parsing, turning its errors on malformed files into one line."""
    try:
        with np.errstate(all="ignore"):
            return build()
    except KeyError as exc:
        raise DataError(f"dataset '{name}': {path} misses key {exc}") from None
    except (TypeError, ValueError, IndexError) as exc:
        raise DataError(f"dataset '{name}': {path} is malformed ({exc})") from None


@dataclass(frozen=True)
class TwitterTennisSource:
    """``TwitterTennisDatasetLoader`` (Roland-Garros / US Open 2017 mention graphs) from a local JSON.

    Features are the library's encoded degree and transitivity; the target is the log of the
    number of mentions in the next snapshot.
    """

    path: str
    num_nodes: int | None = None
    feature_mode: str = "encoded"
    target_offset: int = 1
    name: str = "twitter_tennis"

    def load(self) -> TemporalGraph:
        from torch_geometric_temporal.dataset import TwitterTennisDatasetLoader

        path = Path(self.path).expanduser()
        data = read_json(path, self.name)
        for t in range(time_periods(data, path, self.name)):
            if not isinstance(data.get(str(t)), dict):
                problem = "misses snapshot key" if str(t) not in data else "has a non-object snapshot"
                raise DataError(f"dataset '{self.name}': {path} {problem} '{t}'")
        if self.feature_mode not in {"encoded", "diagonal", "raw"}:
            raise DataError(f"dataset '{self.name}': unknown feature_mode '{self.feature_mode}' (choose from encoded, diagonal, raw)")

        class LocalLoader(TwitterTennisDatasetLoader):
            def _read_web_data(self) -> None:
                self._dataset = data

        mode = None if self.feature_mode == "raw" else self.feature_mode
        signal = _call_loader(
            self.name, path, lambda: LocalLoader(N=self.num_nodes, feature_mode=mode, target_offset=self.target_offset).get_dataset()
        )
        return from_signal(signal, self.name)


@dataclass(frozen=True)
class EnglandCovidSource:
    """``EnglandCovidDatasetLoader`` (daily mobility between 129 regions) from a local JSON.

    Features are the last ``lags`` days of standardised case counts; the target is the next day's.
    """

    path: str
    lags: int = 8
    name: str = "england_covid"

    def load(self) -> TemporalGraph:
        from torch_geometric_temporal.dataset import EnglandCovidDatasetLoader

        path = Path(self.path).expanduser()
        data = read_json(path, self.name)
        for key in ("edge_mapping", "time_periods", "y"):
            if key not in data:
                raise DataError(f"dataset '{self.name}': {path} misses key '{key}'")
        periods = time_periods(data, path, self.name)
        if not 1 <= self.lags < periods:
            raise DataError(f"dataset '{self.name}': lags must be in [1, {periods - 1}], got {self.lags}")

        class LocalLoader(EnglandCovidDatasetLoader):
            def _read_web_data(self) -> None:
                self._dataset = data

        signal = _call_loader(self.name, path, lambda: LocalLoader().get_dataset(lags=self.lags))
        return from_signal(signal, self.name)
