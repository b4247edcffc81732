"""Readings say what the numbers show, and nothing the numbers do not."""

import pandas as pd

from dygsched.report.readings import READINGS, epoch_time, flare_accuracy, flare_convergence, flare_memory, planner, sven_comm
from dygsched.report.targets import TARGETS


def test_every_target_has_a_reading():
    assert set(READINGS) == {t.name for t in TARGETS}


def test_epoch_time_names_the_fastest_and_checks_greedy_against_dygnex():
    table = pd.DataFrame({
        "dataset": ["d"] * 3, "model": ["tgcn"] * 3, "sched": ["psg", "greedy", "dygnex_g"],
        "epoch_time_s": [2.0, 1.0, 1.5], "imbalance_ratio": [1.3, 1.05, 1.1], "speedup_vs_psg": [1.0, 2.0, 4 / 3],
    })  # fmt: skip
    text = epoch_time({"t.csv": table})
    assert "greedy fastest (2.00x PSG)" in text and "imbalance 1.05 to 1.3" in text
    assert "greedy ≤ DyGNeX-G holds on every row" in text
    slower = table.assign(epoch_time_s=[2.0, 1.8, 1.5])
    assert "holds on 0 of 1 rows" in epoch_time({"t.csv": slower})


def test_planner_counts_the_rows_where_greedy_loses():
    rows = []
    for instance, greedy, dygnex, label in (("a", 0.01, 0.02, "dygnex_g"), ("b", 0.03, 0.02, "dygnex_g[16 targets]")):
        rows += [{"instance": instance, "reuse": False, "solver": "greedy", "gap": greedy, "solve_time": 0.05},
                 {"instance": instance, "reuse": False, "solver": label, "gap": dygnex, "solve_time": 1.0}]  # fmt: skip
    text = planner({"p.csv": pd.DataFrame(rows)})
    assert "2 instances of the suite" in text and "holds on 1 of 2 rows" in text and "1.0% to 3.0%" in text


def test_flare_accuracy_compares_with_full_history_and_sven_comm_per_rank_count():
    table = pd.DataFrame({"model": ["tgcn"], "FlareDTDG": [0.25], "Full-History": [0.2]})
    assert "+25.0% against Full-History" in flare_accuracy({"a.csv": table})
    comm = pd.DataFrame({
        "ranks": [2, 2, 2, 8, 8, 8], "strategy": ["sven", "depcomm", "depcache"] * 2, "vs_sven": [1, 20, 0.5, 1, 25, 3.0],
    })  # fmt: skip
    assert sven_comm({"c.csv": comm}) == "bytes per epoch against Sven's: at 2 ranks depcache 0.50x, depcomm 20.00x; at 8 ranks depcache 3.00x, depcomm 25.00x"


def test_flare_memory_names_each_measure_and_says_when_the_papers_is_not_measured():
    table = pd.DataFrame({
        "model": ["tgcn"] * 2, "variant": ["Full-History", "FlareDTDG"], "gpu_peak_allocated_mb": [float("nan")] * 2,
        "gpu_peak_allocated_vs_full_history": [float("nan")] * 2, "peak_rss_mb": [3000.0, 2000.0],
        "train_memory_vs_full_history": [1.0, 0.3],
    })  # fmt: skip
    text = flare_memory({"m.csv": table})
    assert text.startswith("no GPU in these runs, so no figure of the paper's measure") and "FlareDTDG 0.30x" in text
    assert "peak resident set 2000 to 3000 MB" in text
    gpu = table.assign(gpu_peak_allocated_mb=[100.0, 40.0], gpu_peak_allocated_vs_full_history=[1.0, 0.4])
    assert flare_memory({"m.csv": gpu}).startswith("GPU allocator peak per rank (the paper's measure) against Full-History's, tgcn: Full-History 1.00x, FlareDTDG 0.40x")


def test_flare_convergence_gives_time_and_epochs_and_says_what_was_not_reached():
    table = pd.DataFrame({
        "model": ["tgcn"] * 3, "variant": ["Full-History", "FlareDTDG", "Recent-Only"], "target_val_mse": [0.21] * 3,
        "time_to_target_s": [50.0, 20.0, float("nan")], "epochs_to_target": [5.0, 4.0, float("nan")],
        "vs_full_history": [1.0, 0.4, float("nan")], "reached": ["reached in 5 of 10 epochs", "reached in 4 of 10 epochs", "not reached in 10 epochs"],
    })  # fmt: skip
    assert flare_convergence({"c.csv": table}) == (
        "time to the common target, tgcn (target val MSE 0.2100): Full-History 50.0 s in 5 epochs, "
        "FlareDTDG 20.0 s in 4 epochs, 0.40x Full-History's, Recent-Only not reached in 10 epochs"
    )


def test_scaling_gives_each_strategys_exponents_and_names_the_super_linear_ones():
    from dygsched.report.readings import scaling

    fits = pd.DataFrame({
        "sched": ["psg", "psg", "flare", "flare"], "axis": ["nodes", "snapshots"] * 2,
        "time_exponent": [0.98, 1.02, 1.35, 0.9], "memory_exponent": [0.4, 0.1, 0.5, 0.2],
    })  # fmt: skip
    text = scaling({"scaling/scaling.csv": pd.DataFrame(), "scaling/scaling_exponents.csv": fits})
    assert "psg time ~ nodes^0.98 (memory ^0.40), snapshots^1.02 (memory ^0.10)" in text
    assert text.endswith("faster than linear (exponent above 1.1): flare's time in nodes (1.35 over all sizes)")
    linear = fits.assign(time_exponent=1.0)
    assert scaling({"scaling/scaling_exponents.csv": linear}).endswith("every exponent at most 1.1)")
    steep_end = linear.assign(time_exponent_top=[1.0, 1.0, 1.49, 1.0], memory_exponent_top=0.8)
    assert scaling({"scaling/scaling_exponents.csv": steep_end}).endswith("flare's time in nodes (1.49 over the two largest)")
