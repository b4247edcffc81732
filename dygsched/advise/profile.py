"""What profiling measured on the device at hand, as data: written by ``--profile-only``, read by ``--profile``.

A profile holds, per *family* of strategies that share how a step computes (the snapshot-group
executors, FlareDTDG's windows, DistDy's mini-batches, the node-memory loop), the steps it timed:
each step's size features (what the family's cost curve reads: a group's nodes and edges, a
DistDy mini-batch's sampled messages, rows and targets, a node-memory batch's events), its
seconds in the units of a run (wall time from one optimizer step's end to the next's, the step
itself included), the peak memory during it (the GPU allocator's, or the process's resident set
on a CPU) and, for one step per family, the device kernels it launched. Besides: the optimizer
step alone, the model's parameter bytes, the process's memory before training, and, where the
predictions are for ranks on this machine, the measured link between them.

The cost curves are fitted here, when the predictions need them, by non-negative least squares
(the planner's own fit, DyGNeX appendix H / REAL eq. 16). Pure Python and numpy: no torch.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dygsched.advise.hardware import LinkProfile
from dygsched.errors import ConfigError
from dygsched.planner.profile import fit_nonnegative

FORMAT = "dygsched-advise-profile/1"
FAMILIES = ("sequential", "reuse", "blad", "flare", "distdy", "node_memory")


@dataclass(frozen=True)
class StepSample:
    """One timed step: its family, how many CPU threads ran it, its size features, its seconds
    (``units`` units of work in it, e.g. a merged pair of groups) and its peak memory."""

    family: str
    threads: int
    features: tuple[float, ...]
    seconds: float
    memory_bytes: int | None = None
    units: int = 1
    label: str = ""  # which unit(s): "12", "12+13"


@dataclass(frozen=True)
class DeviceInfo:
    """The device the profile was measured on."""

    kind: str  # cpu | cuda
    name: str
    cores: int
    memory_bytes: int  # the GPU's memory, or the host's
    host_bandwidth_gbps: float  # measured copy bandwidth of host memory


@dataclass(frozen=True)
class Profile:
    """Everything measured (see the module docstring)."""

    dataset: str
    model: str
    task: str
    fingerprint: str  # the model's and the data's settings: a profile answers for them only
    device: DeviceInfo
    parameter_bytes: int
    samples: tuple[StepSample, ...]
    optimizer_step_s: Mapping[int, float]  # threads -> seconds of optimizer.step() and zero_grad()
    baseline_memory_bytes: int  # resident set (CPU) or allocated bytes (GPU) with the data loaded, before any family
    family_memory_bytes: Mapping[str, int] = field(default_factory=dict)  # the same just before each family's set-up
    local_link: LinkProfile | None = None
    # what the model and data are, as the prices need them (``measure.model_facts``): the bytes ESDG
    # sends per node, the halo rows' width, a node-memory row's widths, DistDy's row and embedding bytes
    facts: Mapping[str, float] = field(default_factory=dict)
    kernel_counts: Mapping[str, float] = field(default_factory=dict)  # family -> kernels of one step of one unit
    seconds: float = 0.0  # how long profiling took
    notes: tuple[str, ...] = field(default_factory=tuple)

    # ---- reading ------------------------------------------------------------------------------
    def of(self, family: str, threads: int | None = None, units: int | None = None) -> list[StepSample]:
        """The samples of ``family`` (at ``threads``: the nearest thread count measured; of ``units`` units)."""
        mine = [s for s in self.samples if s.family == family and (units is None or s.units == units)]
        if threads is None or not mine:
            return mine
        nearest = min({s.threads for s in mine}, key=lambda t: (abs(t - threads), -t))
        return [s for s in mine if s.threads == nearest]

    def families(self) -> set[str]:
        return {s.family for s in self.samples}

    def thread_counts(self, family: str) -> set[int]:
        return {s.threads for s in self.samples if s.family == family}

    def step_s(self, threads: int) -> float:
        """The optimizer step at the nearest thread count measured."""
        if not self.optimizer_step_s:
            return 0.0
        nearest = min(self.optimizer_step_s, key=lambda t: (abs(t - threads), -t))
        return float(self.optimizer_step_s[nearest])

    def fact(self, name: str, default: float | None = None) -> float:
        """A measured fact (``facts``); one ``ConfigError`` line where the profile lacks it and there is no default."""
        if name in self.facts:
            return float(self.facts[name])
        if default is None:
            raise ConfigError(f"the profile has no '{name}': measure it again with dygsched advise --profile-only")
        return default

    def kernels(self, family: str, units: int = 1) -> float | None:
        """The kernels ``units`` units of a ``family`` step launch (None where none was counted)."""
        counted = self.kernel_counts.get(family)
        return counted * units if counted else None

    # ---- writing and reading back -------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["format"] = FORMAT
        data["optimizer_step_s"] = {str(k): v for k, v in self.optimizer_step_s.items()}
        return data

    def save(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(self.to_dict(), indent=1))
        temporary.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        """A profile file, checked: anything else is one ``ConfigError`` line naming the file."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read the profile {path}: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"the profile {path} is not JSON ({exc}): write one with dygsched advise --profile-only") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigError(f'{path} is not a dygsched advise profile (no "format": "{FORMAT}"): write one with --profile-only')
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"the profile {path} is malformed ({type(exc).__name__}: {exc})") from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        device = DeviceInfo(**data["device"])
        samples = tuple(
            StepSample(
                family=str(s["family"]),
                threads=int(s["threads"]),
                features=tuple(float(v) for v in s["features"]),
                seconds=float(s["seconds"]),
                memory_bytes=None if s.get("memory_bytes") is None else int(s["memory_bytes"]),
                units=int(s.get("units", 1)),
                label=str(s.get("label", "")),
            )
            for s in data["samples"]
        )
        for sample in samples:
            if sample.family not in FAMILIES:
                raise ValueError(f"unknown family {sample.family!r}")
            if not (math.isfinite(sample.seconds) and sample.seconds > 0) or sample.threads < 1:
                raise ValueError(f"a step of {sample.family} with {sample.seconds} s on {sample.threads} threads")
        link = data.get("local_link")
        return cls(
            dataset=str(data["dataset"]),
            model=str(data["model"]),
            task=str(data["task"]),
            fingerprint=str(data["fingerprint"]),
            device=device,
            parameter_bytes=int(data["parameter_bytes"]),
            samples=samples,
            optimizer_step_s={int(k): float(v) for k, v in dict(data["optimizer_step_s"]).items()},
            baseline_memory_bytes=int(data["baseline_memory_bytes"]),
            family_memory_bytes={str(k): int(v) for k, v in dict(data.get("family_memory_bytes", {})).items()},
            local_link=LinkProfile(**link) if link else None,
            facts={str(k): float(v) for k, v in dict(data.get("facts", {})).items()},
            kernel_counts={str(k): float(v) for k, v in dict(data.get("kernel_counts", {})).items()},
            seconds=float(data.get("seconds", 0.0)),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )

    def merged(self, other: Profile) -> Profile:
        """This profile with ``other``'s samples added (same model and data)."""
        return replace(
            self,
            samples=self.samples + other.samples,
            optimizer_step_s={**other.optimizer_step_s, **self.optimizer_step_s},
            family_memory_bytes={**other.family_memory_bytes, **self.family_memory_bytes},
            local_link=self.local_link or other.local_link,
            facts={**other.facts, **self.facts},
            kernel_counts={**other.kernel_counts, **self.kernel_counts},
            seconds=self.seconds + other.seconds,
        )


def fingerprint(model: Mapping[str, Any], dataset: Mapping[str, Any], extra: Mapping[str, Any]) -> str:
    """A short digest of the settings a profile's figures depend on (the model's, the data's, the window)."""
    text = json.dumps({"model": dict(model), "dataset": dict(dataset), **dict(extra)}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- cost curves ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Curve:
    """``seconds = coefficients . (features, 1)``, fitted with non-negative coefficients, and its R^2."""

    coefficients: tuple[float, ...]
    r2: float
    samples: int

    def __call__(self, *features: float) -> float:
        *slopes, fixed = self.coefficients
        return float(sum(c * f for c, f in zip(slopes, features)) + fixed)

    def variable(self, *features: float) -> float:
        """The part that grows with the features (the fixed term left out)."""
        return self(*features) - self.coefficients[-1]


def fit_curve(features: Sequence[Sequence[float]], target: Sequence[float]) -> Curve:
    """Non-negative least squares of ``target`` on ``features`` plus a constant (the planner's own
    exact fit over every support for up to three columns; a projected fit above that)."""
    x = np.column_stack([np.asarray(features, dtype=float).reshape(len(target), -1), np.ones(len(target))])
    y = np.asarray(target, dtype=float)
    if x.shape[1] <= 3:
        coef = fit_nonnegative(x, y)
    else:
        from scipy.optimize import nnls

        coef, _ = nnls(x, y)
    residual = float(np.sum((x @ coef - y) ** 2))
    spread = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - residual / spread if spread > 0 else 1.0
    return Curve(tuple(float(c) for c in coef), r2, len(y))


OUTLIER_FACTOR = 2.0  # a step slower than this many times the other steps' curve was slowed by something else


def time_curve(samples: Sequence[StepSample], step_s: float) -> Curve:
    """A family's seconds per unit of work against its features, the optimizer step taken out
    (a step of ``u`` units trains ``u`` units and steps once). A step more than ``OUTLIER_FACTOR``
    times slower than the curve the *other* steps give (another process took the cores meanwhile,
    or the thread pool was still waking) is left out, the slowest such step first, up to a third of
    the steps and as long as two remain. Judged against the others' curve, not one fitted through
    it: with as few steps as coefficients, a curve through every step fits the slow one too."""
    if not samples:
        raise ConfigError("no measured steps to fit a cost curve on")
    features = [s.features for s in samples]
    target = [max(s.seconds - step_s, 1e-9) for s in samples]

    def fitted(indices: Sequence[int]) -> Curve:
        return fit_curve([features[k] for k in indices], [target[k] for k in indices])

    kept = list(range(len(samples)))
    for _ in range(max(1, len(samples) // 3)):
        if len(kept) <= 2:
            break
        slowness = {k: target[k] / max(fitted([j for j in kept if j != k])(*features[k]), 1e-9) for k in kept}
        slowest = max(kept, key=lambda k: slowness[k])
        if slowness[slowest] <= OUTLIER_FACTOR:
            break
        kept.remove(slowest)
    return fitted(kept)


def memory_curve(samples: Sequence[StepSample], base: int = 0) -> Curve | None:
    """Peak memory above ``base`` against the features (None where no step measured its memory)."""
    measured = [s for s in samples if s.memory_bytes is not None]
    if not measured:
        return None
    return fit_curve([s.features for s in measured], [max(0.0, float(s.memory_bytes or 0) - base) for s in measured])
