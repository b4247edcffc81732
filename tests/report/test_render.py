"""The report: every section and target, our tables beside the paper's, honest gaps, runs page, atomic."""

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from dygsched.cli import main
from dygsched.metrics.runs_table import append_run
from dygsched.report.provenance import PROVENANCE_DIR
from dygsched.report.render import render
from dygsched.report.targets import SECTIONS, TARGETS, target
from tests.report.report_html import parse_report


@pytest.fixture
def results(tmp_path):
    """A results root with two targets built (one by make paper, one by hand), one failed, the rest missing."""
    root = tmp_path / "results"
    epoch = root / "table_epoch_time"
    epoch.mkdir(parents=True)
    pd.DataFrame({
        "dataset": ["synthetic"] * 2, "model": ["tgcn"] * 2, "sched": ["psg", "greedy"], "world_size": [2, 2],
        "epoch_time_s": [2.0, 1.5], "imbalance_ratio": [1.2, np.nan], "final_train_loss": [0.3, 0.31],
        "eval.metric": ["mse"] * 2, "eval.value": [0.2, 0.21],
    }).to_csv(epoch / "table_epoch_time.csv", index=False)  # fmt: skip
    append_run(epoch, {"run_id": "run-a", "status": "ok", "sched": "psg", "epoch_time_s": 2.0})
    (root / PROVENANCE_DIR).mkdir()
    (root / PROVENANCE_DIR / "table-epoch-time.json").write_text(json.dumps({
        "target": "table-epoch-time", "command": "make table-epoch-time RESULTS=results", "recipe": ["dygsched run -m ..."],
        "commit": "abc123", "date": "2026-11-25T10:00:00+00:00", "machine": "test CPU, 2 cores", "wall_s": 61.0,
        "exit_code": 0, "smoke": False,
    }))  # fmt: skip
    pd.DataFrame({"n": [100], "G": [4], "solver": ["greedy"], "gap": [0.01]}).to_csv(root / "bench_planner.csv", index=False)
    (root / PROVENANCE_DIR / "simulate.json").write_text(json.dumps({
        "target": "simulate", "command": "make simulate", "recipe": [], "commit": "abc123", "date": "2026-11-25T10:00:00+00:00",
        "machine": "test CPU", "wall_s": 1.0, "exit_code": 2, "smoke": False,
    }))  # fmt: skip
    return root


def test_every_section_and_target_with_its_status(results):
    report = parse_report(render(results) / "index.html")
    assert report.sections == [section.key for section in SECTIONS]
    assert set(report.targets) == {t.name for t in TARGETS}
    for paper_target in TARGETS:
        assert report.targets[paper_target.name][0] == paper_target.section
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
    assert "make table-epoch-time RESULTS=results" in block and "abc123" in block and "test CPU, 2 cores" in block
    assert "median over epochs" in block  # repeats
    assert "<td>—</td>" in block and not re.search(r"<td>\s*nan\s*</td>", block, flags=re.IGNORECASE)  # a dash, never 0 or nan
    by_hand = html.split('id="bench-planner"')[1].split('class="target"')[0]
    assert "built by hand" in by_hand
    missing = html.split('id="table-sven-comm"')[1].split('class="target"')[0]
    assert "make table-sven-comm" in missing and "Not built yet" in missing


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
    pd.DataFrame({"sched": ["psg"], "epoch": [1], "loss": [0.5]}).to_csv(results / "fig_convergence" / "convergence.csv", index=False)
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
    assert main(["report", str(results), "--run-missing", "--only", "table-nope"]) == 1
    assert "unknown paper target" in capsys.readouterr().err


def test_a_target_that_writes_nothing_is_a_failure(results, tmp_path, capsys):
    """run_missing goes through make; a recipe that exits 0 without its outputs fails, with its provenance kept."""
    fake_make = tmp_path / "make"
    fake_make.write_text("#!/bin/sh\necho \"ran $@\"\n")
    fake_make.chmod(0o755)
    from dygsched.report.provenance import read_provenance, run_missing

    ran = run_missing((target("table-sven-comm"),), results, smoke=True, make=str(fake_make))
    assert [record.exit_code for record in ran] == [3]
    record = read_provenance(results, "table-sven-comm")
    assert record is not None and record.smoke and not record.ok and record.command.startswith("make table-sven-comm RESULTS=")
    assert "SVEN_TABLE_ARGS=" in record.command  # the smoke sizes
    log = (results / PROVENANCE_DIR / "table-sven-comm.log").read_text()
    assert "ran --no-print-directory table-sven-comm RESULTS=" in log and "wrote none of sven/sven_comm.csv" in log
    assert "table-sven-comm: FAILED" in capsys.readouterr().err


def test_a_benchmark_that_writes_its_table_then_exits_1_is_built_with_a_note(results, tmp_path, capsys):
    """bench_planner exits 1 when a target is not met, after writing its CSV: built, and the page says so."""
    fake_make = tmp_path / "make"
    fake_make.write_text(
        "#!/bin/sh\nfor a in \"$@\"; do case $a in -n) exit 0;; RESULTS=*) root=${a#RESULTS=};; esac; done\n"
        "mkdir -p \"$root/sven\" && echo 'ranks,strategy,vs_sven' > \"$root/sven/sven_comm.csv\" && exit 1\n"
    )
    fake_make.chmod(0o755)
    from dygsched.report.provenance import run_missing

    (record,) = run_missing((target("table-sven-comm"),), results, smoke=False, make=str(fake_make))
    assert record.exit_code == 1 and "after writing its outputs" in capsys.readouterr().err
    html = (render(results) / "index.html").read_text()
    block = html.split('id="table-sven-comm"')[1].split('class="target"')[0]
    assert 'data-status="built"' in html.split('id="table-sven-comm"')[1][:40] and "exited 1 after writing its outputs" in block


def test_an_older_runs_one_memory_figure_shows_under_a_name_that_says_it_is_either(results):
    append_run(results / "table_epoch_time", {"run_id": "old-run", "status": "ok", "peak_mem_bytes": 1234})
    runs = (render(results) / "runs.html").read_text()
    assert "<th>peak_mem_bytes_gpu_or_rss</th>" in runs and "<th>peak_mem_bytes</th>" not in runs
    assert "<th>peak_rss_bytes</th>" not in runs  # no run here measured it under that name


def fake_make_writing_sven_comm(folder):
    """A make that builds table-sven-comm's output (and prints nothing for -n)."""
    fake_make = folder / "make"
    fake_make.write_text(
        "#!/bin/sh\nfor a in \"$@\"; do case $a in -n) exit 0;; RESULTS=*) root=${a#RESULTS=};; esac; done\n"
        "mkdir -p \"$root/sven\" && echo 'ranks,strategy,vs_sven' > \"$root/sven/sven_comm.csv\"\n"
    )
    fake_make.chmod(0o755)
    return fake_make


def test_run_missing_says_which_target_of_how_many_and_its_expected_time(results, tmp_path, capsys):
    from dygsched.report.provenance import run_missing

    chosen = (target("table-epoch-time"), target("table-sven-comm"))
    run_missing(chosen, results, smoke=False, make=str(fake_make_writing_sven_comm(tmp_path)))
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [
        "target 1 of 2: table-epoch-time: present, not rerun",
        f"target 2 of 2: table-sven-comm ({target('table-sven-comm').expected}) ...",
    ]
    assert re.fullmatch(r"target 2 of 2: table-sven-comm: ok in \d+ s", lines[2])
    assert lines[3:] == ["targets: 1 run (1 built, 0 failed), 1 present"]
    (results / "sven" / "sven_comm.csv").unlink()
    run_missing(chosen[1:], results, smoke=True, make=str(fake_make_writing_sven_comm(tmp_path)))
    assert capsys.readouterr().err.splitlines()[0] == "target 1 of 1: table-sven-comm (smoke size) ..."


def test_make_paper_progress_false_prints_no_target_lines(results, tmp_path, capsys, monkeypatch):
    fake_make_writing_sven_comm(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert main(["report", str(results), "--run-missing", "--only", "table-sven-comm", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert (results / "sven" / "sven_comm.csv").exists()  # it ran
    assert captured.err == "" and "target" not in captured.out


def test_the_expected_time_in_words():
    from dygsched.report.provenance import wall_time

    assert [paper_target.expected for paper_target in TARGETS if paper_target.name in ("table-epoch-time", "table-solve-time")] == [
        "about 10 min", "under a minute",
    ]  # fmt: skip
    assert (wall_time(42.4), wall_time(750.0)) == ("42 s", "12.5 min")
