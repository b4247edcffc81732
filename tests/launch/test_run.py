"""`dygsched run` for real: worker processes, gloo, a run folder with the documented schema."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli_process import run_dygsched
from tests.conftest import ROOT, TINY_SYNTHETIC

SUMMARY_KEYS = {
    "run_id",
    "dataset",
    "model",
    "sched",
    "world_size",
    "epochs",
    "status",
    "epoch_time_s",
    "imbalance_ratio",
    "final_train_loss",
    "eval",
    "comm_bytes_per_epoch",
    "gpu_peak_allocated_bytes",
    "peak_rss_bytes",
    "saved_for_backward_bytes",
}


def dygsched(tmp_path, *args, timeout=300):
    return run_dygsched(*args, f"results_dir={tmp_path / 'results'}", timeout=timeout, cwd=tmp_path)


def only_run_folder(tmp_path):
    folders = [p for p in (tmp_path / "results").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(folders) == 1
    return folders[0]


def check_run_folder(folder, epochs, world_size):
    summary = json.loads((folder / "summary.json").read_text())
    assert SUMMARY_KEYS <= summary.keys() and summary["status"] == "ok"
    assert summary["world_size"] == world_size and summary["epochs_completed"] == epochs
    assert summary["comm_bytes_per_epoch"]["allreduce"] > 0 and summary["peak_rss_bytes"] > 0
    assert summary["imbalance_ratio"] >= 1.0
    metrics = pd.read_parquet(folder / "metrics.parquet")
    assert list(metrics.columns) == ["run_id", "epoch", "iteration", "rank", "phase", "metric", "value"]
    assert set(metrics["rank"]) == set(range(world_size)) and set(metrics["phase"]) == {"train", "val", "test"}
    assert (folder / "config.yaml").exists() and json.loads((folder / "plan.json").read_text())["solver"] == "psg"
    runs = pd.read_parquet(folder.parent / "runs.parquet")
    assert runs["run_id"].tolist() == [summary["run_id"]]
    losses = metrics[(metrics.metric == "loss") & (metrics.phase == "train") & (metrics.iteration == -1)].sort_values("epoch")
    return summary, losses["value"].tolist()


def test_synthetic_two_ranks(tmp_path):
    result = dygsched(tmp_path, "run", *TINY_SYNTHETIC, "progress=true", "world_size=2", "epochs=4")
    assert result.returncode == 0, result.stderr
    assert "epoch 4/4" in result.stdout and "results in" in result.stdout
    summary, losses = check_run_folder(only_run_folder(tmp_path), epochs=4, world_size=2)
    assert losses[-1] < losses[0]
    assert summary["eval"]["metric"] == "mse"
    assert summary["comm_bytes_per_epoch"]["hidden_state"] == 0  # PSG never ships hidden states


@pytest.mark.slow  # a shipped dataset at two ranks; test_synthetic_two_ranks keeps the path
def test_twitter_tennis_two_ranks(tmp_path, shipped_data):
    result = dygsched(
        tmp_path,
        "run",
        "dataset=twitter_tennis",
        f"dataset.path={shipped_data / 'twitter_tennis_rg17.json'}",
        "model.hidden_channels=16",
        "model.num_layers=1",
        "world_size=2",
        "epochs=3",
        "progress=false",
    )
    assert result.returncode == 0, result.stderr
    _, losses = check_run_folder(only_run_folder(tmp_path), epochs=3, world_size=2)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["dataset=nope"], "dataset/nope"),
        (["dataset=edgelist", "dataset.path=/nonexistent.csv"], "file not found"),
        (["dataset=twitter_tennis", "dataset.path=/nonexistent.json"], "file not found"),
        ([*TINY_SYNTHETIC, "window=50"], "larger than the number of snapshots"),
        ([*TINY_SYNTHETIC, "world_size=0"], "world_size must be at least 1"),
        ([*TINY_SYNTHETIC, "sched.planner.capacity=0"], "capacity"),
        ([*TINY_SYNTHETIC, "world_size=64"], "larger than the"),
        ([*TINY_SYNTHETIC, "model.num_layers=4"], "num_layers"),
        ([*TINY_SYNTHETIC, "epochs=abc"], "epochs must be an integer, got 'abc'"),
        ([*TINY_SYNTHETIC, "sched=esdg", "world_size=5"], "ESDG needs at least as many snapshots per group"),
        ([*TINY_SYNTHETIC, "sched=blad", "sched.timeline.profile_epochs=1"], "does not profile"),
        ([*TINY_SYNTHETIC, "dataset.growth=linear"], "unknown growth trend"),
        (["dataset=stream", "model=tgn", "sched=single", "world_size=1"], "dataset 'stream' needs dataset.path=..."),
        (["dataset=snapshots"], "dataset 'snapshots' needs dataset.path=..."),
        (
            ["dataset=wikipedia_like", "dataset.preset=lastfm", "model=tgn", "sched=single", "world_size=1"],
            "unknown preset 'lastfm'",
        ),
        ([*TINY_SYNTHETIC, "run_id=../escape_probe"], "run_id must be a plain name"),
        ([*TINY_SYNTHETIC, "optim.lr=fast"], "optim.lr must be a number, got 'fast'"),
        ([*TINY_SYNTHETIC, "optim.lr=null"], "optim.lr must be a number, got None"),
        ([*TINY_SYNTHETIC, "optim.weight_decay=abc"], "optim.weight_decay must be a number"),
        ([*TINY_SYNTHETIC, "world_size=1.5"], "world_size must be a positive integer or 'auto', got 1.5"),
        ([*TINY_SYNTHETIC, "run_id=a/b"], "run_id must be a plain name"),
        ([*TINY_SYNTHETIC, "run_id=.."], "run_id must be a plain name"),
        ([*TINY_SYNTHETIC, "model.hidden_channels=abc"], "model.hidden_channels must be an integer, got 'abc'"),
        ([*TINY_SYNTHETIC, "dataset.num_nodes=lots"], "dataset.num_nodes must be an integer"),
        ([*TINY_SYNTHETIC, "launcher.grace_period_s=soon"], "launcher.grace_period_s must be a number"),
        (["dataset=events", "model=tgn", "sched=sven", "sched.prefetch=yes"], "sched.prefetch must be true or false, got 'yes'"),
        (["dataset=events", "model=tgn", "sched=sven", "sched.staleness=2"], "sched.staleness must be 0 or 1, got 2"),
        (["dataset=events", "model=tgn", "sched=sven", "+sched.stalenes=1"], "unknown key 'sched.stalenes': SvenConfig has"),
        ([*TINY_SYNTHETIC, "task=links"], "task must be one of node, link"),
        ([*TINY_SYNTHETIC, "task=link", "link.negatives=0"], "link.negatives must be an integer of at least 1, got 0"),
        ([*TINY_SYNTHETIC, "task=link", "eval.one_vs_many=-1"], "eval.one_vs_many must be a whole number"),
        ([*TINY_SYNTHETIC, "eval.one_vs_many=5"], "eval.one_vs_many set link prediction's evaluation, and this run trains node"),
        (
            [*TINY_SYNTHETIC, "task=link", "eval.one_vs_many=5", "eval_negatives=3"],
            "eval.one_vs_many=5 ranks every positive against stored negatives",
        ),
        (["dataset=edgelist", "dataset.num_snapshots=100", "task=link"], "task=link: 2 snapshot group(s) of edgelist end where"),
        (["dataset=events", "model=tgn", "sched=single", "task=node"], "task=node: dataset 'events' is an event stream"),
        ([*TINY_SYNTHETIC, "task=link", "split.new_nodes=0.1"], "split.new_nodes split or score event streams"),
    ],
)
def test_bad_input_is_one_line_and_starts_no_run(tmp_path, overrides, message):
    result = dygsched(tmp_path, "run", *overrides)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
    assert not [p for p in (tmp_path / "results").glob("*") if p.is_dir()]


class RunsACommand:
    """Unpickling it would call ``os.system``."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


@pytest.mark.parametrize(
    "content, message",
    [
        ({"model": [1, 2]}, "holds a dict with keys 'model', not a list of torch_geometric Data snapshots"),
        ("payload", "refused: it asks for posix.system"),
    ],
)
def test_a_snapshot_file_holding_something_else_is_one_line(tmp_path, content, message):
    import torch

    marker = tmp_path / "ran"
    torch.save([RunsACommand(f"touch {marker}")] if content == "payload" else content, tmp_path / "file.pt")
    result = dygsched(tmp_path, "run", "dataset=snapshots", f"dataset.path={tmp_path / 'file.pt'}", "progress=false")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
    assert not marker.exists() and not [p for p in (tmp_path / "results").glob("*") if p.is_dir()]


@pytest.mark.slow  # two CLI runs; the contract battery shows two runs of one seed train the same first epoch
def test_same_seed_same_losses(tmp_path):
    losses = []
    for attempt in range(2):
        out = tmp_path / str(attempt)
        out.mkdir()
        result = dygsched(out, "run", *TINY_SYNTHETIC, "epochs=2", "seed=7")
        assert result.returncode == 0, result.stderr
        metrics = pd.read_parquet(only_run_folder(out) / "metrics.parquet")
        losses.append(metrics[metrics.metric == "loss"].sort_values(["epoch", "iteration", "rank", "phase"])["value"].tolist())
    assert losses[0] == losses[1]


def test_a_plan_for_another_world_size_fails_before_workers_start(tmp_path):
    from dygsched.planner import ScheduleProblem, solve

    plan_path = tmp_path / "plan.json"
    solve(ScheduleProblem((1.0,) * 6, 3, 2), "greedy").save(plan_path)
    result = dygsched(tmp_path, "run", *TINY_SYNTHETIC, "world_size=2", f"sched.planner.plan_file={plan_path}")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "is for 3 ranks, this run has world_size=2" in result.stderr
    assert not (tmp_path / "results").exists() or not [p for p in (tmp_path / "results").iterdir() if p.is_dir()]


@pytest.mark.slow  # three runs of one id
def test_an_existing_run_id_is_refused_unless_resumed_or_moved_aside(tmp_path):
    first = dygsched(tmp_path, "run", *TINY_SYNTHETIC, "epochs=1", "world_size=1", "run_id=mine", "progress=false")
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "results" / "mine" / "summary.json").read_text()
    again = dygsched(tmp_path, "run", *TINY_SYNTHETIC, "model=wdgcn", "epochs=1", "world_size=1", "run_id=mine", "progress=false")
    lines = again.stderr.strip().splitlines()
    assert again.returncode == 1 and len(lines) == 1 and "already names a run" in lines[0] and "overwrite=true" in lines[0]
    assert (tmp_path / "results" / "mine" / "summary.json").read_text() == before  # untouched
    replaced = dygsched(
        tmp_path, "run", *TINY_SYNTHETIC, "epochs=1", "world_size=1", "run_id=mine", "overwrite=true", "progress=false"
    )
    assert replaced.returncode == 0, replaced.stderr
    aside = list((tmp_path / "results").glob("mine.replaced-*"))
    assert len(aside) == 1 and (aside[0] / "summary.json").read_text() == before
    assert not (tmp_path / "escape_probe").exists()


@pytest.mark.parametrize("where", ["file", "/proc/x"])
def test_a_results_dir_that_cannot_be_a_folder_is_refused_before_any_worker(tmp_path, where):
    results = tmp_path / "a_file" if where == "file" else Path(where)
    if where == "file":
        results.write_text("not a folder")
    done = subprocess.run(
        [sys.executable, "-m", "dygsched", "run", *TINY_SYNTHETIC, f"results_dir={results}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and f"results_dir {results} cannot be used" in lines[0]


@pytest.mark.parametrize(
    "override, message",
    [
        ("modle=tgcn", "unknown key 'modle': did you mean model"),
        ("+modle=tgcn", "unknown key 'modle': did you mean model"),
        ("epohcs=3", "unknown key 'epohcs': did you mean epochs?"),
        ("model.hiden_channels=4", "unknown key 'model.hiden_channels': did you mean model.hidden_channels?"),
    ],
)
def test_a_mistyped_key_names_what_is_close_instead_of_adding_it(override, message):
    from dygsched.errors import ConfigError
    from dygsched.launch.compose import compose_config

    with pytest.raises(ConfigError) as error:
        compose_config([override])
    assert str(error.value).startswith(message) and "To append" not in str(error.value)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["dataset=collegemsg", "dataset.foo=1"],
            "unknown key 'dataset.foo': dataset has _target_, format, label_col, name, path, snapshot",
        ),
        (
            ["dataset=stream", "dataset.foo=1"],
            "unknown key 'dataset.foo': dataset has _target_, format, label_col, name, path, snapshot",
        ),
        (
            ["dataset=edgelist", "dataset.task=x"],
            "unknown key 'dataset.task': did you mean dataset.lags? dataset has _target_, bipartite, directed",
        ),
        (["model=tgn", "model.hiden=3"], "unknown key 'model.hiden': model has _target_, default_lr, dropout, heads, memory_dim"),
        (["model=tgn", "model.memory_dm=3"], "unknown key 'model.memory_dm': did you mean model.memory_dim"),
        (["sched=flare", "sched.chunk=3"], "unknown key 'sched.chunk': did you mean sched.chunks"),
        (
            ["sched=real", "sched.planner.capactiy=2"],
            "unknown key 'sched.planner.capactiy': did you mean sched.planner.capacity?",
        ),
        (
            ["sched=real", "sched.executor.reuse_pth=diff"],
            "unknown key 'sched.executor.reuse_pth': did you mean sched.executor.reuse_path",
        ),
        (["optim=sgd", "optim.momentun=0.9"], "unknown key 'optim.momentun': did you mean optim.momentum?"),
        (["launcher=torchrun", "launcher.nnode=2"], "unknown key 'launcher.nnode': did you mean launcher.nnodes"),
        (["task=node", "node_task.dropuot=0.2"], "unknown key 'node_task.dropuot': did you mean node_task.dropout?"),
    ],
)
def test_an_unknown_key_names_the_keys_of_the_chosen_config(overrides, message):
    """A key the chosen group's file lacks is answered with that file's keys (not the default file's)."""
    from dygsched.errors import ConfigError
    from dygsched.launch.compose import compose_config

    with pytest.raises(ConfigError) as error:
        compose_config(overrides)
    assert str(error.value).startswith(message), str(error.value)


@settings(deadline=None)  # the first example imports the launcher (torch)
@given(st.text(min_size=1, max_size=40))
def test_no_run_id_names_a_folder_outside_results_dir(name):
    from dygsched.engine.run_config import check_plain_name
    from dygsched.errors import ConfigError

    results = Path("/results")
    try:
        check_plain_name(name, "run_id")
    except ConfigError:
        return
    assert (results / name).resolve().parent == results.resolve() and (results / name).name == name


@pytest.mark.parametrize(
    "override", ["optim.lr=fast", "world_size=1.5", "run_id=../x", "epochs=0", "model=nosuch", "+modle=tgcn"]
)
def test_a_rejected_input_is_answered_before_torch_is_imported(override):
    """What the settings alone refuse is refused at once: the answer does not wait for torch."""
    probe = (
        "import sys\nfrom dygsched.cli import main\n"
        f"code = main(['run', {override!r}])\n"
        "print('torch imported' if 'torch' in sys.modules else 'no torch', code)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.stdout.strip() == "no torch 1", (done.stdout, done.stderr)
    assert done.stderr.startswith("dygsched: error:") and len(done.stderr.strip().splitlines()) == 1


def _count_constructions(monkeypatch) -> list:
    """Every ``SnapshotGroupStrategy`` (the default sched) built in this process from now on."""
    from dygsched.engine.snapshot_groups import SnapshotGroupStrategy

    built = []
    construct = SnapshotGroupStrategy.__init__

    def counted(self, *args, **kwargs):
        built.append(self)
        construct(self, *args, **kwargs)

    monkeypatch.setattr(SnapshotGroupStrategy, "__init__", counted)
    return built


def test_the_launching_process_builds_the_strategy_once(tmp_path, monkeypatch):
    """Checking the settings, checking it against the data: one strategy (the ranks build their own)."""
    from dygsched.launch.app import run
    from dygsched.launch.compose import compose_run
    from dygsched.launch.local import LocalLauncher

    monkeypatch.setattr(LocalLauncher, "launch", lambda *args: None)  # no ranks: only this process counts
    built = _count_constructions(monkeypatch)
    run(compose_run([*TINY_SYNTHETIC, "world_size=1", f"results_dir={tmp_path / 'results'}"]))
    assert len(built) == 1


def test_a_rank_builds_the_strategy_once_and_trains_it(tmp_path, monkeypatch):
    """A rank of a torchrun job (this process, one rank): checked, prepared and trained with one strategy."""
    import signal

    from dygsched.launch.app import run
    from dygsched.launch.compose import compose_run
    from dygsched.launch.local import free_port

    for name, value in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }.items():
        monkeypatch.setenv(name, value)
    built = _count_constructions(monkeypatch)
    previous = signal.getsignal(signal.SIGTERM)  # a rank answers SIGTERM by stopping; pytest keeps its own
    try:
        summary = run(
            compose_run([*TINY_SYNTHETIC, "world_size=1", "epochs=1", "device=cpu", f"results_dir={tmp_path / 'results'}"])
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert summary["status"] == "ok" and summary["epochs_completed"] == 1
    assert len(built) == 1
