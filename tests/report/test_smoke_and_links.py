"""Issue 57's paper-target frictions: a smoke-size target says "smoke: no verdict" and its table's
caption says what data it holds; every link of a results folder's reproduction.md resolves there
(and of its docs copy, in docs/); each target sits under the heading of what it measures; a mistyped
name suggests the closest ones."""

import re

import pytest

from dygsched.paper.registry import SECTIONS, TARGETS
from dygsched.report.render import SMOKE_VERDICT, render
from tests.cli_process import run_dygsched
from tests.conftest import ROOT
from tests.report.test_render import results  # noqa: F401 (the fixture: a results root with table-epoch-time built)

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_a_smoke_size_target_gives_no_verdict_and_its_table_says_its_data(results):  # noqa: F811
    full = render(results)
    assert "Verdict: " in (full / "README.md").read_text() and SMOKE_VERDICT not in (full / "README.md").read_text()
    report = render(results, smoke=True)
    text = (report / "README.md").read_text()
    section = text.split('<a id="table-epoch-time"></a>')[1].split("<a id=")[0]
    assert f"**Verdict: {SMOKE_VERDICT}**" in section and "Verdict: not" not in section and "Verdict: partly" not in section
    # the layout is the paper's Table 4; the numbers are the smoke sweep's tiny synthetic graph
    assert "these numbers: smoke-size synthetic data, not measurements" in section
    reproduction = (report / "reproduction.md").read_text()
    row = next(line for line in reproduction.splitlines() if "`table-epoch-time`" in line)
    assert SMOKE_VERDICT in row
    assert "None." in reproduction.split("Where ours departs")[1]  # no smoke target is read as a departure


def test_every_link_of_the_reproduction_pages_resolves_where_it_is_read(results):  # noqa: F811
    report = render(results)
    for page, where in ((report / "reproduction.md", report), (report / "reproduction.docs.md", ROOT / "docs")):
        links = LINK.findall(page.read_text())
        assert links, page.name
        broken = [link for link in links if not link.startswith("http") and not (where / link).exists()]
        assert not broken, (page.name, broken)


def test_each_target_sits_under_the_heading_of_what_it_measures():
    keys = {section.key for section in SECTIONS}
    assert all(target.paper in keys for target in TARGETS)
    by_name = {target.name: target.paper for target in TARGETS}
    titles = {section.key: section.title for section in SECTIONS}
    for accuracy in ("table-stream-accuracy", "table-unified", "table-node-tasks"):
        assert "speed" not in titles[by_name[accuracy]].lower(), accuracy
    assert titles[by_name["bench-vs-pygt"]] == "Engine speed"


@pytest.mark.parametrize(
    "args, suggestion",
    [
        (["paper", "table-sven-com"], "did you mean table-sven-comm"),
        (["run", "sched=gredy"], "did you mean sched=greedy?"),
        (["run", "model=tgnn"], "did you mean model=tgn"),
        (["run", "dataset=colegemsg"], "did you mean dataset=collegemsg?"),
    ],
)
def test_a_mistyped_name_suggests_the_closest(tmp_path, args, suggestion):
    done = run_dygsched(*args, f"{'--results=' if args[0] == 'paper' else 'results_dir='}{tmp_path}", cwd=tmp_path)
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("dygsched: error: ") and suggestion in line, line
