"""Every script under scripts/ still imports and parses its arguments against today's package.

mypy checks the scripts' calls (pyproject.toml); these tests catch what it cannot: an import that
fails at run time, an argument parser that no longer builds. Each script is loaded by path (they
are not a package) and its ``main(["--help"])`` runs, which prints its usage and exits 0 without
doing any work. The two profiling scripts' refusals are checked too: they narrow what the package
builds to the kinds they profile, and anything else is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
TINY_STREAM = ["dataset.num_users=30", "dataset.num_items=10", "dataset.num_events=1000"]


def load(path: Path) -> ModuleType:
    name = f"dygsched_script_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses defined in a script look their module up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def test_there_are_scripts():
    assert len(list(SCRIPTS.glob("*.py"))) >= 5


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda path: path.name)
def test_script_imports_and_prints_its_usage(path, capsys):
    module = load(path)
    assert callable(getattr(module, "main", None)), f"{path.name} defines no main()"
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out


def refusal(script: str, argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        load(SCRIPTS / script).main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_profile_stream_epoch_refuses_a_snapshot_strategy(capsys):
    err = refusal("profile_stream_epoch.py", ["--dataset", "bipartite", "sched=psg"], capsys)
    assert err.startswith(f"{Path(sys.argv[0]).name}: error: sched=psg is not a node-memory strategy")


def test_profile_stream_epoch_refuses_a_model_without_memory(capsys):
    err = refusal("profile_stream_epoch.py", ["--dataset", "bipartite", "--model", "edgebank", *TINY_STREAM], capsys)
    assert "model=edgebank is EdgeBank: this script profiles a memory-based model" in err


def test_profile_epoch_refuses_settings_its_model_lacks(capsys):
    err = refusal("profile_epoch.py", ["--model", "tgn"], capsys)
    assert "error: unknown key 'model.hidden_channels'" in err
