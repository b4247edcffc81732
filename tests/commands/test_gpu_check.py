"""The GPU check's own logic, on CPU: its table, its refusals, its one line without a GPU, its probe,
and the groups of ranks that train its runs.

The check itself needs a GPU (``make check-gpu``); ``--device cpu`` runs the same sweep here, which
takes minutes, so its pieces are tested: the groups' bookkeeping and the parent's side of a whole
check with groups that train nothing (fast), the real spawned groups on CPU with runs that crash,
raise, hang and pass, and the check stopped by SIGTERM (slow).
"""

from __future__ import annotations

import csv
import json
import tempfile
import time
from pathlib import Path

import pytest
import torch

from dygsched.commands import gpu_check
from dygsched.commands.gpu_check import COLUMNS, VARIANTS, Clock, Row, cli, loss_check, markdown, write_table
from dygsched.commands.gpu_check.groups import GroupEnd, GroupFailed, GroupKey, Job, Joined, RankGroups
from dygsched.commands.gpu_check.probing import _json_line, probe_rank, probe_settings
from dygsched.commands.gpu_check.table import failure
from dygsched.commands.gpu_check.variants import TINY_SNAPSHOTS, Variant


def test_the_table_is_written_as_csv_and_markdown_with_missing_figures_empty(tmp_path):
    rows = [
        Row(
            "ws1",
            "psg",
            1,
            "cuda",
            "ok",
            wall_s=3.5,
            epoch_time_s=0.25,
            gpu_peak_mb="12.5",
            final_loss=0.3064,
            cpu_status="ok",
            cpu_final_loss=0.30641,
            loss_rel_diff=3e-5,
            loss_check="close",
            backend="cpu:gloo,cuda:nccl",
        ),
        Row("ws2", "sven", 2, "cuda", "failed", wall_s=1.0, reason="rank 1: RuntimeError: a | b"),
    ]
    csv_path, md_path = write_table(rows, tmp_path / "check")
    with open(csv_path, newline="") as handle:
        read = list(csv.DictReader(handle))
    assert list(read[0]) == COLUMNS and len(read) == 2
    assert read[0]["final_loss"] == "0.3064" and read[0]["backend"] == "cpu:gloo,cuda:nccl"
    assert read[1]["epoch_time_s"] == "" and read[1]["final_loss"] == "" and read[1]["reason"] == "rank 1: RuntimeError: a | b"
    lines = md_path.read_text().splitlines()
    assert lines == markdown(rows).splitlines() and len(lines) == 4
    assert all(line.count("|") == len(COLUMNS) + 1 for line in lines)  # the reason's | cannot split a cell
    assert "rank 1: RuntimeError: a / b" in lines[3] and not list((tmp_path / "check").glob("*.tmp"))


def test_the_loss_verdict_against_the_cpu_twin():
    assert loss_check(1.0, 1.0) == (0.0, "same")
    assert loss_check(1.0005, 1.0)[1] == "close"
    assert loss_check(1.1, 1.0)[1] == "differs"
    assert loss_check(None, 1.0) == (None, "") and loss_check(float("nan"), 1.0) == (None, "")


def test_a_loss_that_differs_from_its_twin_or_a_failed_twin_fails_the_check_and_a_skip_does_not():
    ok = Row("ws1", "psg", 1, "cuda", "ok", final_loss=0.3, cpu_status="ok", cpu_final_loss=0.3, loss_check="same")
    assert failure(ok) is None and failure(Row("ws1", "ilp", 1, "cuda", "ok", loss_check="no twin (timed plan)")) is None
    assert failure(Row("ws2", "sven", 2, "cuda", "skipped", reason="the check's budget ran out")) is None
    assert failure(Row("ws1", "psg", 1, "cuda", "ok", cpu_status="skipped")) is None  # the budget ran out before the twin
    differs = Row("ws1", "flare", 1, "cuda", "ok", final_loss=0.4, cpu_status="ok", cpu_final_loss=0.3)
    differs.loss_rel_diff, differs.loss_check = loss_check(differs.final_loss, differs.cpu_final_loss)
    assert "beyond the twins' tolerance 0.001" in (failure(differs) or "")
    assert "CPU twin failed" in (failure(Row("ws1", "psg", 1, "cuda", "ok", cpu_status="failed", reason="cpu run failed")) or "")
    assert "timeout" in (failure(Row("ws2", "esdg", 2, "cuda", "timeout", reason="not finished")) or "")


@pytest.mark.parametrize(("rows", "code"), [(["same"], 0), (["same", "differs"], 1), (["same", "twin failed"], 1)])
def test_the_check_exits_1_on_a_loss_that_differs_or_a_failed_twin(tmp_path, monkeypatch, capsys, rows, code):
    made = {
        "same": Row("ws1", "psg", 1, "cuda", "ok", final_loss=0.3, cpu_status="ok", cpu_final_loss=0.3, loss_check="same"),
        "differs": Row("ws1", "blad", 1, "cuda", "ok", final_loss=0.4, cpu_status="ok", cpu_final_loss=0.3, loss_check="differs"),
        "twin failed": Row("ws2", "esdg", 2, "cuda", "ok", cpu_status="failed", reason="cpu run failed: boom"),
    }
    monkeypatch.setattr(cli, "cuda_visible", lambda: True)
    monkeypatch.setattr(cli, "describe_machine", lambda device: {"gpu": "fake"})
    monkeypatch.setattr(cli, "check", lambda args, folder, clock, found, machine: found.extend(made[r] for r in rows))
    assert gpu_check.main([str(tmp_path / "check")]) == code
    out = capsys.readouterr().out
    assert ("not ok: " in out) == bool(code) and ("FAILED" in out) == bool(code)


@pytest.mark.parametrize(
    ("device", "gpus", "expected"),
    [
        ("cuda", 1, [(1, "cpu:gloo,cuda:nccl", False), (1, "nccl", False), (2, "gloo", False)]),
        (
            "cuda",
            2,
            [
                (1, "cpu:gloo,cuda:nccl", False),
                (1, "nccl", False),
                (2, "cpu:gloo,cuda:nccl", True),  # NCCL between two GPUs
                (2, "nccl", True),
                (2, "gloo", False),
            ],
        ),
        ("cpu", 0, [(1, "gloo", False), (2, "gloo", False)]),
    ],
)
def test_the_probe_runs_nccl_between_two_gpus_where_there_are_two(tmp_path, monkeypatch, device, gpus, expected):
    called = []

    def fake_probe(world_size, backend, on, folder, timeout_s, clock, spread=False):
        called.append((world_size, backend, spread))
        return []

    monkeypatch.setattr(cli, "probe", fake_probe)
    monkeypatch.setattr(cli, "gpu_count", lambda on: gpus)
    args = cli.parse_args([str(tmp_path), "--device", device, "--parts", "probe"])
    cli.check(args, tmp_path, Clock(10.0), [])
    assert called == expected
    assert [s.gpus for s in probe_settings(device, gpus)] == [2 if spread else 1 for _, _, spread in expected]


def test_a_probe_rank_of_a_spread_probe_takes_the_gpu_of_its_rank(monkeypatch):
    """``spread``: rank r sets GPU r (mod the GPUs); otherwise every rank GPU 0 (sharing it)."""
    chosen = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: chosen.append(index))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)

    def refuse(*args, **kwargs):
        raise RuntimeError("stop here")

    monkeypatch.setattr(torch.distributed, "init_process_group", refuse)
    for rank, spread in ((1, True), (1, False), (0, True)):
        out = Path(tempfile.mkdtemp()) / "probe.jsonl"
        assert probe_rank(rank, 2, 1, "nccl", "cuda", out, 1.0, spread) == 1  # the join fails, as mocked
    assert chosen == [1, 0, 0]


def test_without_a_cuda_device_it_says_so_in_one_line_and_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "cuda_visible", lambda: False)  # where main looks it up
    assert gpu_check.main([str(tmp_path / "check")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no CUDA device" in out
    assert not (tmp_path / "check").exists()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--only", "psg,nosuch"], "unknown variant nosuch"),
        (["--parts", "ws3"], "unknown part ws3"),
        (["--budget-s", "0"], "--budget-s must be"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        gpu_check.main(argv)
    assert exit_info.value.code == 2 and words in capsys.readouterr().err


def test_every_variant_composes_and_passes_the_checks_without_data(tmp_path):
    from dygsched.launch.checks import check_point
    from dygsched.launch.compose import compose_run

    for variant in VARIANTS:  # at its largest world size (the smaller ones differ in world_size alone)
        overrides = gpu_check.run_overrides(variant, max(variant.world_sizes), "cpu", tmp_path, 30.0)
        check_point(compose_run(overrides))
    sched = {o.split("=", 1)[1] for v in VARIANTS for o in v.overrides if o.startswith("sched=")}
    from tests.conftest import ROOT

    assert sched == {p.stem for p in (ROOT / "conf" / "sched").glob("*.yaml")}  # every strategy of conf/sched


def test_a_run_that_cannot_start_is_a_failed_outcome_with_its_one_line_reason_and_starts_no_ranks(tmp_path):
    groups = RankGroups(tmp_path, 10.0, make=refuse_to_start)
    outcome = gpu_check.one_run(["sched=nosuch", f"results_dir={tmp_path}"], groups, timeout_s=60)
    assert outcome.status == "failed" and "nosuch" in outcome.reason and "\n" not in outcome.reason
    assert groups.started == 0


def test_the_deadline_interrupts_what_outlasts_it():
    start = time.monotonic()
    with pytest.raises(gpu_check.RunTimedOut), gpu_check.deadline(0.2):
        time.sleep(5)
    assert time.monotonic() - start < 2


@pytest.mark.slow  # two child processes that import torch: seconds each, more on a busy machine
def test_the_probe_of_every_collective_helper_passes_at_two_gloo_ranks_on_cpu(tmp_path):
    rows = gpu_check.probe(2, "gloo", "cpu", tmp_path, 120.0, Clock(600.0))
    assert [row for row in rows if row.status != "ok"] == []
    probed = {row.name.split(" ")[0] for row in rows}
    assert {
        "all_reduce",
        "all_reduce_async",
        "all_to_all",
        "all_to_all_async",
        "send/recv",
        "exchange_counts",
        "broadcast_object",
        "all_gather_object",
        "gather_object",
        "barrier",
    } <= probed


def test_the_probe_rows_say_which_rank_failed_a_case_and_how_it_ended():
    started = lambda rank, case: {"rank": rank, "case": case, "status": "started"}  # noqa: E731
    ok = lambda rank, case, **more: {"rank": rank, "case": case, "status": "ok", **more}  # noqa: E731
    entries = [
        started(0, "join"),
        started(1, "join"),
        ok(0, "join", backend="gloo"),
        ok(1, "join", backend="gloo"),
        {
            "rank": 0,
            "case": "scatter (any)",
            "status": "unprobed",
            "reason": "a helper of comm the probe does not know how to call",
        },
        started(0, "a"),
        started(1, "a"),
        ok(0, "a", wall_s=0.5),
        ok(1, "a", wall_s=0.25),
        started(0, "b"),
        started(1, "b"),
        ok(0, "b"),
        {"rank": 1, "case": "b", "status": "failed", "reason": "AssertionError: sum [1.0]"},
        started(0, "c"),
        started(1, "c"),
        ok(0, "c"),
        started(0, "d"),
        ok(0, "e"),  # a case rank 1 never got to
    ]
    ends = {0: "killed after the probe's 60 s", 1: "died of SIGABRT"}  # rank 1 died in c; rank 0 then waited in d for it
    rows = {row.name: row for row in gpu_check.probe_rows(entries, ends, 2, "cuda", "gloo")}
    assert "join" not in rows and rows["a"].status == "ok" and rows["a"].wall_s == 0.5 and rows["a"].backend == "gloo"
    assert rows["scatter (any)"].status == "unprobed"
    assert (rows["b"].status, rows["b"].reason) == ("failed", "rank 1: AssertionError: sum [1.0]")
    assert (rows["c"].status, rows["c"].reason) == ("failed", "rank 1: it never finished there (died of SIGABRT)")
    assert (rows["e"].status, rows["e"].reason) == ("failed", "rank 1: it never got there")
    assert (rows["d"].status, rows["d"].reason) == ("failed", "rank 0: it never finished there (killed after the probe's 60 s)")
    assert rows["probe ranks"].reason == "rank 0 killed after the probe's 60 s; rank 1 died of SIGABRT"


def test_a_probe_that_wrote_nothing_is_one_failed_row_with_its_last_words():
    (row,) = gpu_check.probe_rows([], {}, 1, "cuda", "cpu:gloo,cuda:nccl", "ModuleNotFoundError: No module named 'torch'")
    assert (row.name, row.status) == ("join", "failed")
    assert row.reason == "the probe wrote nothing: ModuleNotFoundError: No module named 'torch'"
    (row,) = gpu_check.probe_rows([{"rank": 0, "case": "join", "status": "started"}], {0: "died of SIGABRT"}, 1, "cuda", "nccl")[
        :1
    ]
    assert (row.name, row.status, row.reason) == ("join", "failed", "rank 0: it never finished there (died of SIGABRT)")
    assert _json_line('{"rank": 0, "case": "a", "sta') is None  # a line cut short by the rank's death


# -- the groups of ranks that train the runs ------------------------------------------------------


class FakeGroup:
    """A group of ranks that trains nothing: a run it is handed ends as ``ends`` says next, and one
    that ends ok gets the summary rank 0 would write (the check reads it back)."""

    def __init__(self, key: GroupKey, number: int, ends, seen: list) -> None:
        self.key, self.number, self.ends, self.seen = key, number, ends, seen
        self.alive, self.left = False, False

    def start(self, timeout_s):
        self.alive = True
        gpu = "Fake GPU" if self.key.device == "cuda" else ""
        return [Joined(r, True, backend="gloo", device=self.key.device, gpu=gpu, gpu_memory_gib=1.5) for r in range(2)]

    def train(self, job, timeout_s):
        from dygsched.launch.local import DATA_FILE

        self.seen.append((self.key, self.number, job.run.run_id, (Path(job.run_dir) / DATA_FILE).is_file()))
        status = next(self.ends)
        if status == "ok":
            summary = {"status": "ok", "final_train_loss": 0.25, "epoch_time_s": 0.01, "dist_backend": "gloo"}
            (Path(job.run_dir) / "summary.json").write_text(json.dumps(summary))
        else:
            self.alive = False
        return GroupEnd(status, "" if status == "ok" else f"rank 1: {status} on purpose")

    def leave(self):
        self.left, self.alive = True, False

    def stop(self):
        self.alive = False


def fake_groups(ends, seen, made):
    def make(key, logs, number):
        made.append(FakeGroup(key, number, iter(ends) if not isinstance(ends, dict) else ends[key], seen))
        return made[-1]

    return make


def refuse_to_start(key, logs, number):
    raise AssertionError("a run that cannot start needs no ranks")


def test_runs_of_one_key_share_its_group_and_a_run_that_ends_it_starts_a_fresh_one(tmp_path):
    seen, made, joined = [], [], []
    ends = iter(["ok", "ok", "failed", "ok", "timeout", "ok"])
    groups = RankGroups(tmp_path, 10.0, say=lambda line: None, joined=joined.append, make=fake_groups(ends, seen, made))
    one, two = GroupKey(1, "cuda"), GroupKey(2, "cuda")
    run = type("Run", (), {"run_id": "r"})()
    statuses = [groups.train(key, Job(run, str(tmp_path)), 5.0).status for key in (one, two, one, one, two, two)]
    assert statuses == ["ok", "ok", "failed", "ok", "timeout", "ok"]
    assert [(key.world_size, number) for key, number, _, _ in seen] == [(1, 1), (2, 2), (1, 1), (1, 3), (2, 2), (2, 4)]
    assert len(joined) == 4 and groups.started == 4
    live = list(groups.groups.values())
    groups.close()
    assert all(group.left for group in live) and not groups.groups


def test_a_group_that_cannot_start_fails_the_run_that_needed_it_with_the_reason(tmp_path):
    class Refusing(FakeGroup):
        def start(self, timeout_s):
            raise GroupFailed("failed", "rank 1: ConfigError: device=cuda but no CUDA device is available")

    lines = []
    groups = RankGroups(tmp_path, 10.0, say=lines.append, make=lambda key, logs, number: Refusing(key, number, iter([]), []))
    end = groups.train(GroupKey(2, "cuda"), Job(None, str(tmp_path)), 5.0)  # type: ignore[arg-type]
    assert end.status == "failed" and end.reason.startswith("its ranks did not start: rank 1: ConfigError")
    assert not groups.groups and "did not start" in lines[0]


def test_the_check_trains_each_run_and_its_twin_on_the_ranks_of_their_size_and_device_and_cuda_stays_out(tmp_path, monkeypatch):
    """The parent's side of a whole check on a (pretended) GPU, with groups that train nothing: each
    run prepared here (its data in its folder while its ranks have it), device runs on the CUDA
    groups and twins on the CPU ones, a group per world size and device started once, the GPU's
    name from its ranks, and CUDA never initialised in this process (NVML's count alone)."""
    from dygsched.commands.gpu_check import groups as groups_module

    def no_cuda_here(*args, **kwargs):
        raise AssertionError("the check's own process initialised CUDA")

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # what NVML counts
    monkeypatch.setattr(torch.cuda, "_lazy_init", no_cuda_here)
    monkeypatch.setattr(torch.cuda, "is_available", no_cuda_here)
    monkeypatch.setattr(torch.cuda, "get_device_properties", no_cuda_here)
    seen, made = [], []
    monkeypatch.setattr(groups_module, "RankGroup", fake_groups(iter(["ok"] * 8), seen, made))
    monkeypatch.setattr(cli, "RankGroups", lambda *a, **k: RankGroups(*a, **k, make=groups_module.RankGroup))
    folder = tmp_path / "check"
    assert gpu_check.main([str(folder), "--parts", "ws1,ws2", "--only", "psg"]) == 0
    assert [(key.world_size, key.device, run_id, data) for key, _, run_id, data in seen] == [
        (1, "cuda", "psg-ws1-cuda", True),
        (1, "cpu", "psg-ws1-cpu-twin", True),
        (2, "cuda", "psg-ws2-cuda", True),
        (2, "cpu", "psg-ws2-cpu-twin", True),
    ]
    assert len(made) == 4 and all(group.left for group in made)
    assert not list((folder / "runs").glob("*/.data.pt"))  # each run's data gone with it
    rows = list(csv.DictReader(open(folder / "check_gpu.csv")))
    assert [(r["part"], r["status"], r["gpus"], r["loss_check"]) for r in rows] == [
        ("ws1", "ok", "1", "same"),
        ("ws2", "ok", "1", "same"),
    ]
    machine = json.loads((folder / "check_gpu_machine.json").read_text())
    assert machine["gpus"] == 1 and machine["gpu"] == "Fake GPU" and machine["gpu_memory_gib"] == 1.5


def test_a_run_its_ranks_failed_is_one_row_and_is_marked_failed_in_its_folder(tmp_path, monkeypatch):
    from dygsched.commands.gpu_check import groups as groups_module

    seen, made = [], []
    monkeypatch.setattr(groups_module, "RankGroup", fake_groups(iter(["failed", "ok", "ok"]), seen, made))
    monkeypatch.setattr(cli, "RankGroups", lambda *a, **k: RankGroups(*a, **k, make=groups_module.RankGroup))
    folder = tmp_path / "check"
    assert gpu_check.main([str(folder), "--device", "cpu", "--parts", "ws1,ws2", "--only", "psg"]) == 1
    rows = list(csv.DictReader(open(folder / "check_gpu.csv")))
    assert [(r["part"], r["status"], r["reason"]) for r in rows] == [
        ("ws1", "failed", "rank 1: failed on purpose"),
        ("ws2", "ok", ""),
    ]
    summary = json.loads((folder / "runs" / "psg-ws1-cpu" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"] == "failed in the GPU check: rank 1: failed on purpose"
    assert [number for _, number, _, _ in seen] == [1, 2, 2]  # no twin for the failed run; on CPU a twin shares its run's ranks


# Runs that go wrong on purpose, on one rank of two: an exception, an abort (SIGABRT, as NCCL's
# watchdog ends a rank), a pause (rank 0 sleeps in its first evaluation).
FAILING = ("model=tgcn", "model._target_=tests.launch.failing_model.FailingTGCN")
RAISES = (*TINY_SNAPSHOTS, "sched=psg", *FAILING, "+model.error=value")
ABORTS = (*TINY_SNAPSHOTS, "sched=psg", *FAILING, "+model.error=abort")


def pauses(pause_file: Path) -> tuple[str, ...]:
    pausing = ("model._target_=tests.launch.pausing.PausingTGCN", "+model.pause_in=evaluation")
    return (*TINY_SNAPSHOTS, "sched=psg", *pausing, f"+model.pause_file={pause_file}")


@pytest.mark.slow  # four groups of two spawned ranks, each importing torch, and a deadline of 25 s
def test_a_run_that_raises_dies_or_hangs_on_its_ranks_is_one_row_and_the_next_run_gets_fresh_ranks(tmp_path, monkeypatch):
    import multiprocessing

    monkeypatch.setattr(
        cli,
        "VARIANTS",
        (
            Variant("psg", (*TINY_SNAPSHOTS, "sched=psg"), world_sizes=(2,)),
            Variant("raises", RAISES, world_sizes=(2,)),
            Variant("aborts", ABORTS, world_sizes=(2,)),
            Variant("hangs", pauses(tmp_path / "paused"), world_sizes=(2,)),
            Variant("esdg", (*TINY_SNAPSHOTS, "sched=esdg"), world_sizes=(2,)),
        ),
    )
    folder = tmp_path / "check"
    argv = [str(folder), "--device", "cpu", "--parts", "ws2", "--run-timeout-s", "25", "--budget-s", "900"]
    assert gpu_check.main(argv) == 1
    rows = {r["name"]: r for r in csv.DictReader(open(folder / "check_gpu.csv"))}
    assert (rows["psg"]["status"], rows["psg"]["loss_check"], rows["psg"]["backend"]) == ("ok", "same", "gloo")
    assert (rows["raises"]["status"], rows["raises"]["reason"]) == (
        "failed",
        "rank 1: ValueError: NaN in the hidden state (simulated)",
    )
    assert rows["aborts"]["status"] == "failed" and rows["aborts"]["reason"].startswith(
        "rank 1 was killed by SIGABRT during training"
    )
    assert rows["hangs"]["status"] == "timeout"
    assert rows["hangs"]["reason"].startswith("not finished after 25 s (rank 0 in evaluation, epoch 1 of 2)")
    assert (rows["esdg"]["status"], rows["esdg"]["loss_check"]) == ("ok", "same")  # on ranks started after the hang
    started = sorted(p.name for p in (folder / "ranks").glob("*rank0.log"))
    assert started == [f"ranks-ws2-cpu-{n}-rank0.log" for n in (1, 2, 3, 4)]  # psg and raises, aborts, hangs, esdg
    assert multiprocessing.active_children() == []  # every rank ended with the check


@pytest.mark.slow  # one spawned rank, importing torch
def test_sigterm_stops_the_check_and_its_ranks_and_keeps_the_table(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    pause = tmp_path / "paused"
    folder = tmp_path / "check"
    program = (
        "import sys\n"
        "from dygsched.commands.gpu_check import cli\n"
        "from dygsched.commands.gpu_check.variants import TINY_SNAPSHOTS, Variant\n"
        "cli.VARIANTS = (\n"
        "    Variant('psg', (*TINY_SNAPSHOTS, 'sched=psg'), world_sizes=(1,)),\n"
        f"    Variant('hangs', {pauses(pause)!r}, world_sizes=(1,)),\n"
        ")\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    check = subprocess.Popen(
        [sys.executable, "-c", program, str(folder), "--device", "cpu", "--parts", "ws1", "--no-twins"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not pause.exists() and check.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pause.exists(), check.communicate(timeout=5)[0] if check.poll() is not None else "the run never paused"
        ranks = json.loads((folder / "runs" / "hangs-ws1-cpu" / "ranks.json").read_text())
        check.send_signal(signal.SIGTERM)
        out, _ = check.communicate(timeout=60)
    finally:
        if check.poll() is None:
            check.kill()
    assert check.returncode == 128 + signal.SIGTERM, out
    assert "stopped (SIGTERM) after 1 rows" in out
    rows = list(csv.DictReader(open(folder / "check_gpu.csv")))
    assert [(r["name"], r["status"]) for r in rows] == [("psg", "ok")]
    summary = json.loads((folder / "runs" / "hangs-ws1-cpu" / "summary.json").read_text())
    assert (summary["status"], summary["reason"]) == ("failed", "terminated by SIGTERM")
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(ranks[0]["pid"], 0)  # the rank ended with the check


def test_the_default_budget_with_one_start_and_one_run_ends_a_minute_inside_makes_guard():
    """docs/operations.md sizes the budget so that the whole check fits eight minutes: what the
    check may still do once its budget is spent (the ranks a run needs, then the run) must end a
    minute before ``make``'s guard stops it."""
    import re

    from tests.conftest import ROOT

    guard = re.search(r"^GPU_TARGET_TIMEOUT_S \?= (\d+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert guard is not None
    args = cli.parse_args([])
    assert args.budget_s + args.start_timeout_s + args.run_timeout_s <= int(guard.group(1)) - 60 <= 8 * 60 - 60
