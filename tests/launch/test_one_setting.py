"""One setting from the command line to the worker and to a paper sweep: each is read from one typed
field of the run the command composed once, and its default is written once, in that field.

Three settings: a top-level one (``epochs``), a strategy's (FlareDTDG's ``sched.chunks``) and a
dataset's (``dataset.snapshot``, the data stage's cut of an event stream into snapshots)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest

from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from tests.conftest import ROOT

# a small generated stream (cut by day: 30 snapshots of 60 nodes), FlareDTDG at its smallest, one rank
BASE = [
    "dataset=bipartite",
    "dataset.num_users=50",
    "dataset.num_items=10",
    "dataset.num_events=1500",
    "sched=flare",
    "sched.partition=hash",
    "model.hidden_channels=4",
    "model.num_layers=1",
    "world_size=1",
    "device=cpu",
    "progress=false",
]


@dataclasses.dataclass(frozen=True)
class Setting:
    key: str
    value: str  # as the command line gives it
    expected: Any  # as the typed field holds it
    read: Callable[[RunConfig], Any]  # the one typed field it is read from
    default: Any
    declared: str  # the one line of the package that writes its default
    restated: str  # a yaml line that would restate that default


SETTINGS = [
    Setting("epochs", "3", 3, lambda run: run.epochs, 5, r"^\s+epochs: int = 5(\s|$)", r"^epochs: 5\b"),
    Setting(
        "sched.chunks",
        "8",
        8,
        lambda run: run.strategy_settings(FlareConfig).chunks,
        16,
        r"^\s+chunks: int = 16(\s|$)",
        r"^chunks: 16\b",
    ),
    Setting(
        "dataset.snapshot",
        "daily",
        "daily",
        lambda run: run.dataset.snapshot,
        None,
        r"^\s+snapshot: str \| int \| float \| None = None(\s|$)",
        r"^snapshot:",
    ),
]
OVERRIDES = [f"{setting.key}={setting.value}" for setting in SETTINGS]


def test_each_setting_reaches_the_worker_as_its_typed_field(tmp_path, monkeypatch):
    """``dygsched run`` in this process, as a rank of a one-rank torchrun job: the worker receives the
    run the command composed, each setting in its field."""
    import signal

    import dygsched.engine.worker as worker
    from dygsched.cli import main
    from dygsched.launch.local import free_port

    received: list[RunConfig] = []
    monkeypatch.setattr(worker, "train_in_group", lambda run, *args, **kwargs: received.append(run))
    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    previous = signal.getsignal(signal.SIGTERM)  # a rank answers SIGTERM by stopping; pytest keeps its own
    try:
        assert main(["run", *BASE, *OVERRIDES, f"results_dir={tmp_path}"]) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    (run,) = received
    assert isinstance(run, RunConfig) and type(run.sched) is FlareConfig
    for setting in SETTINGS:
        assert setting.read(run) == setting.expected, setting.key


def test_each_setting_reaches_a_paper_sweeps_runs_as_its_typed_field(tmp_path, monkeypatch):
    """A paper target's sweep composes each point into its typed run and hands it to ``run``."""
    import dygsched.launch.app as app
    from dygsched.paper.sweep import run_sweep
    from dygsched.paper.target import Sweep

    received: list[RunConfig] = []
    monkeypatch.setattr(app, "run", lambda run, overrides=None: received.append(run) or {})
    points = (*BASE, *OVERRIDES[:-1], "dataset.snapshot=daily,weekly")  # a sweep of two points
    run_sweep(Sweep("one-setting", (points,), (points,)), tmp_path, smoke=False)
    assert [run.dataset.snapshot for run in received] == ["daily", "weekly"]
    for run in received:
        for setting in SETTINGS[:-1]:
            assert setting.read(run) == setting.expected, setting.key


def test_each_default_is_written_once_in_its_field():
    """Composed without the setting, the field holds its default; the package writes that default in
    one line, its field's, and no config file restates it."""
    from dygsched.launch.compose import compose_run

    defaults = compose_run(BASE)
    sources = list((ROOT / "dygsched").rglob("*.py"))
    configs = list((ROOT / "conf").rglob("*.yaml"))
    for setting in SETTINGS:
        assert setting.read(defaults) == setting.default, setting.key
        declared = [f"{p}: {line}" for p in sources for line in p.read_text().splitlines() if re.match(setting.declared, line)]
        assert len(declared) == 1, (setting.key, declared)
        restated = [
            f"{p}: {line}"
            for p in configs
            if "experiment" not in p.parts and "smoke" not in p.parts  # experiments set values, not defaults
            for line in p.read_text().splitlines()
            if re.match(setting.restated, line)
        ]
        assert not restated, (setting.key, restated)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda run: dataclasses.replace(run, epochs="3"), "epochs must be an integer, got '3'"),
        (lambda run: FlareConfig(chunks=8.5), "sched.chunks must be an integer, got 8.5"),
        (lambda run: dataclasses.replace(run.dataset, snapshot=[7]), "dataset.snapshot must be a unit"),
        (lambda run: dataclasses.replace(run, split=dataclasses.replace(run.split, train="most")), "split.train must be"),
    ],
)
def test_a_field_given_the_wrong_type_in_code_fails_as_it_is_built(build, message):
    """A paper target or a test that builds a typed value with a wrong type fails at once, naming the field."""
    from dygsched.launch.compose import compose_run

    run = compose_run(BASE)
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        build(run)
