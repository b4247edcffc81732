"""The REAL targets: their readings, their tables laid out as the paper's and its stated ratios beside
ours, and one smoke build end to end."""

from __future__ import annotations

import math

import pandas as pd

from dygsched.paper import real
from dygsched.paper.build import build_target
from dygsched.paper.common import published_value
from dygsched.paper.published import rows_of
from dygsched.paper.verdict import WITHIN_SPREAD, check_headline, judge


def verdict_of(target, tables):
    published = rows_of(target.name)
    return judge(target.shape(tables) if target.shape else None, published, target.headlines(tables, published))


# ---- table-ablation ----------------------------------------------------------------------------------
def ablation_table(speedups: dict[str, tuple[float, float]]) -> dict[str, pd.DataFrame]:
    """Our ablation table for two models: each step's speedup over PSG on the first and the second."""
    rows = [
        {"dataset": "d", "model": "tgcn", "world_size": 2, "step": "PSG", "speedup_vs_psg": 1.0},
        {"dataset": "d", "model": "wdgcn", "world_size": 2, "step": "PSG", "speedup_vs_psg": 1.0},
    ]
    for step, (first, second) in speedups.items():
        rows += [
            {"dataset": "d", "model": "tgcn", "world_size": 2, "step": step, "speedup_vs_psg": first},
            {"dataset": "d", "model": "wdgcn", "world_size": 2, "step": step, "speedup_vs_psg": second},
        ]
    return {real.ABLATION_CSV: pd.DataFrame(rows)}


def test_ablation_reading_gives_each_models_steps():
    tables = ablation_table({"+ type I": (1.1, 1.2), "+ REAL-L": (1.5, 2.0)})
    assert (
        real.read_ablation(tables)
        == "speedup over PSG, tgcn: + type I 1.10x, + REAL-L 1.50x; wdgcn: + type I 1.20x, + REAL-L 2.00x"
    )


def test_ablation_with_the_papers_ranges_reproduces():
    published = rows_of("table-ablation")
    ranges = {
        ours: tuple(published_value(published, paper, column) for column in real.SPEEDUP_RANGE)
        for ours, paper in real.STEP_LABELS.items()
    }
    tables = ablation_table(ranges)  # one model at each step's lowest speedup, the other at its highest
    shape = real.shape_ablation(tables)
    assert list(shape.frame.index) == ["+type I reuse", "+type II reuse", "+REAL-G", "+REAL-L"]
    assert list(shape.frame.columns) == list(real.SPEEDUP_RANGE) and shape.paper_ref == "Figure 13 (text)"
    headlines = real.headlines_ablation(tables, published)
    assert math.isclose(headlines[-1].paper, math.sqrt(1.08 * 2.81)) and all(math.isclose(h.quotient, 1) for h in headlines)
    verdict = verdict_of(real.ABLATION, tables)
    assert verdict.word == "reproduced" and verdict.order == 1 and verdict.cells == 8


def test_ablation_where_each_step_slows_the_last_is_not_reproduced_and_unrun_steps_are_not_measured():
    tables = ablation_table({"+ type I": (0.9, 0.95), "+ type II": (0.8, 0.85), "+ REAL-G": (0.7, 0.75), "+ REAL-L": (0.6, 0.65)})
    verdict = verdict_of(real.ABLATION, tables)
    assert verdict.word == "not" and verdict.order == -1
    only_real_l = ablation_table({"+ REAL-L": (1.5, 2.0)})
    assert [h.ours is None for h in real.headlines_ablation(only_real_l, rows_of("table-ablation"))] == [True, True, True, False]


# ---- table-reuse-memory ------------------------------------------------------------------------------
def memory_table(full: float, diffmap: float, degree: float, dataset: str = real.ARXIV_SIZED) -> dict[str, pd.DataFrame]:
    """One dataset's row of our memory table, the sizes in GB."""
    total = diffmap + degree
    row = {
        "dataset": dataset,
        "full_graph_bytes": full * 1e9,
        "diffmap_bytes": diffmap * 1e9,
        "degree_bytes": degree * 1e9,
        "total_bytes": total * 1e9,
        "saved_fraction": 1 - total / full,
        "build_seconds": 0.25,
    }
    return {real.REUSE_MEMORY_CSV: pd.DataFrame([row])}


def test_reuse_memory_reading_gives_each_datasets_saving_and_the_slowest_build():
    tables = memory_table(2.0, 0.4, 0.1, dataset="synthetic")
    assert (
        real.read_reuse_memory(tables)
        == "diff maps + degrees save synthetic 75.0% of the full graphs' bytes; built in at most 0.25 s"
    )


def test_reuse_memory_with_arxivs_sizes_reproduces_table_5():
    published = rows_of("table-reuse-memory")
    arxiv = {
        row: published_value(published[published.dataset == "Arxiv"], row, "Arxiv")
        for row in ("Full Graph", "DiffMap", "Node Degree")
    }
    tables = memory_table(arxiv["Full Graph"], arxiv["DiffMap"], arxiv["Node Degree"])
    shape = real.shape_reuse_memory(tables)
    assert list(shape.frame.index) == ["Full Graph", "DiffMap", "Node Degree", "Total"] and list(shape.frame.columns) == ["Arxiv"]
    assert math.isclose(shape.frame.at["Total", "Arxiv"], 0.54)
    headlines = real.headlines_reuse_memory(tables, published)
    assert [h.ratio for h in headlines] == [False, False]
    assert math.isclose(headlines[0].ours, 80.0) and math.isclose(
        headlines[1].paper, (80.0 + 76.1 + 88.9 + 80.3 + 78.1 + 86.8) / 6
    )
    verdict = verdict_of(real.REUSE_MEMORY, tables)
    assert verdict.word == "reproduced" and verdict.order == 1


def test_reuse_memory_that_grows_the_graph_is_not_reproduced_and_other_datasets_are_not_compared():
    tables = memory_table(0.5, 2.0, 1.0)  # diff maps larger than the full graphs
    assert verdict_of(real.REUSE_MEMORY, tables).word == "not"
    elsewhere = memory_table(2.0, 0.4, 0.1, dataset="synthetic")
    assert real.shape_reuse_memory(elsewhere).frame.empty
    assert real.headlines_reuse_memory(elsewhere, rows_of("table-reuse-memory"))[0].ours is None


# ---- bench-reuse -------------------------------------------------------------------------------------
def bench_table(speedup: float, flops_reduction: float) -> dict[str, pd.DataFrame]:
    frame = pd.DataFrame(
        {"run": ["psg", "real"], "epoch_time_s": [2.0, 2.0 / speedup], "conv_flops_per_epoch": [1e9, 1e9 / flops_reduction]}
    )
    return {real.bench_reuse_csv("tgcn", 1): frame}


def test_bench_reuse_reading_compares_the_last_strategy_with_the_first():
    assert real.read_bench_reuse(bench_table(1.6, 2.5)) == "real: 1.60x faster than psg, 2.50x fewer graph-convolution FLOPs"


def test_bench_reuse_with_the_papers_averages_reproduces_and_a_slower_reuse_does_not():
    published = rows_of("bench-reuse")
    speedup = published_value(published, "REAL-L vs BLAD", "speedup one-layer avg")
    flops = published_value(published, "REAL-L vs ESDG/BLAD", "GraphConv FLOPs reduction avg")
    assert real.BENCH_REUSE.shape is None
    headlines = real.headlines_bench_reuse(bench_table(speedup, flops), published)
    assert [round(h.paper, 2) for h in headlines] == [1.83, 2.87] and all(math.isclose(h.quotient, 1) for h in headlines)
    assert verdict_of(real.BENCH_REUSE, bench_table(speedup, flops)).word == "reproduced"
    assert verdict_of(real.BENCH_REUSE, bench_table(0.8, 0.9)).word == "not"


# ---- one smoke build ---------------------------------------------------------------------------------
def test_reuse_memory_builds_at_smoke_size(tmp_path):
    build_target(real.REUSE_MEMORY, tmp_path, smoke=True)
    table = pd.read_csv(tmp_path / real.REUSE_MEMORY_CSV)
    assert list(table.dataset) == ["synthetic", "twitter_tennis"]
    assert (table.total_bytes == table.diffmap_bytes + table.degree_bytes).all() and (
        table.total_bytes < table.full_graph_bytes
    ).all()
    assert "synthetic" in real.read_reuse_memory({real.REUSE_MEMORY_CSV: table})


# ---- table-ablation: the spread over rounds ------------------------------------------------------------
def ablation_runs(folder, psg: list[float], real_l: list[float]) -> None:
    """A runs table of two steps over rounds, written as the sweep writes it: round after round."""
    rows = []
    for psg_s, real_s in zip(psg, real_l):
        for sched, seconds in (("psg", psg_s), ("real_l", real_s)):
            rows.append(
                {
                    "status": "ok",
                    "dataset": "d",
                    "model": "tgcn",
                    "world_size": 2,
                    "sched": sched,
                    "epoch_time_s": seconds,
                    "conv_flops_per_epoch": 1e9,
                    "imbalance_ratio": 1.1,
                    "final_train_loss": 0.2,
                }
            )
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(folder / "runs.parquet")


def test_ablation_keeps_each_rounds_speedup_and_a_spread_over_the_papers_value_agrees(tmp_path):
    ablation_runs(tmp_path / real.ABLATION_DIR, psg=[2.0, 2.2, 1.8], real_l=[2.0 / 1.5, 2.2 / 2.0, 1.8 / 1.7])
    real.build_ablation(tmp_path)
    table = pd.read_csv(tmp_path / real.ABLATION_CSV)
    row = table[table.step == "+ REAL-L"].iloc[0]
    assert row.rounds == 3 and math.isclose(row.speedup_vs_psg, 2.0 / 1.1)  # the medians' ratio, as before
    assert math.isclose(row.speedup_vs_psg_min, 1.5) and math.isclose(row.speedup_vs_psg_max, 2.0)
    assert {"epoch_time_min_s", "epoch_time_max_s", "flops_reduction_vs_psg"} <= set(table.columns)  # kept
    published = rows_of("table-ablation")
    headlines = real.headlines_ablation({real.ABLATION_CSV: table}, published)
    real_l = next(h for h in headlines if h.label.startswith("+REAL-L"))
    assert real_l.spread == (1.5, 2.0) and 1.5 < real_l.paper < 2.0  # the paper's sqrt(1.08 x 2.81) = 1.74
    check = check_headline(real_l)
    assert check.agrees and check.close and check.note == WITHIN_SPREAD
    assert all(h.spread is None for h in headlines if h is not real_l)  # steps not run: no spread either


def test_ablation_of_one_round_or_an_older_table_has_no_spread(tmp_path):
    ablation_runs(tmp_path / real.ABLATION_DIR, psg=[2.0], real_l=[1.0])
    real.build_ablation(tmp_path)
    table = pd.read_csv(tmp_path / real.ABLATION_CSV)
    published = rows_of("table-ablation")
    assert all(h.spread is None for h in real.headlines_ablation({real.ABLATION_CSV: table}, published))
    older = table.drop(columns=["speedup_vs_psg_min", "speedup_vs_psg_max"]).assign(rounds=3)
    assert all(h.spread is None for h in real.headlines_ablation({real.ABLATION_CSV: older}, published))


def test_bench_reuse_over_rounds_gives_the_rounds_spread():
    tables = bench_table(1.5, 2.0)
    frame = tables[real.bench_reuse_csv("tgcn", 1)].assign(rounds=2, epoch_time_s_per_round=["2 3", "1 2"])
    speedup = real.headlines_bench_reuse({"t.csv": frame}, rows_of("bench-reuse"))[0]
    assert speedup.spread == (1.5, 2.0)
    assert real.headlines_bench_reuse(tables, rows_of("bench-reuse"))[0].spread is None
