"""Every command's usage error is one ``dygsched: error:`` line and exit 2; its --help still prints and exits 0."""

from __future__ import annotations

import pytest

from dygsched import cli

USAGE_ERRORS = [
    (["advise", "--gpus"], "argument --gpus: expected one argument"),
    (["advise", "--plan-time-limit", "soon"], "invalid float value: 'soon'"),
    (["advise", "--bogus"], "unrecognized arguments: --bogus"),
    (["plan", "--bogus"], "unrecognized arguments"),
    (["simulate", "--bogus"], "unrecognized arguments"),
    (["runs", "--compare", "one"], "expected 2 arguments"),
    (["datasets", "nosuch"], "invalid choice: 'nosuch'"),
    (["paper", "--bogus"], "unrecognized arguments"),
    (["report", "--bogus"], "unrecognized arguments"),
    (["predict"], "the following arguments are required"),
    (["embed"], "the following arguments are required"),
]


@pytest.mark.parametrize(("argv", "words"), USAGE_ERRORS, ids=lambda value: " ".join(value) if isinstance(value, list) else "")
def test_a_usage_error_is_one_line_and_exit_2(argv, words, capsys):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"dygsched: error: dygsched {argv[0]}: "), captured.err
    assert words in captured.err and "usage:" not in captured.err and not captured.out


@pytest.mark.parametrize("command", ["advise", "plan", "runs", "datasets", "predict"])
def test_help_still_prints_the_usage_and_exits_0(command, capsys):
    assert cli.main([command, "--help"]) == 0
    assert "usage:" in capsys.readouterr().out
