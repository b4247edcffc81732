"""FlareDTDG's targets: their readings, ours laid out as the paper's tables, the paper's stated ratios
beside ours, and one target built end to end at smoke size."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dygsched.paper import flare
from dygsched.paper.published import rows_of
from dygsched.paper.verdict import judge

NAN = float("nan")
OUR_MODELS = {label: model for model, label in flare.common.MODEL_LABELS.items()}  # the paper's labels -> our names


def paper_cells(target: str, ref: str, dataset: str = flare.common.PAPER_DATASET) -> pd.DataFrame:
    """The paper's table ``ref`` (of ``dataset``) as model label x column label."""
    rows = rows_of(target)
    rows = rows[(rows.ref == ref) & (rows.dataset == dataset)]
    return rows.pivot_table(index="row", columns="column", values="value", aggfunc="first")


def long_from_paper(cells: pd.DataFrame, value: str, variants: dict[str, str]) -> pd.DataFrame:
    """Ours as a long (model, variant, ``value``) table holding the paper's numbers: ``variants``
    maps our variant names to the paper's column labels."""
    return pd.DataFrame(
        [
            {"model": OUR_MODELS[label], "variant": ours, value: cells.loc[label, column]}
            for label in cells.index
            for ours, column in variants.items()
        ]
    )


def verdict_word(target, tables) -> str:  # noqa: ANN001 - a PaperTarget
    published = rows_of(target.name)
    shape = target.shape(tables) if target.shape else None
    return judge(shape, published, target.headlines(tables, published)).word


# ---- the targets as declared --------------------------------------------------------------------------
def test_the_variants_sweep_is_one_object_shared_by_tables_6_5_7_and_12():
    assert (
        flare.accuracy.ACCURACY.sweep
        is flare.memory.MEMORY.sweep
        is flare.breakdown.BREAKDOWN.sweep
        is flare.common.VARIANTS_SWEEP
    )
    assert {t.name for t in flare.TARGETS} == {
        "table-flare-accuracy",
        "table-flare-memory",
        "table-flare-convergence",
        "table-flare-time",
        "table-flare-breakdown",
        "fig-flare-heatmap",
        "fig-flare-scaling",
    }
    assert all(t.paper == flare.SECTION.key and t.outputs[0].startswith(t.sweep.folder + "/") for t in flare.TARGETS)
    assert flare.convergence.CONVERGENCE.settings.at(smoke=True) == {"tolerance": 0.05}


def test_each_sweep_expands_to_the_grid_the_paper_tables_need():
    from dygsched.launch.sweeps import sweep_points

    def jobs(runs) -> int:  # noqa: ANN001
        return sum(len(sweep_points(list(run))) for run in runs)

    full = {t.sweep.folder: jobs(t.sweep.runs) for t in flare.TARGETS}
    assert full == {"flare/variants": 12, "flare/convergence": 9, "flare/time": 8, "flare/heatmap": 25, "flare/scaling": 2}
    assert all(run[-1] == flare.common.SMOKE for t in flare.TARGETS for run in t.sweep.smoke)
    assert ("epochs=3" in flare.convergence.CONVERGENCE.sweep.smoke[0]) and jobs(flare.convergence.CONVERGENCE.sweep.smoke) == 3


def test_importing_the_module_leaves_torch_unimported():
    import subprocess
    import sys

    code = "import sys, dygsched.paper.flare; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# ---- table 6 ------------------------------------------------------------------------------------------
def accuracy_table(cells: pd.DataFrame) -> pd.DataFrame:
    """flare_accuracy.csv as the builder writes it: a model column and one column per variant."""
    return pd.DataFrame(
        {
            "model": [OUR_MODELS[label] for label in cells.index],
            "FlareDTDG": cells["Ours"].to_numpy(),
            "Full-History": cells["Full-History"].to_numpy(),
            "Recent-Only": cells["Recent-Only"].to_numpy(),
        }
    )


def test_accuracy_reading_compares_with_full_history():
    table = pd.DataFrame({"model": ["tgcn"], "FlareDTDG": [0.25], "Full-History": [0.2]})
    assert (
        flare.accuracy.read_accuracy({"a.csv": table})
        == "test MSE, tgcn: FlareDTDG 0.2500, Full-History 0.2000 (FlareDTDG +25.0% against Full-History)"
    )


def test_accuracy_as_table_6_reproduces_the_papers_numbers_and_not_their_reverse():
    cells = paper_cells("table-flare-accuracy", "Table 6")
    tables = {flare.common.ACCURACY_CSV: accuracy_table(cells)}
    shape = flare.accuracy.shape_accuracy(tables)
    assert list(shape.frame.index) == ["T-GCN", "MPNN-LSTM", "EvolveGCN"] and list(shape.frame.columns) == [
        "Full-History",
        "Recent-Only",
        "Ours",
    ]
    assert shape.frame.loc["T-GCN", "Ours"] == pytest.approx(0.0876) and shape.rank_within == "rows"
    recent, full = flare.accuracy.headlines_accuracy(tables, rows_of("table-flare-accuracy"))
    assert recent.label == "FlareDTDG's test MSE over Recent-Only's" and recent.paper < 0.5 and recent.ours < 0.5
    assert full.paper == pytest.approx(1.149, abs=0.01) and full.ours == pytest.approx(1.142, abs=0.01)
    assert verdict_word(flare.accuracy.ACCURACY, tables) == "reproduced"
    swapped = accuracy_table(cells).rename(columns={"Full-History": "Recent-Only", "Recent-Only": "Full-History"})
    assert verdict_word(flare.accuracy.ACCURACY, {flare.common.ACCURACY_CSV: swapped}) == "not"


# ---- tables 5 and 7 -----------------------------------------------------------------------------------
def test_memory_reading_names_each_measure_and_says_when_the_papers_is_not_measured():
    table = pd.DataFrame(
        {
            "model": ["tgcn"] * 2,
            "variant": ["Full-History", "FlareDTDG"],
            "gpu_peak_allocated_mb": [NAN] * 2,
            "gpu_peak_allocated_vs_full_history": [NAN] * 2,
            "peak_rss_mb": [3000.0, 2000.0],
            "train_memory_vs_full_history": [1.0, 0.3],
        }
    )
    text = flare.memory.read_memory({"m.csv": table})
    assert text.startswith("no GPU in these runs, so no figure of the paper's measure") and "FlareDTDG 0.30x" in text
    assert "peak resident set 2000 to 3000 MB" in text
    gpu = table.assign(gpu_peak_allocated_mb=[100.0, 40.0], gpu_peak_allocated_vs_full_history=[1.0, 0.4])
    assert flare.memory.read_memory({"m.csv": gpu}).startswith(
        "GPU allocator peak per rank (the paper's measure) against Full-History's, tgcn: Full-History 1.00x, FlareDTDG 0.40x"
    )


def test_memory_as_table_7_takes_the_gpu_peak_and_says_when_it_falls_back_to_training_memory():
    cells = paper_cells("table-flare-memory", "Table 7")
    table = long_from_paper(cells, "gpu_peak_allocated_mb", {"Full-History": "Full-History", "FlareDTDG": "Ours"}).assign(
        train_memory_mb=1.0
    )
    tables = {flare.common.MEMORY_CSV: table}
    shape = flare.memory.shape_memory(tables)
    assert shape.paper_ref == "Table 7" and shape.unit == "MB, GPU allocator peak"
    assert shape.frame.loc["EvolveGCN", "Ours"] == pytest.approx(2054.24)
    (headline,) = flare.memory.headlines_memory(tables, rows_of("table-flare-memory"))
    assert headline.paper == pytest.approx(math.sqrt(1 / 0.33 / 0.29)) and headline.ours == pytest.approx(3.16, abs=0.02)
    assert verdict_word(flare.memory.MEMORY, tables) == "reproduced"
    on_cpu = table.assign(train_memory_mb=table.gpu_peak_allocated_mb, gpu_peak_allocated_mb=NAN)
    assert "not the paper's allocator peak" in flare.memory.shape_memory({flare.common.MEMORY_CSV: on_cpu}).unit
    more = on_cpu.assign(train_memory_mb=[1.0 if v == "Full-History" else 3.0 for v in on_cpu.variant])  # FlareDTDG uses more
    assert verdict_word(flare.memory.MEMORY, {flare.common.MEMORY_CSV: more}) == "not"


# ---- table 8 ------------------------------------------------------------------------------------------
def test_convergence_reading_gives_time_and_epochs_and_says_what_was_not_reached():
    table = pd.DataFrame(
        {
            "model": ["tgcn"] * 3,
            "variant": ["Full-History", "FlareDTDG", "Recent-Only"],
            "target_val_mse": [0.21] * 3,
            "time_to_target_s": [50.0, 20.0, NAN],
            "epochs_to_target": [5.0, 4.0, NAN],
            "vs_full_history": [1.0, 0.4, NAN],
            "reached": ["reached in 5 of 10 epochs", "reached in 4 of 10 epochs", "not reached in 10 epochs"],
        }
    )
    assert flare.convergence.read_convergence({"c.csv": table}) == (
        "time to the common target, tgcn (target val MSE 0.2100): Full-History 50.0 s in 5 epochs, "
        "FlareDTDG 20.0 s in 4 epochs, 0.40x Full-History's, Recent-Only not reached in 10 epochs"
    )


def test_convergence_as_table_8_with_shrinking_left_unmeasured():
    cells = paper_cells("table-flare-convergence", "Table 8")
    table = long_from_paper(cells, "time_to_target_s", {"Full-History": "Full-History", "FlareDTDG": "Ours"})
    tables = {flare.common.CONVERGENCE_CSV: table}
    assert flare.convergence.shape_convergence(tables).frame.loc["T-GCN", "Full-History"] == pytest.approx(5887.7)
    full, shrinking = flare.convergence.headlines_convergence(tables, rows_of("table-flare-convergence"))
    assert full.ours == pytest.approx(3.09, abs=0.02) and full.paper == pytest.approx(math.sqrt(1 / 0.37 / 0.28))
    assert shrinking.ours is None and shrinking.paper > 1
    assert verdict_word(flare.convergence.CONVERGENCE, tables) == "reproduced"
    never = table.assign(time_to_target_s=[NAN if v == "FlareDTDG" else t for v, t in zip(table.variant, table.time_to_target_s)])
    assert verdict_word(flare.convergence.CONVERGENCE, {flare.common.CONVERGENCE_CSV: never}) == "not measured"


# ---- tables 9-11 --------------------------------------------------------------------------------------
def time_table(
    halo_without: float, halo_with: float, epoch_without_shrinking: float, memory_without_shrinking: float
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["tgcn"] * 3,
            "variant": ["FlareDTDG", "overlap mlp", "w/o shrinking"],
            "epoch_time_s": [1.0, 0.95, epoch_without_shrinking],
            "halo_s": [halo_without, halo_with, halo_without],
            "gpu_peak_allocated_mb": [NAN] * 3,
            "train_memory_mb": [100.0, 100.0, memory_without_shrinking],
            "vs_flare": [1.0, 0.95, epoch_without_shrinking],
        }
    )


def test_time_reading_and_table_11_with_the_three_stated_ratios():
    table = time_table(halo_without=0.093, halo_with=0.074, epoch_without_shrinking=1.15, memory_without_shrinking=106.0)
    tables = {flare.common.TIME_CSV: table}
    assert (
        flare.epoch_time.read_time(tables)
        == "epoch time against FlareDTDG's, tgcn: FlareDTDG 1.00x, overlap mlp 0.95x, w/o shrinking 1.15x"
    )
    shape = flare.epoch_time.shape_time(tables)
    assert shape.paper_ref == "Table 11" and list(shape.frame.columns) == ["w/o Async", "w/ Async (Ours)"]
    overlap, shrink_time, shrink_memory = flare.epoch_time.headlines_time(tables, rows_of("table-flare-time"))
    assert (
        overlap.ours == pytest.approx(0.093 / 0.074)
        and shrink_time.ours == pytest.approx(1.15)
        and shrink_memory.ours == pytest.approx(1.06)
    )
    assert shrink_time.paper == pytest.approx(1.15, abs=0.05)  # table 9's w/o over w/ shrinking, over its nine rows
    assert verdict_word(flare.epoch_time.TIME, tables) == "reproduced"
    reversed_ = time_table(halo_without=0.07, halo_with=0.09, epoch_without_shrinking=0.8, memory_without_shrinking=90.0)
    assert verdict_word(flare.epoch_time.TIME, {flare.common.TIME_CSV: reversed_}) == "not"


# ---- table 12 -----------------------------------------------------------------------------------------
def test_breakdown_as_table_12_ranks_each_models_phases():
    cells = paper_cells("table-flare-breakdown", "Table 12")
    shares = {ours: cells.loc["MPNN-LSTM", label] for ours, label in flare.breakdown.BREAKDOWN_LABELS.items()}
    table = pd.DataFrame([{"model": "mpnn_lstm", "epoch_time_s": 2.0, **shares}])
    tables = {flare.common.BREAKDOWN_CSV: table}
    assert (
        flare.breakdown.read_breakdown(tables)
        == "the largest shares of an epoch, mpnn_lstm: backward 46%, forward 27%, remap 18%"
    )
    shape = flare.breakdown.shape_breakdown(tables)
    assert list(shape.frame.index) == ["MPNN-LSTM"] and list(shape.frame.columns) == list(
        flare.breakdown.BREAKDOWN_LABELS.values()
    )
    remap, compute = flare.breakdown.headlines_breakdown(tables, rows_of("table-flare-breakdown"))
    assert remap.paper == pytest.approx(math.sqrt(11.68 * 17.51)) and compute.ours == pytest.approx(27.06 + 46.00)
    assert verdict_word(flare.breakdown.BREAKDOWN, tables) == "reproduced"
    upside_down = table.assign(**{"forward_%": 1.0, "backward_%": 0.5, "shuffle_%": 46.0, "chunking_%": 27.0, "remap_%": 0.2})
    assert verdict_word(flare.breakdown.BREAKDOWN, {flare.common.BREAKDOWN_CSV: upside_down}) == "not"


# ---- figure 8 -----------------------------------------------------------------------------------------
def heatmap_table(best_k: int, best_alpha: float) -> pd.DataFrame:
    grid = [(k, a) for k in (2, 4) for a in (0.0, 0.3)]
    return pd.DataFrame(
        {
            "K": [k for k, _ in grid],
            "alpha": [a for _, a in grid],
            "epoch_time_s": 1.0,
            "train_memory_mb": [10.0, 20.0, 30.0, 40.0],
            "test_mse": [0.1 if (k, a) == (best_k, best_alpha) else 0.2 for k, a in grid],
        }
    )


def test_heatmap_reading_and_the_best_settings_against_figure_8s_text():
    tables = {flare.common.HEATMAP_CSV: heatmap_table(best_k=4, best_alpha=0.3)}
    assert (
        flare.heatmap.read_heatmap(tables)
        == "lowest test MSE 0.1000 at K = 4, alpha = 0.3; over 4 settings MSE spans 0.1000 to 0.2000, training memory 10 to 40 MB"
    )
    k, alpha = flare.heatmap.headlines_heatmap(tables, rows_of("fig-flare-heatmap"))
    assert (k.paper, k.ours, alpha.paper, alpha.ours) == (pytest.approx(math.sqrt(15)), 4.0, 0.3, 0.3)
    assert verdict_word(flare.heatmap.HEATMAP, tables) == "reproduced"
    assert (
        verdict_word(flare.heatmap.HEATMAP, {flare.common.HEATMAP_CSV: heatmap_table(best_k=2, best_alpha=0.0)}) == "partly"
    )  # K close, alpha 0 not
    one_setting = heatmap_table(best_k=2, best_alpha=0.0).head(1)
    assert verdict_word(flare.heatmap.HEATMAP, {flare.common.HEATMAP_CSV: one_setting}) == "not measured"


# ---- figure 7 -----------------------------------------------------------------------------------------
def scaling_table(speedup: float, memory_ratio: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["tgcn"] * 2,
            "variant": ["FlareDTDG"] * 2,
            "world_size": [1, 2],
            "epoch_time_s": [1.0, 1 / speedup],
            "gpu_peak_allocated_mb": [NAN] * 2,
            "train_memory_mb": [100.0, 100.0 * memory_ratio],
            "speedup_vs_1_rank": [1.0, speedup],
        }
    )


def test_scaling_reading_and_figure_7_per_doubling_of_the_ranks():
    tables = {flare.common.SCALING_CSV: scaling_table(speedup=1.6, memory_ratio=0.55)}
    assert flare.scaling.read_scaling(tables) == "1 to 2 ranks: 1.60x the speed, training memory per rank 0.55x"
    speedup, memory = flare.scaling.headlines_scaling(tables, rows_of("fig-flare-scaling"))
    assert speedup.paper == pytest.approx(math.sqrt(2.6)) and memory.paper == pytest.approx(math.sqrt(2.3 / 7.5))
    assert (speedup.ours, memory.ours) == (pytest.approx(1.6), pytest.approx(0.55))
    assert verdict_word(flare.scaling.SCALING, tables) == "reproduced"
    assert verdict_word(flare.scaling.SCALING, {flare.common.SCALING_CSV: scaling_table(speedup=0.5, memory_ratio=2.0)}) == "not"
    assert flare.scaling.per_doubling(4.0, 1, 4) == pytest.approx(2.0) and flare.scaling.per_doubling(2.0, 2, 2) is None


# ---- end to end ---------------------------------------------------------------------------------------
@pytest.mark.slow  # CI builds every target at smoke size after the suite (make paper SMOKE=1)
def test_the_heatmap_builds_at_smoke_size_from_an_empty_folder(tmp_path):
    from dygsched.paper.build import build_target

    build_target(flare.heatmap.HEATMAP, tmp_path, smoke=True)
    assert flare.heatmap.HEATMAP.missing_outputs(tmp_path) == []
    table = pd.read_csv(tmp_path / flare.common.HEATMAP_CSV)
    assert list(table[["K", "alpha"]].itertuples(index=False, name=None)) == [(2, 0.3)] and table.test_mse.notna().all()
    assert flare.heatmap.read_heatmap({flare.common.HEATMAP_CSV: table}).startswith("lowest test MSE")


# ---- regimes and figure 8's claims (issue 46) -----------------------------------------------------------
@pytest.mark.parametrize("target", flare.TARGETS, ids=lambda t: t.name)
def test_every_target_says_why_its_regime_differs_from_the_papers(target):  # noqa: ANN001 - a PaperTarget
    assert target.regime.paper.strip() and target.regime.ours.strip() and target.regime.why.strip()


def grid_table(mse, memory=None, time=None) -> pd.DataFrame:  # noqa: ANN001 - functions of (K, alpha)
    """A 3 x 3 grid over K = 1, 4, 8 and alpha = 0, 0.3, 1 of test MSE, training memory and epoch time."""
    cells = [(k, a) for k in (1, 4, 8) for a in (0.0, 0.3, 1.0)]
    return pd.DataFrame(
        {
            "K": [k for k, _ in cells],
            "alpha": [a for _, a in cells],
            "test_mse": [mse(k, a) for k, a in cells],
            "train_memory_mb": [(memory or (lambda k, a: 100.0 * k + 5 * a))(k, a) for k, a in cells],
            "epoch_time_s": [(time or (lambda k, a: 1.0 + k + 0.1 * a))(k, a) for k, a in cells],
        }
    )


def figure8_checks(table: pd.DataFrame) -> dict:
    tables = {flare.common.HEATMAP_CSV: table}
    return {claim.check.__name__: claim.check(tables) for claim in flare.heatmap.HEATMAP.claims}


def bowl(k: float, a: float) -> float:
    """Highest at K = 1, alpha = 0; lowest at K = 4, alpha = 0.3; one basin."""
    return 0.1 + 0.01 * abs(k - 4) + 0.05 * abs(a - 0.3) + (0.2 if (k, a) == (1, 0.0) else 0.0)


def test_figure_8s_claims_hold_on_a_grid_shaped_as_its_text_says():
    checks = figure8_checks(grid_table(bowl))
    assert {name: c.holds for name, c in checks.items()} == {
        "check_memory_rises_with_k": True,
        "check_time_rises_with_k": True,
        "check_alpha_subtler": True,
        "check_bottom_left_high": True,
        "check_local_search": True,
    }
    assert checks["check_local_search"].measured == (
        "from 9 of 9 cells a local search over neighbouring K and alpha reaches the lowest MSE 0.1000"
    )
    assert checks["check_memory_rises_with_k"].measured.endswith(
        "K = 1: 102 MB, K = 4: 402 MB, K = 8: 802 MB; correlation with K 1.00 (near-linear: at least 0.95)"
    )
    paper = rows_of(flare.heatmap.HEATMAP.name)
    tables = {flare.common.HEATMAP_CSV: grid_table(bowl)}
    word = judge(None, paper, flare.heatmap.headlines_heatmap(tables, paper), tuple(checks.values())).word
    assert word == "reproduced"  # K = 4 and alpha = 0.3 are the text's soc-youtube, and every claim holds


def test_figure_8s_claims_fail_where_the_grid_contradicts_its_text():
    def two_basins(k: float, a: float) -> float:  # minima at K = 1, alpha = 0 (low: no high-error corner) and K = 8, alpha = 1
        rows = {1: (0.12, 0.2, 0.25), 4: (0.2, 0.1, 0.2), 8: (0.25, 0.2, 0.15)}
        return rows[int(k)][(0.0, 0.3, 1.0).index(a)]

    checks = figure8_checks(grid_table(two_basins, memory=lambda k, a: 100.0 + 50 * a, time=lambda k, a: 10.0 - k + 5 * a))
    assert {name: c.holds for name, c in checks.items()} == {
        "check_memory_rises_with_k": False,
        "check_time_rises_with_k": False,
        "check_alpha_subtler": False,
        "check_bottom_left_high": False,
        "check_local_search": False,
    }
    assert checks["check_local_search"].measured == (
        "from 7 of 9 cells a local search over neighbouring K and alpha reaches the lowest MSE 0.1000; "
        "it stops at K = 1, alpha = 0, K = 8, alpha = 1"
    )
    assert checks["check_bottom_left_high"].measured.startswith("at K = 1, alpha 0 the test MSE is 0.1200, below")


def test_figure_8s_claims_are_missing_where_the_grid_does_not_vary_both_settings():
    one_alpha = grid_table(bowl)
    one_alpha = one_alpha[one_alpha.alpha == 0.3]
    assert {c.holds for c in figure8_checks(one_alpha).values()} == {None}
    no_corner = grid_table(bowl)
    no_corner = no_corner[no_corner.alpha > 0]  # no alpha 0 cell: the bottom-left corner is not measured
    assert figure8_checks(no_corner)["check_bottom_left_high"].holds is None
