"""What a paper target is: the table or figure it reproduces, the runs it needs, how it turns them
into tables and figures, the sentence that reads them, and how ours sits beside the paper's numbers.

A target is one ``PaperTarget`` in its paper's module (``dygsched/paper/<paper>.py`` or a module of
``dygsched/paper/<paper>/``, listed in the package's ``TARGETS``), with its
published rows in ``published/<paper>.csv``; the registry, ``dygsched paper``, the report and CI's
smoke run all read it from there. Nothing in this module imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

Overrides = tuple[str, ...]
Tables = dict[str, pd.DataFrame]  # a target's CSV outputs, keyed by their path under the results root


@dataclass(frozen=True)
class Section:
    """One paper (or the project's own benchmarks): a section of the report."""

    key: str
    title: str
    about: str


@dataclass(frozen=True)
class Sweep:
    """The training runs a target reads: each entry of ``runs`` is one multirun (``a,b`` and
    ``range()`` expand as with ``dygsched run -m``) of the same ``run(cfg)`` the CLI runs, all into
    ``<results>/<folder>`` with one ``runs.parquet``; ``smoke`` is the same at tiny sizes. ``rounds``
    repeats the whole list, alternated, for medians over rounds. Targets that read the same folder
    share its runs."""

    folder: str
    runs: tuple[Overrides, ...]
    smoke: tuple[Overrides, ...]
    rounds: int = 1
    smoke_rounds: int = 1

    def __post_init__(self) -> None:
        if not self.runs or not self.smoke:
            raise ValueError(f"sweep {self.folder}: needs its runs and its smoke runs")


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Settings:
    """The builder's keyword arguments at full size and at the smoke run's tiny size (the smoke
    settings are applied over the full ones)."""

    full: Mapping[str, Any] = field(default_factory=dict)
    smoke: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "full", _frozen(self.full))
        object.__setattr__(self, "smoke", _frozen(self.smoke))

    def at(self, smoke: bool) -> dict[str, Any]:
        return {**self.full, **(self.smoke if smoke else {})}


@dataclass(frozen=True)
class Regime:
    """Where a target measures at full size against where its paper measured: the paper's setting,
    ours, and why they differ (empty where they do not). A project benchmark has no paper setting."""

    paper: str
    ours: str
    why: str = ""

    def __post_init__(self) -> None:
        if not self.ours.strip():
            raise ValueError("a regime states our full-size setting")


@dataclass(frozen=True)
class Headline:
    """One ratio the paper states (e.g. DyGNeX-L's epoch time over PSG's) and ours, measured the same
    way (``None`` where we did not measure it: missing, never 0). ``spread`` is the lowest and highest
    of ours over the target's seeds or rounds, where it has several (``None`` with one)."""

    label: str
    paper: float
    ours: float | None
    ratio: bool = True  # False: a plain value (a share, a saving), checked for closeness only
    spread: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.spread is not None and not self.spread[0] <= self.spread[1]:
            raise ValueError(f"headline {self.label!r}: spread {self.spread} is not (lowest, highest)")

    @property
    def quotient(self) -> float | None:
        """Ours over the paper's: 1 where they agree exactly."""
        if self.ours is None or self.ours != self.ours or not self.paper:
            return None
        return self.ours / self.paper


@dataclass(frozen=True)
class PaperShape:
    """Our numbers laid out as the paper lays its table out: ``frame`` has the paper's row labels as
    its index and its column labels as columns, in the paper's units (ratios against the paper's
    baseline where it prints ratios). ``paper_ref`` and ``paper_dataset`` pick the published table it
    is compared with; ``rank_within`` says along which axis the paper's order is read ("rows": each
    row ranks its columns; "columns": each column ranks its rows); ``unit`` labels the laid-out table.
    ``paper_frame``, where given, is the paper's side itself (then ``paper_ref`` only names it)."""

    frame: pd.DataFrame
    paper_ref: str
    paper_dataset: str = ""
    rank_within: str = "columns"
    unit: str = ""
    paper_frame: pd.DataFrame | None = None  # the paper's figures laid out as ``frame``, where they are derived
    # from several of its cells (ratios of its ratios) rather than read from one published table

    def __post_init__(self) -> None:
        if self.rank_within not in ("rows", "columns"):
            raise ValueError(f"rank_within is 'rows' or 'columns', not {self.rank_within!r}")


@dataclass(frozen=True)
class ClaimCheck:
    """Ours against one claim of the paper's text: what we measured, in a sentence, and whether it
    holds (``None`` where we did not measure it)."""

    measured: str
    holds: bool | None


@dataclass(frozen=True)
class Claim:
    """What the paper's text says of a figure that prints no number, in the paper's words, and how
    ours is checked against it where the claim is measurable (``check`` is ``None`` where it is not)."""

    quote: str
    source: str  # where the words are: "section 5.2, on figure 3"
    check: Callable[[Tables], ClaimCheck] | None = None


@dataclass(frozen=True)
class Needed:
    """An optional dependency a target's builder imports (``module``), ``what`` it is, and the one
    command that installs it (and builds the target): without it the target is reported as not
    built, with that command, and the other targets build."""

    module: str
    what: str
    install: str

    @property
    def present(self) -> bool:
        from importlib.util import find_spec

        try:
            return find_spec(self.module) is not None
        except (ImportError, ValueError):  # a parent package that is itself absent
            return False

    def sentence(self) -> str:
        return f"it needs {self.what} ({self.module}), which `{self.install}` installs"


Builder = Callable[..., None]  # builder(results_root, **settings) writes the target's outputs
Reading = Callable[[Tables], str]
Shaper = Callable[[Tables], PaperShape]
Headliner = Callable[[Tables, pd.DataFrame], tuple[Headline, ...]]  # (our tables, the target's published rows)


@dataclass(frozen=True)
class PaperTarget:
    """One table or figure: ``dygsched paper <name>`` builds it, the report shows it.

    ``build(results, **settings)`` writes ``outputs`` (paths under the results root) from the runs of
    ``sweep`` (run first when missing) or from measurements of its own; ``reading`` turns the written
    tables into one sentence; ``shape`` lays ours out as the paper's table and ``headlines`` computes
    the paper's stated ratios from ours, for the verdict; ``claims`` quote what the text says of a figure
    that prints no number. ``regime`` says where the paper measured and where we do at full size. A
    target that reproduces no paper table (a project benchmark) has no published rows, shape or
    headlines."""

    name: str
    paper: str  # its Section's key
    title: str
    reproduces: str  # the paper's table or figure, as the paper numbers it; "(no paper table)" for our benchmarks
    outputs: tuple[str, ...]  # files under the results root: .csv tables, .png figures
    repeats: str  # how many times each number was measured, and how they are combined
    minutes: float  # wall time at full size on a 2-core CPU machine
    build: Builder
    reading: Reading
    regime: Regime
    sweep: Sweep | None = None
    settings: Settings = field(default_factory=Settings)
    shape: Shaper | None = None
    headlines: Headliner | None = None
    claims: tuple[Claim, ...] = ()  # the text's claims on a figure that prints no number
    departures: str = ""  # where ours departs from the paper's shape, the measured reason and where the docs show it
    needs: tuple[Needed, ...] = ()  # optional dependencies its builder imports: absent, it is not built (Needed)
    published_from: tuple[str, ...] = ()  # other targets whose published rows it is judged against (none of its own)

    def __post_init__(self) -> None:
        if not self.outputs:
            raise ValueError(f"target {self.name}: writes no outputs")
        if self.sweep is None and not self.settings.full and not self.settings.smoke:
            raise ValueError(f"target {self.name}: has neither a sweep nor settings for its measurement")
        if self.reproduces_paper and not self.regime.paper.strip():
            raise ValueError(f"target {self.name}: reproduces a paper table but states no paper setting")

    @property
    def smoke_is_smaller(self) -> bool:
        """Whether its smoke run is set smaller than its full size: its own smoke runs or smoke settings."""
        if self.sweep is not None and self.sweep.smoke != self.sweep.runs:
            return True
        return bool(self.settings.smoke) and self.settings.at(True) != self.settings.at(False)

    @property
    def published_targets(self) -> tuple[str, ...]:
        """The targets whose rows of ``published/<paper>.csv`` this one sits beside: its own, and those it
        reads without reproducing them (``published_from``: each published number is written once)."""
        return (self.name, *self.published_from)

    @property
    def reproduces_paper(self) -> bool:
        return not self.reproduces.startswith("(no paper")

    @property
    def expected(self) -> str:
        """Its wall time at full size, in words: "about 10 min", "under a minute"."""
        return "under a minute" if self.minutes < 1 else f"about {round(self.minutes)} min"

    @property
    def duration(self) -> str:
        return f"{self.expected} at full size on 2 CPU cores"

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(path for path in self.outputs if path.endswith(".csv"))

    @property
    def figures(self) -> tuple[str, ...]:
        return tuple(path for path in self.outputs if path.endswith(".png"))

    def absent_needs(self) -> tuple[Needed, ...]:
        """The optional dependencies it needs that this environment lacks."""
        return tuple(needed for needed in self.needs if not needed.present)

    def missing_outputs(self, results: Path) -> list[str]:
        return [path for path in self.outputs if not (Path(results) / path).is_file()]
