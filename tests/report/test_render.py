"""The report: every section and target, our tables beside the paper's, honest gaps, runs page, atomic."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from dygsched.cli import main
from dygsched.metrics.runs_table import append_run
from dygsched.paper.provenance import PROVENANCE_DIR
from dygsched.paper.registry import SECTIONS, TARGETS
from dygsched.report.render import render
from tests.report.report_html import parse_report


@pytest.fixture
def results(tmp_path):
    """A results root with two targets built (one by dygsched paper, one by hand), one failed, the rest missing."""
    root = tmp_path / "results"
    epoch = root / "table_epoch_time"
    epoch.mkdir(parents=True)
    pd.DataFrame(
        {
            "dataset": ["synthetic"] * 4,
            "model": ["tgcn"] * 4,
            "sched": ["psg", "greedy", "dygnex_l", "blad"],
            "world_size": [2, 2, 2, 2],
            "epoch_time_s": [2.0, 1.5, 1.8, 2.4],
            "imbalance_ratio": [1.2, np.nan, 1.1, 1.0],
            "final_train_loss": [0.3, 0.31, 0.3, 0.3],
            "eval.metric": ["mse"] * 4,
            "eval.value": [0.2, 0.21, 0.2, 0.2],
        }
    ).to_csv(epoch / "table_epoch_time.csv", index=False)
    append_run(epoch, {"run_id": "run-a", "status": "ok", "sched": "psg", "epoch_time_s": 2.0})
    (root / PROVENANCE_DIR).mkdir()
    (root / PROVENANCE_DIR / "table-epoch-time.json").write_text(
        json.dumps(
            {
                "target": "table-epoch-time",
                "command": "dygsched paper table-epoch-time --results results",
                "recipe": ["dygsched run -m ..."],
                "commit": "abc123",
                "date": "2026-11-25T10:00:00+00:00",
                "machine": "test CPU, 2 cores",
                "wall_s": 61.0,
                "exit_code": 0,
                "smoke": False,
            }
        )
    )
    pd.DataFrame({"n": [100], "G": [4], "solver": ["greedy"], "gap": [0.01]}).to_csv(root / "bench_planner.csv", index=False)
    (root / PROVENANCE_DIR / "simulate.json").write_text(
        json.dumps(
            {
                "target": "simulate",
                "command": "dygsched paper simulate",
                "recipe": [],
                "commit": "abc123",
                "date": "2026-11-25T10:00:00+00:00",
                "machine": "test CPU",
                "wall_s": 1.0,
                "exit_code": 2,
                "smoke": False,
            }
        )
    )
    return root


def test_every_section_and_target_with_its_status(results):
    report = parse_report(render(results) / "index.html")
    assert report.sections == [section.key for section in SECTIONS]
    assert set(report.targets) == {t.name for t in TARGETS}
    for paper_target in TARGETS:
        assert report.targets[paper_target.name][0] == paper_target.paper
    assert report.targets["table-epoch-time"][1] == "built"
    assert report.targets["bench-planner"][1] == "built"
    assert report.targets["simulate"][1] == "failed"
    assert report.targets["table-sven-comm"][1] == "missing"
    assert not report.smoke


def test_a_target_shows_ours_the_papers_numbers_and_how_it_was_made(results):
    html = (render(results) / "index.html").read_text()
    block = html.split('id="table-epoch-time"')[1].split('class="target"')[0]
    assert "greedy" in block and "1.5" in block  # our table
    assert "dygnex Table 4 (Arxiv)" in block and "9.7 s" in block  # the paper's, side by side
    assert "dygsched paper table-epoch-time --results results" in block and "abc123" in block and "test CPU, 2 cores" in block
    assert "median over epochs" in block  # repeats
    assert re.search(r"<td[^>]*>—</td>", block) and not re.search(
        r"<td[^>]*>\s*nan\s*</td>", block, flags=re.IGNORECASE
    )  # a dash, never 0 or nan
    by_hand = html.split('id="bench-planner"')[1].split('class="target"')[0]
    assert "built by other means" in by_hand
    missing = html.split('id="table-sven-comm"')[1].split('class="target"')[0]
    assert "dygsched paper table-sven-comm" in missing and "Not built yet" in missing


def test_the_first_screen_is_every_targets_verdict(results):
    html = (render(results) / "index.html").read_text()
    first = html.split('id="verdicts"')[1].split("</section>")[0]
    assert html.index('id="verdicts"') < html.index('class="paper-section"')
    for paper_target in TARGETS:
        assert f'href="#{paper_target.name}"' in first
    row = first.split('href="#table-epoch-time"')[1].split("</tr>")[0]
    assert 'class="verdict' in row and "order ρ" in row  # built: ours against table 4
    assert "not built" in first.split('href="#table-sven-comm"')[1].split("</tr>")[0]
    assert "a project benchmark" in first.split('href="#bench-tgn-pyg"')[1].split("</tr>")[0]
    block = html.split('id="table-epoch-time"')[1].split('class="target"')[0]
    assert "Laid out as the paper's Table 4 (Arxiv)" in block and '<th class="num">TGCN</th>' in block


def test_markdown_and_runs_page(results):
    folder = render(results, smoke=True)
    readme = (folder / "README.md").read_text()
    for section in SECTIONS:
        assert f"## {section.title}" in readme
    assert "SMOKE run" in readme and "| greedy" in readme
    greedy = next(line for line in readme.splitlines() if line.startswith("| synthetic") and "greedy" in line)
    assert "—" in greedy and "nan" not in greedy  # a missing figure is a dash in the Markdown too
    append_run(results / "smoke" / "table_epoch_time", {"run_id": "tiny-run", "status": "ok", "sched": "psg"})
    folder = render(results, smoke=True)
    runs = (folder / "runs.html").read_text()
    assert "tiny-run" not in runs  # a smoke run's rows stay out of the real report
    assert 'href="../table_epoch_time/run-a/summary.json"' in runs and "sortable" in runs
    assert parse_report(folder / "index.html").smoke


def test_figures_are_copied_beside_the_report(results):
    from matplotlib.figure import Figure

    figure = Figure()
    figure.add_subplot().plot([0, 1], [1, 0])
    (results / "fig_convergence").mkdir()
    figure.savefig(results / "fig_convergence" / "convergence.png")
    pd.DataFrame({"sched": ["psg"], "epoch": [1], "loss": [0.5]}).to_csv(
        results / "fig_convergence" / "convergence.csv", index=False
    )
    folder = render(results)
    report = parse_report(folder / "index.html")
    assert "figures/fig-convergence-convergence.png" in report.images
    assert (folder / "figures" / "fig-convergence-convergence.png").is_file()
    assert report.targets["fig-convergence"][1] == "built"


def test_rendering_again_replaces_the_report_whole(results):
    first = render(results)
    (first / "stale.txt").write_text("from an earlier report")
    second = render(results)
    assert not (second / "stale.txt").exists()
    assert not any(path.name.startswith(".report") for path in results.iterdir())


def test_cli_renders_and_refuses_a_missing_folder(results, tmp_path, capsys):
    assert main(["report", str(results)]) == 0
    assert "index.html" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dygsched: error: no results folder")


def test_an_older_runs_one_memory_figure_shows_under_a_name_that_says_it_is_either(results):
    append_run(results / "table_epoch_time", {"run_id": "old-run", "status": "ok", "peak_mem_bytes": 1234})
    runs = (render(results) / "runs.html").read_text()
    assert ">peak_mem_bytes_gpu_or_rss</th>" in runs and ">peak_mem_bytes</th>" not in runs
    assert ">peak_rss_bytes</th>" not in runs  # no run here measured it under that name


def test_the_expected_time_in_words():
    assert [paper_target.expected for paper_target in TARGETS if paper_target.name in ("table-epoch-time", "simulate")] == [
        "about 13 min",
        "under a minute",
    ]


def test_text_is_left_aligned_and_numbers_right_aligned(results):
    folder = render(results)
    html = (folder / "index.html").read_text()
    block = html.split('id="table-epoch-time"')[1].split('class="target"')[0]
    assert "<td>synthetic</td>" in block and '<td class="num">2</td>' in block  # text left, numbers right
    assert "<th>sched</th>" in block and '<th class="num">epoch_time_s</th>' in block
    assert '<td class="num">—</td>' in block  # a missing number keeps its column's alignment
    first = html.split('id="verdicts"')[1].split("</section>")[0]
    assert 'class="num"' not in first  # the verdict table is all text: target, reproduces, status, word, checks
    markdown = (folder / "README.md").read_text()
    assert "| :--- | :--- | :--- | :--- | :--- |" in markdown  # the verdict table
    header = next(line for line in markdown.splitlines() if line.startswith("| dataset") and "epoch_time_s" in line)
    rule = markdown.splitlines()[markdown.splitlines().index(header) + 1]
    cells = [cell.strip() for cell in rule.strip("|").split("|")]
    names = [cell.strip() for cell in header.strip("|").split("|")]
    assert cells[names.index("dataset")].startswith(":") and cells[names.index("epoch_time_s")].endswith(":")
    assert not cells[names.index("epoch_time_s")].startswith(":")


def test_the_reproduction_page_lists_every_target_and_when_it_was_built(results):
    page = (render(results) / "reproduction.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [t.name for t in TARGETS]
    epoch = next(row for row in rows if row.startswith("| `table-epoch-time`"))
    assert "2026-11-25, abc123" in epoch and epoch.rstrip(" |").endswith("1.0")  # when and at what commit; 61 s
    assert "| missing | —" in next(row for row in rows if row.startswith("| `table-sven-comm`"))
    assert f"Built: 2 of {len(TARGETS)} targets, from 2026-11-25 to 2026-11-25" in page
    departures = page.split("## Where ours departs")[1]
    words = {row.split("`")[1]: row.split("|")[3].strip() for row in rows}
    for name, word in words.items():
        assert (f"**`{name}`**" in departures) == (word in ("**partly**", "**not**")), name


def test_the_reproduction_page_says_when_reused_runs_were_made(results):
    path = results / PROVENANCE_DIR / "table-epoch-time.json"
    record = json.loads(path.read_text())
    made = {"folder": "table_epoch_time", "commit": "def456", "started": "2026-11-20T08:00:00+00:00", "wall_s": 540.0}
    path.write_text(json.dumps({**record, "sweep": {**made, "reused": True}}))
    row = next(line for line in (render(results) / "reproduction.md").read_text().splitlines() if "`table-epoch-time`" in line)
    assert "2026-11-25, abc123 (its runs: 2026-11-20, def456)" in row and row.rstrip(" |").endswith("10.0")  # 61 s + 540 s
    path.write_text(json.dumps({**record, "sweep": {**made, "commit": None, "started": None, "wall_s": None, "reused": True}}))
    row = next(line for line in (render(results) / "reproduction.md").read_text().splitlines() if "`table-epoch-time`" in line)
    assert "(its runs: made earlier, when not recorded)" in row and "1.0 and its runs' (not recorded)" in row


def test_the_reproduction_page_counts_the_earlier_sittings_of_a_sweep_the_build_resumed(results):
    path = results / PROVENANCE_DIR / "table-epoch-time.json"
    record = json.loads(path.read_text())
    made = {"folder": "table_epoch_time", "commit": "abc123", "started": "2026-11-20T08:00:00+00:00", "wall_s": 600.0}
    path.write_text(json.dumps({**record, "sweep": {**made, "sittings": 3, "earlier_wall_s": 540.0, "reused": False}}))
    page = (render(results) / "reproduction.md").read_text()
    row = next(line for line in page.splitlines() if "`table-epoch-time`" in line)
    assert "2026-11-25, abc123 (its runs: from 2026-11-20, over 3 sittings)" in row and row.rstrip(" |").endswith("10.0")
    assert "from 2026-11-20 to 2026-11-25" in page  # the first sitting's day opens the build's dates
    unrecorded = {**made, "started": None, "wall_s": None, "sittings": 2, "earlier_wall_s": None, "reused": False}
    path.write_text(json.dumps({**record, "sweep": unrecorded}))
    row = next(line for line in (render(results) / "reproduction.md").read_text().splitlines() if "`table-epoch-time`" in line)
    assert "(its runs: from an unrecorded date, over 2 sittings)" in row and "1.0 and its earlier sittings' (not recorded)" in row
    before_sittings = {**made, "wall_s": None, "reused": False}  # a record from before sittings were counted
    path.write_text(json.dumps({**record, "sweep": before_sittings}))
    row = next(line for line in (render(results) / "reproduction.md").read_text().splitlines() if "`table-epoch-time`" in line)
    assert "1.0 and its earlier sittings' (not recorded)" in row


def test_the_docs_reproduction_page_is_the_renderers_and_lists_every_target():
    """docs/reproduction.md comes from `make reproduction` (the renderer), never from a hand: its fixed
    opening is the template's, and it has one row per registered target, in the report's order."""
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "reproduction.md").read_text()
    assert page.startswith("# Reproduction: the verdict of every paper target on this project's machine\n\nThis page is written")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [t.name for t in TARGETS]
