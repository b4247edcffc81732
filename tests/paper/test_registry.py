"""The registry of paper targets: each one complete, every published row belonging to one, every
override composing, and nothing needing the repository's scripts or torch to list them."""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dygsched.launch.compose import compose_run
from dygsched.paper.published import published_numbers
from dygsched.paper.registry import SECTIONS, TARGETS, targets_named
from tests.conftest import ROOT

# Targets that reproduce a paper's figure for which the paper prints no number (the report says so).
NO_PRINTED_NUMBERS = {
    "table-distdy-traffic": "figure 3 is a bar chart; its text says only that DistDy moves less than Metis and Metis-layer",
    "fig-distdy-params": "figure 11's text: the speedup grows with the budget then stays; a larger eta gives a similar speedup",
}


def test_names_are_unique_and_every_section_has_targets():
    assert len({t.name for t in TARGETS}) == len(TARGETS)
    assert {t.paper for t in TARGETS} == {section.key for section in SECTIONS}
    assert targets_named(["all"]) == TARGETS == targets_named([])


@pytest.mark.parametrize("paper_target", TARGETS, ids=lambda t: t.name)
def test_every_target_is_complete(paper_target):
    assert callable(paper_target.build) and callable(paper_target.reading)
    assert paper_target.outputs and all(path.endswith((".csv", ".png")) for path in paper_target.outputs)
    assert paper_target.tables, "the report reads at least one table"
    assert paper_target.smoke_is_smaller, "a smoke run smaller than the full one"
    regime = paper_target.regime
    assert regime.ours, "a target states where it measures at full size (its regime)"
    assert bool(regime.paper) == paper_target.reproduces_paper, "the paper's setting, where there is a paper"
    for smoke in (False, True):  # the builder takes exactly its settings
        inspect.signature(paper_target.build).bind(Path("results"), **paper_target.settings.at(smoke))
    assert paper_target.minutes > 0 and paper_target.repeats
    rows = published_numbers()[published_numbers().target.isin(paper_target.published_targets)]
    if paper_target.reproduces_paper and paper_target.name not in NO_PRINTED_NUMBERS:
        assert len(rows), f"{paper_target.name} reproduces {paper_target.reproduces} but has no published rows"
    if rows.empty:
        assert paper_target.shape is None and paper_target.headlines is None
    if paper_target.name in NO_PRINTED_NUMBERS:
        assert paper_target.claims, "a figure without numbers is judged by what its text claims"
    for claim in paper_target.claims:
        assert claim.quote and claim.source


def test_every_published_row_belongs_to_a_target_and_is_a_number():
    published = published_numbers()
    assert set(published.target) <= {t.name for t in TARGETS}
    assert published.value.notna().all()
    assert set(published.paper) == {"dygnex", "real", "flaredtdg", "distdy", "sven", "dyglib", "utg", "tgb"}
    row = published[(published.ref == "Table 4") & (published.paper == "dygnex") & (published.dataset == "Arxiv")]
    assert row[(row.row == "ESDG") & (row.column == "TGCN")].value.item() == pytest.approx(9.70)  # against the paper's text


@pytest.mark.slow  # every point of every target; each target's own test composes its first and last
def test_every_sweep_point_composes():
    """A typo in a target's overrides fails here, not an hour into `make paper`: every value of every
    key of every run composes (the product of a sweep's values is composed when the sweep runs)."""
    from dygsched.launch.sweeps import sweep_choices as _sweep_choices

    sweeps = {t.sweep for t in TARGETS if t.sweep is not None}
    points = set()
    for run in {run for sweep in sweeps for run in (*sweep.runs, *sweep.smoke)}:
        choices = [values for _, values in _sweep_choices(list(run))]
        longest = max(len(values) for values in choices)
        points |= {tuple(values[i % len(values)] for values in choices) for i in range(longest)}  # every value of every key once
    for point in sorted(points):
        compose_run(list(point))


def test_every_target_is_a_one_line_make_call_and_needs_no_script():
    makefile = (ROOT / "Makefile").read_text()
    for paper_target in TARGETS:
        assert re.match(r"(table|fig|bench)-|simulate$", paper_target.name), paper_target.name
    assert "\tpython scripts/" not in makefile and "scripts/" not in re.sub(r"^lint:.*\n.*\n", "", makefile, flags=re.M)
    package = ROOT / "dygsched" / "paper"
    for module in package.glob("*.py"):
        assert "scripts/" not in module.read_text(), module.name


def test_listing_the_targets_imports_no_torch():
    code = (
        "import sys, dygsched.paper.registry, dygsched.report.render, dygsched.paper.cli, dygsched.report.cli; "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
