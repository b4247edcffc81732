"""Every paper target, in the report's order: one module (or package) per paper and one each for the
project's own benchmarks, each with its ``SECTION`` and ``TARGETS``. Adding a table is a
``PaperTarget`` in its paper's module (and its rows in ``published/<paper>.csv``); nothing here changes.

``MODULES`` is named here rather than found by walking the package: it is the report's order of
sections, which no walk gives, and a walk would also meet the machinery's modules (``cli``, ``runner``).
"""

from __future__ import annotations

from importlib import import_module

from dygsched.errors import ConfigError, closest
from dygsched.paper.target import PaperTarget, Section

# the report's order of sections; bench.advise_papers files each of its targets under its paper's section
MODULES = ("dygnex", "real", "flare", "distdy", "sven", "planner", "bench", "bench.advise_papers")


def _load() -> tuple[tuple[Section, ...], tuple[PaperTarget, ...]]:
    sections: list[Section] = []
    targets: list[PaperTarget] = []
    for name in MODULES:
        module = import_module(f"dygsched.paper.{name}")
        # a module may file its targets under several sections, or only under other modules' (SECTIONS = ())
        sections.extend(module.SECTIONS if hasattr(module, "SECTIONS") else (module.SECTION,))
        targets.extend(module.TARGETS)
    # in the report's order: a target filed under another module's section (the advisor's comparison
    # with each paper, a benchmark's module) sits with that section's own, after them
    order = {section.key: index for index, section in enumerate(sections)}
    return tuple(sections), tuple(sorted(targets, key=lambda t: order[t.paper]))


SECTIONS, TARGETS = _load()


def target(name: str) -> PaperTarget:
    for candidate in TARGETS:  # (read at call time: a test may add a target)
        if candidate.name == name:
            return candidate
    names = [t.name for t in TARGETS]
    hint = closest(name, names)
    raise ConfigError(f"unknown paper target '{name}': {hint + ' ' if hint else ''}(known: {', '.join(names)})")


def targets_named(names: list[str]) -> tuple[PaperTarget, ...]:
    """The named targets in the report's order; ``all`` (or no name) is every one."""
    if not names or names == ["all"]:
        return TARGETS
    chosen = {target(name).name for name in names}
    return tuple(t for t in TARGETS if t.name in chosen)
