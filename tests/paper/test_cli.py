"""`dygsched paper`: the list, one target built in a child process with its provenance, and bad input."""

import json

import pytest

from dygsched.cli import main
from tests.cli_process import run_dygsched


def test_the_list_names_every_target_with_its_minutes(tmp_path, capsys):
    from dygsched.paper.registry import TARGETS

    assert main(["paper", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = {line.split(" ", 1)[0]: line for line in out.splitlines()}  # a name that prefixes another's: its own line
    for paper_target in TARGETS:
        assert paper_target.name in lines and paper_target.expected in lines[paper_target.name]
    assert "missing" in out and f"{len(TARGETS)} targets" in out


def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path, capsys):
    assert main(["paper", "table-nope", "--results", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("dygsched: error: unknown paper target 'table-nope': ") and "(known: " in err and "\n" not in err
    assert main(["paper", "all", "--reuse", "--results", str(tmp_path / "absent")]) == 1
    assert "no results folder" in capsys.readouterr().err
    assert main(["paper", "all", "--reuse", "--rerun", "--results", str(tmp_path)]) == 1
    assert "choose one" in capsys.readouterr().err
    assert not (tmp_path / "absent").exists()


@pytest.mark.slow  # CI's smoke run builds every target this way after the suite
def test_a_target_builds_in_a_child_process_and_records_the_paper_command(tmp_path):
    results = tmp_path / "results"
    done = run_dygsched("paper", "table-epoch-time", "--smoke", "--results", str(results), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "target 1 of 1: table-epoch-time: ok" in done.stderr
    root = results / "smoke"
    record = json.loads((root / "provenance" / "table-epoch-time.json").read_text())
    assert record["command"] == f"dygsched paper table-epoch-time --results {results} --smoke"
    assert record["recipe"][0].startswith("dygsched run -m +experiment=epoch_time") and record["exit_code"] == 0
    assert "written:" in (root / "provenance" / "table-epoch-time.log").read_text()
    assert (root / "table_epoch_time" / "table_epoch_time.csv").is_file() and (root / "report" / "index.html").is_file()
