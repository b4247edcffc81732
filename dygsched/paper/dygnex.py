"""DyGNeX: snapshot-group schedules across GPUs: epoch time, imbalance, convergence, solve time."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dygsched.errors import DygschedError
from dygsched.paper.common import (
    completed_runs,
    geometric_mean,
    holds,
    published_value,
    speedup_of_reductions,
    table_named,
    times,
    write_table,
)
from dygsched.paper.target import (
    Claim,
    ClaimCheck,
    Headline,
    PaperShape,
    PaperTarget,
    Regime,
    Section,
    Settings,
    Sweep,
    Tables,
)

if TYPE_CHECKING:
    from dygsched.planner import ScheduleProblem

SECTION = Section("dygnex", "DyGNeX", "Snapshot-group schedules across GPUs: epoch time, imbalance, convergence, solve time.")

# our names -> the paper's row and column labels
STRATEGY_LABELS = {"psg": "PSG", "esdg": "ESDG", "blad": "BLAD", "dygnex_g": "DYGNEX-G", "dygnex_l": "DYGNEX-L"}
MODEL_LABELS = {"evolvegcn_o": "EvolveGCN", "wdgcn": "WD-GCN", "tgcn": "TGCN", "gat_lstm": "GAT-LSTM"}
SCHED_ORDER = ["psg", "esdg", "blad", "dygnex_g", "dygnex_l", "real_g_paper", "greedy", "ilp", "real"]


# ---- table 4: epoch time and imbalance -------------------------------------------------------------
EPOCH_TIME_CSV = "table_epoch_time/table_epoch_time.csv"


def build_epoch_time(results: Path) -> None:
    """Epoch time and imbalance per strategy, model and dataset, with each one's speedup over PSG."""
    runs = completed_runs(results / "table_epoch_time")
    columns = [
        "dataset",
        "model",
        "sched",
        "world_size",
        "epoch_time_s",
        "imbalance_ratio",
        "final_train_loss",
        "eval.metric",
        "eval.value",
    ]
    table = runs[columns].copy()
    psg = table[table["sched"] == "psg"].set_index(["dataset", "model", "world_size"])["epoch_time_s"]
    table["speedup_vs_psg"] = [
        psg.get((d, m, w), float("nan")) / t
        for d, m, w, t in zip(table["dataset"], table["model"], table["world_size"], table["epoch_time_s"])
    ]
    present = set(table["sched"])
    table["sched"] = pd.Categorical(table["sched"], [s for s in SCHED_ORDER if s in present] + sorted(present - set(SCHED_ORDER)))
    table = table.sort_values(["dataset", "model", "sched"]).reset_index(drop=True)
    write_table(table, results / EPOCH_TIME_CSV)


def read_epoch_time(tables: Tables) -> str:
    table = table_named(tables).dropna(subset=["epoch_time_s"])
    parts = []
    for (dataset, model), group in table.groupby(["dataset", "model"]):
        best = group.loc[group.epoch_time_s.idxmin()]
        parts.append(f"{model} on {dataset}: {best.sched} fastest ({times(best.speedup_vs_psg)} PSG)")
    low, high = table.imbalance_ratio.min(), table.imbalance_ratio.max()
    text = "; ".join(parts) + f"; busy-time imbalance {low:.3g} to {high:.3g}"
    pairs = table.pivot_table(index=["dataset", "model"], columns="sched", values="epoch_time_s", observed=True)
    if {"greedy", "dygnex_g"} <= set(pairs.columns):
        text += f"; greedy ≤ DyGNeX-G {holds(int((pairs.greedy <= pairs.dygnex_g * 1.02).sum()), len(pairs))} (2% noise)"
    return text


def shape_epoch_time(tables: Tables) -> PaperShape:
    """Table 4's layout: the paper's strategies as rows, its models as columns, seconds per epoch."""
    table = table_named(tables)
    table = table[table.sched.isin(STRATEGY_LABELS) & table.model.isin(MODEL_LABELS)]
    frame = table.pivot_table(index="sched", columns="model", values="epoch_time_s", aggfunc="median", observed=True)
    frame = frame.rename(index=STRATEGY_LABELS, columns=MODEL_LABELS)
    order = [label for label in STRATEGY_LABELS.values() if label in frame.index]
    return PaperShape(frame.loc[order], paper_ref="Table 4", paper_dataset="Arxiv", rank_within="columns", unit="s")


def headlines_epoch_time(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 5.2's ranges of DyGNeX-L's epoch-time reduction against each baseline, as speedups
    (the geometric mean of the range's ends), beside ours over the models we ran."""
    table = table_named(tables)
    wide = table.pivot_table(index=["dataset", "model"], columns="sched", values="epoch_time_s", aggfunc="median", observed=True)
    headlines = []
    for baseline in ("psg", "esdg", "blad", "dygnex_g"):
        label = STRATEGY_LABELS[baseline]
        paper = speedup_of_reductions(published, f"DYGNEX-L vs {label}", "epoch time reduction min", "epoch time reduction max")
        ours = geometric_mean(wide[baseline] / wide["dygnex_l"]) if {baseline, "dygnex_l"} <= set(wide.columns) else None
        headlines.append(Headline(f"{label} over DyGNeX-L, epoch time", paper, ours))
    return tuple(headlines)


EPOCH_TIME = PaperTarget(
    name="table-epoch-time",
    paper="dygnex",
    title="Epoch time and imbalance per strategy and model",
    reproduces="DyGNeX table 4",
    outputs=(EPOCH_TIME_CSV,),
    repeats="median over epochs 2-10 of one run per cell",
    minutes=13,
    build=build_epoch_time,
    reading=read_epoch_time,
    departures="One run per cell: DyGNeX-L is 1.01x (TGCN) and 1.24x (WD-GCN) PSG's speed (the paper: 1.22x) and DyGNeX-G "
    "is as fast or faster (the paper: DyGNeX-L 9% ahead), both plans holding the busy-time imbalance at 1.03-1.09 on 2 "
    "ranks; ESDG is 1.6-1.7x slower than PSG (the paper: 4.7x slower than DyGNeX-L), its hidden states passing between "
    "two processes on one machine, not between GPUs.",
    sweep=Sweep(
        folder="table_epoch_time",
        runs=(("+experiment=epoch_time", "sched=psg,esdg,blad,dygnex_g,dygnex_l,greedy,ilp", "model=tgcn,wdgcn"),),
        smoke=(("+experiment=epoch_time", "sched=psg,dygnex_l", "model=tgcn", "+smoke=snapshots"),),
    ),
    shape=shape_epoch_time,
    headlines=headlines_epoch_time,
    regime=Regime(
        paper="4 A100 GPUs; Arxiv, Products, Reddit (30 snapshots) and Stackoverflow (50), 63k-170k nodes and "
        "1.3M-22M edges per snapshot on average, groups of 4; EvolveGCN, WD-GCN, TGCN and GAT-LSTM with two layers.",
        ours="2 CPU ranks; a Stackoverflow-like synthetic graph of 6,000 nodes, about 32,000 edges per snapshot, 36 "
        "snapshots (23 training groups of 4), the edge count's relative standard deviation 0.3; TGCN and WD-GCN, "
        "two layers, hidden 64, 10 epochs.",
        why="No GPU here; the fluctuation makes PSG's two groups of an iteration differ by up to 16% in edges (figure "
        "1: up to 16-26%), yet by only 1.08x on average against figure 4's PSG imbalance of 1.26.",
    ),
)


# ---- figure 3: convergence per strategy --------------------------------------------------------------
CONVERGENCE_DIR = "fig_convergence"
CONVERGENCE_CSV = f"{CONVERGENCE_DIR}/convergence.csv"
CONVERGENCE_PNG = f"{CONVERGENCE_DIR}/convergence.png"


def convergence_curves(folder: Path) -> pd.DataFrame:
    """Rank 0's per-epoch training loss and test metrics of every completed run in ``folder``, tidy:
    ``dataset, model, sched, epoch, phase, metric, value``."""
    frames = []
    for run in completed_runs(folder).itertuples():
        metrics_path = folder / str(run.run_id) / "metrics.parquet"
        if not metrics_path.is_file():
            continue
        metrics = pd.read_parquet(metrics_path)
        epoch_rows = metrics[(metrics["iteration"] == -1) & (metrics["rank"] == 0)]
        wanted = ((epoch_rows["phase"] == "train") & (epoch_rows["metric"] == "loss")) | (
            (epoch_rows["phase"] == "test") & (epoch_rows["metric"] != "loss")
        )
        rows = epoch_rows[wanted].assign(dataset=run.dataset, model=run.model, sched=run.sched)
        frames.append(rows[["dataset", "model", "sched", "epoch", "phase", "metric", "value"]])
    if not frames:
        raise DygschedError(f"no completed run with its metrics under {folder}: run the target's sweep first")
    return pd.concat(frames, ignore_index=True)


def plot_convergence(curves: pd.DataFrame, out: Path) -> None:
    """One panel per (dataset, model, phase, metric), one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = curves.groupby(["dataset", "model", "phase", "metric"], sort=True)
    figure, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for axis, ((dataset, model, phase, metric), frame) in zip(axes[0], panels):
        for sched, curve in frame.groupby("sched"):
            curve = curve.sort_values("epoch")
            axis.plot(curve["epoch"] + 1, curve["value"], marker="o", markersize=3, label=sched)
        axis.set_title(f"{dataset} / {model}: {phase} {metric}", fontsize=9)
        axis.set_xlabel("epoch")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    print(f"written: {out}")


def build_convergence(results: Path) -> None:
    """The curves of every strategy's run as a tidy CSV and one PNG; prints each run's final values."""
    curves = convergence_curves(results / CONVERGENCE_DIR)
    final = curves.sort_values("epoch").groupby(["dataset", "model", "sched", "phase", "metric"], observed=True)["value"].last()
    write_table(curves, results / CONVERGENCE_CSV, final.unstack(["phase", "metric"]).to_string(float_format="{:.4f}".format))
    plot_convergence(curves, results / CONVERGENCE_PNG)


def read_convergence(tables: Tables) -> str:
    table = table_named(tables, "convergence.csv")
    test = table[table.phase == "test"]
    metric = test.metric.iloc[0]
    final = test[test.metric == metric].sort_values("epoch").groupby("sched").value.last()
    listed = ", ".join(f"{sched} {value:.3f}" for sched, value in final.items())
    return f"final test {metric}: {listed} (spread {final.max() - final.min():.3f} over {len(final)} strategies)"


# Figure 3 prints curves; its text states one bound, quoted below as a claim and checked on our final
# test metric. A bound is not a ratio (the verdict's closeness check would count a spread well under
# 3% as a miss), so this target has no shape and no headline: the claim is its check.
CONVERGENCE_BOUND = 0.03  # "within 3%"
SHARE_METRICS = {"acc", "accuracy", "ap", "auc", "f1"}  # metrics that are shares of 1, compared in percentage points
CLAIM_STRATEGIES = {"dygnex_l": "DyGNeX-L", "dygnex_g": "DyGNeX-G", "psg": "PSG"}


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check_convergence_claim(tables: Tables) -> ClaimCheck:
    """DyGNeX-L's, DyGNeX-G's and PSG's final test metric (the last epoch of each run) and their
    spread: for an accuracy (a share, as the figure's axis shows it) the highest minus the lowest in
    percentage points, for a loss or an error the relative difference (highest over lowest - 1). The
    claim holds when it is within 3 for every (dataset, model) of the sweep."""
    table = table_named(tables, "convergence.csv")
    test = table[(table.phase == "test") & (table.metric != "loss")]
    if test.empty:
        return ClaimCheck("convergence.csv has no test metric: no run evaluated on the test groups", None)
    metric = str(test.metric.iloc[0])
    final = test[test.metric == metric].sort_values("epoch").groupby(["dataset", "model", "sched"], observed=True).value.last()
    parts, verdicts = [], []
    for (dataset, model), values in final.groupby(level=["dataset", "model"], sort=True):
        values = values.droplevel(["dataset", "model"])
        prefix = f"{dataset}/{model}: " if final.index.droplevel("sched").nunique() > 1 else ""
        missing = [label for sched, label in CLAIM_STRATEGIES.items() if sched not in values.index]
        if missing:
            return ClaimCheck(
                f"{prefix}no run of {_either(missing)} in convergence.csv: the claim compares "
                f"{', '.join(CLAIM_STRATEGIES.values())} (run the sweep with sched={','.join(CLAIM_STRATEGIES)})",
                None,
            )
        ours = values[list(CLAIM_STRATEGIES)]
        low, high = float(ours.min()), float(ours.max())
        listed = ", ".join(f"{CLAIM_STRATEGIES[sched]} {value:.4f}" for sched, value in ours.items())
        if metric in SHARE_METRICS:  # an accuracy is a share: "within 3%" reads as 3 percentage points, as the figure's axis
            spread, unit = 100 * (high - low), "percentage points (highest minus lowest)"
        elif low > 0:  # an error or a loss: the relative difference
            spread, unit = 100 * (high / low - 1), "% (highest over lowest)"
        else:
            return ClaimCheck(f"{prefix}final test {metric} {low:.4g} is not positive: no relative spread", None)
        verdicts.append(spread <= 100 * CONVERGENCE_BOUND)
        parts.append(
            f"{prefix}final test {metric} {listed}: spread {spread:.1f} {unit}, {'within' if verdicts[-1] else 'beyond'} 3"
        )
    return ClaimCheck("; ".join(parts), all(verdicts))


CONVERGENCE = PaperTarget(
    name="fig-convergence",
    paper=SECTION.key,
    title="Loss and accuracy per epoch per strategy",
    reproduces="DyGNeX figure 3",
    outputs=(CONVERGENCE_CSV, CONVERGENCE_PNG),
    repeats="one run per strategy, every epoch",
    minutes=2,
    build=build_convergence,
    reading=read_convergence,
    sweep=Sweep(
        folder=CONVERGENCE_DIR,
        runs=(("+experiment=convergence", "sched=psg,dygnex_g,dygnex_l,greedy,ilp"),),
        smoke=(("+experiment=convergence", "sched=greedy", "+smoke=snapshots"),),
    ),
    claims=(
        Claim(
            quote="As shown in Figure 3, the test accuracy differences among DYGNEX-L, DYGNEX-G, and PSG are within 3%, "
            "demonstrating that DYGNEX-L and DYGNEX-G have minimal impact on model accuracy.",
            source="section 5.2 (test accuracy), on figure 3",
            check=check_convergence_claim,
        ),
    ),
    regime=Regime(
        paper="Test accuracy over 100 epochs of DyGNeX-L, DyGNeX-G and PSG on Arxiv, Products and Reddit "
        "(63k-170k nodes per snapshot, 30 snapshots), the four models, 4 A100 GPUs.",
        ours="Node classification (4 classes) on a synthetic graph of 1,500 nodes and 30 snapshots, TGCN (2 layers, "
        "hidden 32), 2 CPU ranks, 30 epochs; PSG, DyGNeX-G, DyGNeX-L, greedy and ilp, one run each.",
        why="No GPU and no labelled graph of the paper's size here: a small labelled graph keeps the five runs of 30 "
        "epochs to about 2 minutes on 2 cores.",
    ),
)


# ---- tables 5 and 6: solve time --------------------------------------------------------------------
SOLVE_TIME_GREEDY_CSV = "solve_time_greedy.csv"
SOLVE_TIME_ILP_CSV = "solve_time_ilp.csv"
SOLVE_WINDOW = 4  # snapshots per group of the simulated problems
DYGNEX_G_FULL_MAX = 1000  # above this DyGNeX-G runs with a few candidate targets per iteration (its label gets a *)


def _solve_time_problem(snapshots: int, gpus: int) -> ScheduleProblem:
    """The simulated schedule problem of ``snapshots`` groups on ``gpus`` GPUs, without reuse."""
    from dygsched.planner.cost_model import CostModel
    from dygsched.planner.simulate import generate_snapshots, simulation_problem

    stats = generate_snapshots(snapshots + SOLVE_WINDOW - 1, seed=snapshots)
    return simulation_problem(stats, SOLVE_WINDOW, CostModel(), gpus, reuse=False)


def _gap_label(gap: float) -> str:
    """Table 6's row label of an optimality gap: 0.05 -> "5%"."""
    return f"{round(100 * float(gap), 6):g}%"


def build_solve_time(
    results: Path, quick: bool = False, gpus: int = 8, time_limit: float | None = None, max_snapshots: int | None = None
) -> None:
    """Table 5's shape (DyGNeX-G and our greedy, solve time for 10 to 10,000 snapshots) and table 6's
    (DyGNeX-L, the reuse-agnostic ILP on CP-SAT, time to reach each optimality gap for 10 to 300
    snapshots; not converged within the time limit where it did not). ``quick``: fewer sizes and gaps,
    a 5 s limit unless ``time_limit`` says otherwise (the paper's is 30 s), and 8 candidate targets
    for DyGNeX-G above 300 snapshots."""
    from dygsched.planner import SolverStatus, solve

    limit = time_limit if time_limit is not None else (5.0 if quick else 30.0)
    sizes_5 = (
        [10, 50, 100, 300, 1000, 10000]
        if quick
        else [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 300, 500, 1000, 3000, 7000, 10000]
    )
    sizes_6 = [10, 50, 100, 300] if quick else [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 300]
    gaps = [0.01, 0.02, 0.05, 0.10] if quick else [0.01, 0.02, 0.03, 0.05, 0.06, 0.08, 0.10]
    if max_snapshots is not None:
        sizes_5 = [s for s in sizes_5 if s <= max_snapshots]
        sizes_6 = [s for s in sizes_6 if s <= max_snapshots]
    full_max, targets = (300, 8) if quick else (DYGNEX_G_FULL_MAX, 64)
    rows_5 = []
    for snapshots in sizes_5:
        problem = _solve_time_problem(snapshots, gpus)
        full = snapshots <= full_max
        for label, solver, options in (
            ("dygnex_g" if full else "dygnex_g*", "dygnex_g", {} if full else {"max_targets": targets}),
            ("greedy", "greedy", {}),
        ):
            plan = solve(problem, solver, **options)
            rows_5.append(
                {
                    "table": 5,
                    "solver": label,
                    "snapshots": snapshots,
                    "gpus": gpus,
                    "solve_time_s": plan.solve_time_s,
                    "gap": plan.gap,
                }
            )
    greedy = pd.DataFrame(rows_5)
    laid_out = greedy.assign(solver=greedy.solver.str.rstrip("*")).pivot_table(
        index="solver", columns="snapshots", values="solve_time_s", sort=False
    )
    write_table(
        greedy,
        results / SOLVE_TIME_GREEDY_CSV,
        f"Table 5 shape: solve time (s), G = {gpus} (dygnex_g*: {targets} candidate targets per iteration)",
        laid_out.to_string(float_format="{:.4f}".format),
    )
    rows_6 = []
    for gap in gaps:
        for snapshots in sizes_6:
            plan = solve(_solve_time_problem(snapshots, gpus), "dygnex_l", time_limit=limit, gap=gap)
            rows_6.append(
                {
                    "table": 6,
                    "solver": "dygnex_l",
                    "snapshots": snapshots,
                    "gpus": gpus,
                    "gap_target": gap,
                    "converged": plan.solver_status is SolverStatus.OPTIMAL,
                    "solve_time_s": plan.solve_time_s,
                    "gap_to_bound": plan.gap,
                }
            )
    ilp = pd.DataFrame(rows_6)
    write_table(
        ilp,
        results / SOLVE_TIME_ILP_CSV,
        f"Table 6 shape: DyGNeX-L time (s) to reach the gap, limit {limit:g} s (>limit: not converged)",
        _ilp_layout(ilp).to_string(float_format="{:.2f}".format, na_rep=f">{limit:g}"),
    )


def _ilp_layout(ilp: pd.DataFrame) -> pd.DataFrame:
    """Table 6's layout: gap rows ("1%"), snapshot columns ("10"), the converged solves' seconds."""
    converged = ilp[ilp.converged.astype(bool)]
    frame = converged.pivot_table(index="gap_target", columns="snapshots", values="solve_time_s", aggfunc="median")
    frame = frame.reindex(index=sorted(ilp.gap_target.unique()), columns=sorted(ilp.snapshots.unique()))
    frame.index = [_gap_label(gap) for gap in frame.index]
    frame.columns = [str(int(snapshots)) for snapshots in frame.columns]
    return frame


def read_solve_time(tables: Tables) -> str:
    greedy = table_named(tables, SOLVE_TIME_GREEDY_CSV)
    gaps = greedy.assign(solver=greedy.solver.str.rstrip("*")).pivot_table(index="snapshots", columns="solver", values="gap")
    ours = greedy[greedy.solver == "greedy"]
    slowest = ours.loc[ours.solve_time_s.idxmax()]
    ilp = table_named(tables, SOLVE_TIME_ILP_CSV)
    return (
        f"greedy's gap ≤ DyGNeX-G's {holds(int((gaps.greedy <= gaps.dygnex_g + 1e-9).sum()), len(gaps))}; "
        f"greedy's slowest solve {slowest.solve_time_s:.2f} s at {int(slowest.snapshots)} snapshots; "
        f"DyGNeX-L met its gap in {int(ilp.converged.sum())} of {len(ilp)} cells (slowest {ilp.solve_time_s.max():.1f} s)"
    )


def shape_solve_time(tables: Tables) -> PaperShape:
    """Table 6's layout (gap rows, snapshot-count columns, seconds; a solve that did not converge is
    left out, as the paper leaves out its ">limit" cells), each row ranking its sizes: the ILP's time
    grows with the snapshots. Table 5's one row is read by a headline instead."""
    return PaperShape(_ilp_layout(table_named(tables, SOLVE_TIME_ILP_CSV)), paper_ref="Table 6", rank_within="rows", unit="s")


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def headlines_solve_time(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """How the solve time grows, as the paper's tables give it: DyGNeX-G from 100 to 300 snapshots
    (table 5); DyGNeX-L at a 5% gap from 10 to 100 snapshots, and at 100 snapshots from a 10% gap to a
    2% one (table 6). Ours from the same cells; None where a cell was not measured or did not converge."""
    greedy = table_named(tables, SOLVE_TIME_GREEDY_CSV)
    dygnex_g = greedy[greedy.solver == "dygnex_g"].set_index("snapshots").solve_time_s  # the full DyGNeX-G only (no *)
    ilp = _ilp_layout(table_named(tables, SOLVE_TIME_ILP_CSV))

    def ours_g(snapshots: int) -> float | None:
        return float(dygnex_g[snapshots]) if snapshots in dygnex_g.index else None

    def ours_l(gap: str, snapshots: str) -> float | None:
        value = ilp.at[gap, snapshots] if gap in ilp.index and snapshots in ilp.columns else None
        return None if value is None or value != value else float(value)

    table_5, table_6 = published[published.ref == "Table 5"], published[published.ref == "Table 6"]
    return (
        Headline(
            "DyGNeX-G solve time, 300 over 100 snapshots",
            published_value(table_5, "DYGNEX-G", "300") / published_value(table_5, "DYGNEX-G", "100"),
            _ratio(ours_g(300), ours_g(100)),
        ),
        Headline(
            "DyGNeX-L time to a 5% gap, 100 over 10 snapshots",
            published_value(table_6, "5%", "100") / published_value(table_6, "5%", "10"),
            _ratio(ours_l("5%", "100"), ours_l("5%", "10")),
        ),
        Headline(
            "DyGNeX-L time at 100 snapshots, a 2% gap over a 10% gap",
            published_value(table_6, "2%", "100") / published_value(table_6, "10%", "100"),
            _ratio(ours_l("2%", "100"), ours_l("10%", "100")),
        ),
    )


SOLVE_TIME = PaperTarget(
    name="table-solve-time",
    paper=SECTION.key,
    title="Solve time by number of snapshots; ILP time by optimality gap",
    reproduces="DyGNeX tables 5 and 6",
    outputs=(SOLVE_TIME_GREEDY_CSV, SOLVE_TIME_ILP_CSV),
    repeats="one solve per cell",
    minutes=1.5,
    build=build_solve_time,
    reading=read_solve_time,
    departures="CP-SAT reaches a 2% gap at 100 snapshots as fast as a 10% gap (0.92x; Gurobi in the paper: 11.7x) and met "
    "its gap in 15 of 16 cells within the 30 s limit; DyGNeX-G's solve time grows 17.8x from 100 to 300 snapshots (the "
    "paper: 4.5x), as it weighs every candidate target in every iteration up to 300 groups.",
    settings=Settings(full={"quick": True, "time_limit": 30.0}, smoke={"max_snapshots": 50, "time_limit": 5.0}),
    shape=shape_solve_time,
    headlines=headlines_solve_time,
    regime=Regime(
        paper="Table 5: DyGNeX-G on 10 to 10,000 snapshots; table 6: DyGNeX-L (Gurobi) on 10 to 300 snapshots at gaps "
        "of 1-10% with a 30 s limit (its text names no GPU count for these solves).",
        ours="DyGNeX-G and greedy on 10, 50, 100, 300, 1,000 and 10,000 simulated groups of 4 snapshots (DyGNeX-G with "
        "8 candidate targets above 300), DyGNeX-L on CP-SAT at 10, 50, 100 and 300 and gaps of 1, 2, 5 and 10% with "
        "the paper's 30 s limit; 8 simulated GPUs.",
        why="Four of the paper's 12 sizes and 7 gaps keep the target within minutes on 2 cores, where every cell may take "
        "the limit; CP-SAT stands in for Gurobi.",
    ),
)

TARGETS: tuple[PaperTarget, ...] = (EPOCH_TIME, CONVERGENCE, SOLVE_TIME)
