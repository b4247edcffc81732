"""The paper targets' list agrees with the Makefile and with the published numbers."""

import re

import pytest

from dygsched.report.render import published_numbers
from dygsched.report.targets import SECTIONS, TARGETS, target
from tests.conftest import ROOT

MAKEFILE = (ROOT / "Makefile").read_text()


def test_every_target_is_a_make_target_in_a_known_section():
    make_targets = set(re.findall(r"^([a-z][a-z0-9-]*):", MAKEFILE, flags=re.MULTILINE))
    keys = {section.key for section in SECTIONS}
    for paper_target in TARGETS:
        assert paper_target.name in make_targets, paper_target.name
        assert paper_target.section in keys, paper_target.name
        assert paper_target.outputs and all(path.endswith((".csv", ".png")) for path in paper_target.outputs)
    assert len({t.name for t in TARGETS}) == len(TARGETS)
    assert {t.section for t in TARGETS} == keys  # no empty section


def test_every_smoke_variable_is_one_the_makefile_reads():
    for paper_target in TARGETS:
        assert paper_target.smoke, f"{paper_target.name} has no smoke sizes"
        for variable in paper_target.smoke:
            assert f"$({variable})" in MAKEFILE, (paper_target.name, variable)


def test_every_paper_target_joins_make_paper():
    """The paper targets of the Makefile (table-*, fig-*, bench-*, simulate) are all in the report."""
    make_targets = set(re.findall(r"^((?:table|fig|bench)-[a-z0-9-]*|simulate):", MAKEFILE, flags=re.MULTILINE))
    assert make_targets == {t.name for t in TARGETS}


def test_published_numbers_belong_to_targets():
    published = published_numbers()
    assert list(published.columns) == ["paper", "ref", "target", "dataset", "row", "column", "value", "unit", "source"]
    assert set(published.target) <= {t.name for t in TARGETS}
    assert published.value.notna().all()
    assert set(published.paper) == {"dygnex", "real", "flaredtdg", "distdy", "sven"}
    # spot checks against the papers' text
    row = published[(published.ref == "Table 4") & (published.paper == "dygnex") & (published.dataset == "Arxiv")]
    assert row[(row.row == "ESDG") & (row.column == "TGCN")].value.item() == pytest.approx(9.70)


def test_unknown_target_names_the_known_ones():
    with pytest.raises(KeyError, match="bench-planner"):
        target("table-nope")


def test_the_report_imports_no_torch():
    """Rendering reads tables only: it runs where torch is absent or slow to import."""
    import subprocess
    import sys

    code = "import sys, dygsched.report.render, dygsched.launch.report_cli; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
