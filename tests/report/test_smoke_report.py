"""CI's check of `make paper SMOKE=1`: the report it built has every section and every target built
(but a target whose optional dependency this environment lacks, which says so), and a verdict for
every target that reproduces a paper's table.

Marked `smoke_report` (outside `make test`): CI runs it after the smoke run, on its report.
"""

import os
from pathlib import Path

import pytest

from dygsched.paper.published import rows_of
from dygsched.paper.registry import SECTIONS, TARGETS
from tests.conftest import ROOT
from tests.report.report_html import parse_report

pytestmark = pytest.mark.smoke_report


def test_the_smoke_report_has_every_section_and_target_built():
    index = Path(os.environ.get("DYGSCHED_SMOKE_REPORT", ROOT / "results" / "smoke" / "report" / "index.html"))
    assert index.is_file(), f"no smoke report at {index}: run make paper SMOKE=1 first"
    report = parse_report(index)
    assert report.smoke
    assert report.sections == [section.key for section in SECTIONS]
    unavailable = {t.name for t in TARGETS if t.absent_needs()}
    expected = {name: "unavailable" if name in unavailable else "built" for name in report.targets}
    not_built = {name: status for name, (_, status) in report.targets.items() if status != expected[name]}
    assert set(report.targets) == {t.name for t in TARGETS} and not not_built, not_built
    for paper_target in (t for t in TARGETS if t.name not in unavailable):
        for figure in paper_target.figures:
            assert f"figures/{paper_target.name}-{Path(figure).name}" in report.images
    html = index.read_text()
    assert "(no reading" not in html  # every reading found the columns it reads
    assert "the table lacks what the comparison needs" not in html  # every shape and headline found them too
    first = html.split('id="verdicts"')[1].split("</section>")[0]
    for paper_target in (t for t in TARGETS if t.name not in unavailable):
        row = first.split(f'href="#{paper_target.name}"')[1].split("</tr>")[0]
        # a paper's numbers to compare with, or its text's claims on a figure that prints none
        published = any(not rows_of(name).empty for name in paper_target.published_targets)  # its own or those it reads
        compared = paper_target.reproduces_paper and (published or bool(paper_target.claims))
        assert ('class="verdict' in row) == compared, paper_target.name
    assert (index.parent / "README.md").is_file() and (index.parent / "runs.html").is_file()
