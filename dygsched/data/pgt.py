"""PyTorch Geometric Temporal's datasets and signal objects.

The sources read the JSON files of PyTorch Geometric Temporal's ``TwitterTennisDatasetLoader``,
``EnglandCovidDatasetLoader`` and its static-graph series (``LaggedSeriesSource``: chickenpox,
PedalMe, Montevideo bus) from a local path and apply the loaders' feature and target
transformations, written here in numpy, so that a run does not need the library installed (it
needs torch-scatter and torch-sparse, which compile for many minutes). The tests check, snapshot
by snapshot, that they give exactly what the library's own loaders give on the same files (its
recorded outputs; the library itself under ``make test-pgt``, ``pip install dygsched[pgt]``).
``from_signal`` converts any of the library's signal objects.
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


def read_json(path: str | Path, name: str) -> dict[str, Any]:
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


def time_periods(data: dict[str, Any], path: Path, name: str) -> int:
    """The JSON's ``time_periods``: a positive integer (the loaders iterate ``range`` of it)."""
    if "time_periods" not in data:
        raise DataError(f"dataset '{name}': {path} misses key 'time_periods'")
    value = data["time_periods"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"dataset '{name}': 'time_periods' in {path} must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class TwitterTennisSource:
    """``TwitterTennisDatasetLoader`` (Roland-Garros / US Open 2017 mention graphs) from a local JSON.

    Features are the library's encoded degree and transitivity (``encoded``: one-hot of
    ``min(ceil(log(degree + 1)), 4)`` and of ``floor(10 transitivity)``), the raw pair (``raw``) or
    an identity matrix (``diagonal``); the target is ``log(1 + mentions)`` in the snapshot
    ``target_offset`` later (the last one at the end). ``num_nodes`` keeps the first nodes and
    the edges among them.
    """

    path: str
    num_nodes: int | None = None
    feature_mode: str = "encoded"
    target_offset: int = 1
    name: str = "twitter_tennis"

    def load(self) -> TemporalGraph:
        path = Path(self.path).expanduser()
        data = read_json(path, self.name)
        periods = time_periods(data, path, self.name)
        for t in range(periods):
            if not isinstance(data.get(str(t)), dict):
                problem = "misses snapshot key" if str(t) not in data else "has a non-object snapshot"
                raise DataError(f"dataset '{self.name}': {path} {problem} '{t}'")
        if self.feature_mode not in {"encoded", "diagonal", "raw"}:
            raise DataError(
                f"dataset '{self.name}': unknown feature_mode '{self.feature_mode}' (choose from encoded, diagonal, raw)"
            )
        return _parse(self.name, path, lambda: self._snapshots(data, periods))

    def _snapshots(self, data: dict[str, Any], periods: int) -> tuple[Snapshot, ...]:
        keep = self.num_nodes
        snapshots = []
        for t in range(periods):
            snapshot = data[str(t)]
            edges = np.array(snapshot["edges"]).reshape(-1, 2)
            weights = np.array(snapshot["weights"], dtype=np.float64).reshape(-1)
            if keep is not None:
                inside = (edges[:, 0] < keep) & (edges[:, 1] < keep)
                edges, weights = edges[inside], weights[inside]
            x = np.array(snapshot["X"], dtype=np.float64)
            x = x[:keep] if keep is not None else x
            if self.feature_mode == "diagonal":
                x = np.identity(x.shape[0])
            elif self.feature_mode == "encoded":
                x = encode_degree_and_transitivity(x)
            later = data[str(min(t + self.target_offset, periods - 1))]
            y = np.log(1.0 + np.array(later["y"], dtype=np.float64))
            y = y[:keep] if keep is not None else y
            snapshots.append(_snapshot(edges.T, weights, x, y))
        return tuple(snapshots)


DEGREE_CUTOFF = 4  # the library's log-degree cap: 5 degree classes, and 11 transitivity classes


def encode_degree_and_transitivity(raw: np.ndarray) -> np.ndarray:
    """The library's ``encode_features``: one-hot of the capped log degree and of the transitivity decile."""
    degree = np.minimum(np.ceil(np.log(raw[:, 0] + 1.0)), DEGREE_CUTOFF)
    transitivity = np.floor(raw[:, 1] * 10)
    encoded = np.zeros((raw.shape[0], DEGREE_CUTOFF + 1 + 11))
    for offset, values, classes in ((0, degree, DEGREE_CUTOFF + 1), (DEGREE_CUTOFF + 1, transitivity, 11)):
        if not np.isin(values, np.arange(classes)).all():
            bad = values[~np.isin(values, np.arange(classes))][0]
            raise ValueError(f"a node feature encodes to {bad:g}, outside the {classes} classes")
        encoded[np.arange(raw.shape[0]), offset + values.astype(np.int64)] = 1.0
    return encoded


@dataclass(frozen=True)
class EnglandCovidSource:
    """``EnglandCovidDatasetLoader`` (daily mobility between 129 regions) from a local JSON.

    The case counts are standardised per region over all days; features are the last ``lags``
    days, the target the next day's; snapshot ``i`` has day ``i``'s mobility edges.
    """

    path: str
    lags: int = 8
    name: str = "england_covid"

    def load(self) -> TemporalGraph:
        path = Path(self.path).expanduser()
        data = read_json(path, self.name)
        for key in ("edge_mapping", "time_periods", "y"):
            if key not in data:
                raise DataError(f"dataset '{self.name}': {path} misses key '{key}'")
        periods = time_periods(data, path, self.name)
        if not 1 <= self.lags < periods:
            raise DataError(f"dataset '{self.name}': lags must be in [1, {periods - 1}], got {self.lags}")
        return _parse(self.name, path, lambda: self._snapshots(data, periods))

    def _snapshots(self, data: dict[str, Any], periods: int) -> tuple[Snapshot, ...]:
        cases = np.array(data["y"], dtype=np.float64)
        standard = (cases - cases.mean(axis=0)) / (cases.std(axis=0) + 1e-10)
        mapping = data["edge_mapping"]
        return tuple(
            _snapshot(
                np.array(mapping["edge_index"][str(i)]).reshape(-1, 2).T,
                np.array(mapping["edge_weight"][str(i)], dtype=np.float64).reshape(-1),
                standard[i : i + self.lags, :].T,
                standard[i + self.lags, :].T,
            )
            for i in range(periods - self.lags)
        )


def _snapshot(edge_index: np.ndarray, weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> Snapshot:
    """One snapshot as the library's signals make it (float32 features, weights and targets)."""
    num_nodes = int(x.shape[0])
    edges = torch.as_tensor(edge_index, dtype=torch.long).reshape(2, -1)
    if weights.shape[0] != edges.shape[1]:
        raise ValueError(f"{edges.shape[1]} edges but {weights.shape[0]} weights")
    return Snapshot(
        edge_index=edges,
        edge_weight=torch.as_tensor(weights, dtype=torch.float32),
        x=torch.as_tensor(x, dtype=torch.float32),
        y=torch.as_tensor(y, dtype=torch.float32).reshape(num_nodes, -1)[:, 0],
        node_mask=torch.ones(num_nodes, dtype=torch.bool),
    )


def _parse(name: str, path: Path, build: Any) -> TemporalGraph:
    """Build the snapshots, turning the errors of a malformed file into one line."""
    try:
        with np.errstate(all="ignore"):
            return TemporalGraph(name, build(), Task.REGRESSION, 0)
    except KeyError as exc:
        raise DataError(f"dataset '{name}': {path} misses key {exc}") from None
    except (TypeError, ValueError, IndexError, RuntimeError) as exc:
        raise DataError(f"dataset '{name}': {path} is malformed ({exc})") from None


SERIES_LAYOUTS = ("chickenpox", "pedalme", "montevideo_bus")


@dataclass(frozen=True)
class LaggedSeriesSource:
    """PyTorch Geometric Temporal's static-graph series (``ChickenpoxDatasetLoader``,
    ``PedalMeDatasetLoader``, ``MontevideoBusDatasetLoader``) from a local JSON.

    One fixed graph and one value per node and time step: snapshot ``i`` has the values of steps
    ``i .. i + lags - 1`` as features and step ``i + lags`` as the target, as the loaders build
    their ``StaticGraphTemporalSignal``. ``layout`` names the file's shape: ``chickenpox``
    (``edges``, weekly counts ``FX``, unit weights), ``pedalme`` (``edges``, ``weights``, ``X``),
    ``montevideo_bus`` (``nodes`` with their series ``y``, weighted ``links`` between bus stops;
    the series standardised per node, as that loader does).
    """

    path: str
    layout: str
    lags: int = 4
    name: str = "series"

    def load(self) -> TemporalGraph:
        if self.layout not in SERIES_LAYOUTS:
            raise DataError(f"dataset '{self.name}': unknown layout '{self.layout}' (choose from {', '.join(SERIES_LAYOUTS)})")
        path = Path(self.path).expanduser()
        data = read_json(path, self.name)
        return _parse(self.name, path, lambda: self._snapshots(data, path))

    def _snapshots(self, data: dict[str, Any], path: Path) -> tuple[Snapshot, ...]:
        if self.layout == "montevideo_bus":
            stops = [node["bus_stop"] for node in data["nodes"]]
            index = {stop: i for i, stop in enumerate(stops)}
            edges = np.array([(index[link["source"]], index[link["target"]]) for link in data["links"]]).reshape(-1, 2).T
            weights = np.array([link["weight"] for link in data["links"]], dtype=np.float64)
            series = np.stack([np.array(node["y"], dtype=np.float64) for node in data["nodes"]]).T
            features = np.stack([np.array(node["X"]["y"], dtype=np.float64) for node in data["nodes"]]).T
            series = (series - series.mean(axis=0)) / series.std(axis=0)
            features = (features - features.mean(axis=0)) / features.std(axis=0)
        else:
            edges = np.array(data["edges"]).reshape(-1, 2).T
            series = np.array(data["FX" if self.layout == "chickenpox" else "X"], dtype=np.float64)
            weights = (
                np.ones(edges.shape[1])
                if self.layout == "chickenpox"
                else np.array(data["weights"], dtype=np.float64).reshape(-1)
            )
            features = series
        if series.ndim != 2:
            raise ValueError(f"the series must be a [time, nodes] table, got shape {series.shape}")
        steps = series.shape[0]
        if not 1 <= self.lags < steps:
            raise DataError(f"dataset '{self.name}': lags must be in [1, {steps - 1}], got {self.lags}")
        if edges.size and (edges.min() < 0 or edges.max() >= series.shape[1]):
            raise ValueError(f"edges refer to nodes outside 0..{series.shape[1] - 1}")
        return tuple(
            _snapshot(edges, weights, features[i : i + self.lags, :].T, series[i + self.lags, :].T)
            for i in range(steps - self.lags)
        )
