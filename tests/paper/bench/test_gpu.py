"""bench-gpu's own code on CPU: the rehearsal at the tests' sizes (``--device cpu --size tiny``), its
table and its refusals. The figures themselves need a GPU (``make bench-gpu``)."""

from __future__ import annotations

import csv
import math
import time

import pytest
import torch

from dygsched.paper.bench import gpu
from dygsched.paper.bench.gpu import cli, pairs
from dygsched.paper.bench.gpu.pairs import Side, ratio_row
from dygsched.paper.bench.gpu.plain import GCNGatedCell, plain_cell


def rehearse(tmp_path, *extra: str) -> tuple[int, list[dict[str, str]], str]:
    folder = tmp_path / "bench"
    code = gpu.main([str(folder), "--device", "cpu", "--size", "tiny", "--budget-s", "600", *extra])
    with open(folder / "bench_gpu.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return code, rows, (folder / "bench_gpu.md").read_text()


def test_the_pair_alternates_its_sides_over_the_rounds_and_tables_their_ratio(tmp_path, monkeypatch, capsys):
    """The program's own logic, each side's figures given (the rehearsal below runs both for real, in
    ``make test-slow``): A B A B, one row with the ratio A / B and its spread over the rounds."""
    ran = []

    def side(label, epoch_s):
        def figures(*args, **kwargs):
            ran.append(label)
            return {"epoch_s": epoch_s, "epochs_s": [epoch_s], "syncs_per_step": 0.0, "final_loss": 0.5, "peaks_mb": [1.0]}

        return figures

    monkeypatch.setattr(pairs, "engine_side", side("engine", 2.0))
    monkeypatch.setattr(pairs, "plain_side", side("plain", 4.0))
    code, rows, table = rehearse(tmp_path, "--pairs", "tgcn", "--rounds", "2")
    assert code == 0 and ran == ["engine", "plain", "engine", "plain"]
    (row,) = rows
    assert row["status"] == "ok" and row["rounds"] == "2" and float(row["ratio"]) == 0.5 and row["spread_over"] == "rounds"
    out = capsys.readouterr().out
    assert "engine-psg, round 1" in out and "plain-loop, round 2" in out  # A B A B
    assert "tgcn: epoch time engine-psg / plain-loop = " in out and "| tgcn |" in table


@pytest.mark.slow  # both sides trained for real, twice: the test above covers the alternation and the table
def test_the_rehearsal_times_the_engine_against_the_plain_loop_alternated(tmp_path, capsys):
    code, rows, table = rehearse(tmp_path, "--pairs", "tgcn", "--rounds", "2")
    assert code == 0 and [row["pair"] for row in rows] == ["tgcn"], rows
    (row,) = rows
    assert row["status"] == "ok" and row["rounds"] == "2" and row["measure"] == "epoch_s"
    a, b, ratio = float(row["a_value"]), float(row["b_value"]), float(row["ratio"])
    assert a > 0 and b > 0 and float(row["ratio_low"]) <= ratio <= float(row["ratio_high"])
    assert float(row["a_syncs_per_step"]) == 0.0  # the engine's step reads nothing back (the counter on CPU)
    assert row["b_syncs_per_step"] == ""  # the plain loop's are counted on CUDA only
    assert math.isfinite(float(row["a_final_loss"])) and math.isfinite(float(row["b_final_loss"]))
    out = capsys.readouterr().out
    assert "engine-psg, round 1" in out and "plain-loop, round 2" in out  # A B A B
    assert "tgcn: epoch time engine-psg / plain-loop = " in out and "| tgcn |" in table
    assert (tmp_path / "bench" / "bench_gpu_machine.json").is_file()


@pytest.mark.slow  # every pair at the tests' sizes: a few minutes on 2 cores
def test_every_pair_rehearses_on_cpu(tmp_path):
    code, rows, _ = rehearse(tmp_path, "--rounds", "1")
    assert code == 0 and [row["pair"] for row in rows] == list(pairs.PAIRS)
    assert all(row["status"] == "ok" and float(row["ratio"]) > 0 for row in rows), rows
    memory = next(row for row in rows if row["pair"] == "flare")
    assert memory["measure"] == "peak_mb" and float(memory["a_value"]) > 0


def test_a_failed_side_is_a_failed_row_and_exit_1_and_the_budget_skips_the_rest(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        time.sleep(0.1)  # past the budget below
        raise pairs.BenchFailed("real-real-r0: boom")

    monkeypatch.setattr(pairs, "engine_side", fail)
    folder = tmp_path / "bench"
    assert gpu.main([str(folder), "--device", "cpu", "--size", "tiny", "--pairs", "real,sven", "--budget-s", "0.05"]) == 1
    with open(folder / "bench_gpu.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["status"] for row in rows] == ["failed", "skipped"], rows
    assert rows[0]["reason"] == "real-real-r0: boom" and rows[0]["rounds"] == "0" and "budget" in rows[1]["reason"]


def test_ratios_are_a_over_b_with_their_spread():
    time_row = ratio_row("real", Side("real", values=[1.0, 2.0]), Side("psg", values=[2.0, 2.0]))
    assert (time_row["ratio"], time_row["ratio_low"], time_row["ratio_high"]) == (0.75, 0.5, 1.0)
    assert (time_row["a_value"], time_row["b_value"]) == (1.5, 2.0)
    assert time_row["spread_over"] == "rounds"
    one_round = ratio_row("sven", Side("on", [1.0], [0.9, 1.1]), Side("off", [2.0], [2.0, 2.0]))  # over its steady epochs
    assert (one_round["ratio_low"], one_round["ratio_high"], one_round["spread_over"]) == (0.45, 0.55, "epochs")
    memory = ratio_row("flare", Side("flare", per_epoch=[50.0, 60.0]), Side("full", per_epoch=[100.0, 100.0]))
    assert (memory["ratio"], memory["ratio_low"], memory["ratio_high"], memory["a_value"]) == (0.55, 0.5, 0.6, 60.0)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--pairs", "tgcn,nosuch"], "unknown pair nosuch"),
        (["--rounds", "0"], "--rounds must be"),
        (["--budget-s", "0"], "--budget-s"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_args(argv)
    assert exit_info.value.code == 2 and words in capsys.readouterr().err


def test_without_a_cuda_device_it_says_so_in_one_line_and_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.main([str(tmp_path / "bench")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no CUDA device" in out and not (tmp_path / "bench").exists()


def test_the_plain_cell_is_the_t_gcn_gru():
    """Without PyTorch Geometric Temporal the plain loop runs this cell: a GRU over graph convolutions."""
    torch.manual_seed(0)
    cell = GCNGatedCell(3, 4)
    x, edges, weights = torch.randn(5, 3), torch.tensor([[0, 1, 2], [1, 2, 3]]), torch.ones(3)
    h = cell(x, edges, weights, None)
    assert h.shape == (5, 4) and plain_cell() in ("pgt", "pyg-gcnconv")
    again = cell(x, edges, weights, h)
    z = torch.sigmoid(cell.gates[0](torch.cat([cell.convs[0](x, edges, weights), h], 1)))
    r = torch.sigmoid(cell.gates[1](torch.cat([cell.convs[1](x, edges, weights), h], 1)))
    candidate = torch.tanh(cell.gates[2](torch.cat([cell.convs[2](x, edges, weights), h * r], 1)))
    torch.testing.assert_close(again, z * h + (1 - z) * candidate)
