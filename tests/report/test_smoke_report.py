"""CI's check of `make paper SMOKE=1`: the report it built has every section and every target built.

Marked `smoke_report` (outside `make test`): CI runs it after the smoke run, on its report.
"""

import os
from pathlib import Path

import pytest

from dygsched.report.targets import SECTIONS, TARGETS
from tests.conftest import ROOT
from tests.report.report_html import parse_report

pytestmark = pytest.mark.smoke_report


def test_the_smoke_report_has_every_section_and_target_built():
    index = Path(os.environ.get("DYGSCHED_SMOKE_REPORT", ROOT / "results" / "smoke" / "report" / "index.html"))
    assert index.is_file(), f"no smoke report at {index}: run make paper SMOKE=1 first"
    report = parse_report(index)
    assert report.smoke
    assert report.sections == [section.key for section in SECTIONS]
    not_built = {name: status for name, (_, status) in report.targets.items() if status != "built"}
    assert set(report.targets) == {t.name for t in TARGETS} and not not_built, not_built
    for paper_target in TARGETS:
        for figure in paper_target.figures:
            assert f"figures/{paper_target.name}-{Path(figure).name}" in report.images
    assert "(no reading" not in index.read_text()  # every reading found the columns it reads
    assert (index.parent / "README.md").is_file() and (index.parent / "runs.html").is_file()
