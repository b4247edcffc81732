"""The GPU check's own logic, on CPU: its table, its refusals, its one line without a GPU, its probe.

The check itself needs a GPU (``make check-gpu``); ``--device cpu`` runs the same sweep here, which
takes minutes, so only its pieces are tested, the probe (child processes) with the slow tests.
"""

from __future__ import annotations

import csv
import tempfile
import time
from pathlib import Path

import pytest
import torch

from dygsched.commands import gpu_check
from dygsched.commands.gpu_check import COLUMNS, VARIANTS, Clock, Row, cli, loss_check, markdown, write_table
from dygsched.commands.gpu_check.probing import _json_line, probe_rank, probe_settings
from dygsched.commands.gpu_check.table import failure


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
    monkeypatch.setattr(cli, "check", lambda args, folder, clock, found: found.extend(made[r] for r in rows))
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


def test_a_run_that_cannot_start_is_a_failed_outcome_with_its_one_line_reason(tmp_path):
    outcome = gpu_check.one_run(["sched=nosuch", f"results_dir={tmp_path}"], timeout_s=60)
    assert outcome.status == "failed" and "nosuch" in outcome.reason and "\n" not in outcome.reason


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
