"""FlareDTDG: node-partitioned training on hybrid batches with temporal decay.

Seven targets over five sweeps of ``+experiment=flare`` (a 100,000-node evolving graph, windows of
8 snapshots, 2 CPU ranks): the variants sweep (Full-History, Recent-Only, FlareDTDG and the authors'
schedule, per model) serves tables 5-7 and 12; convergence, time, heatmap and scaling have one each.

Every figure is the median over the epochs after the first of the per-epoch value: the largest over
ranks for memory, the mean over ranks for phase times. Memory is each measure under its own name,
reset every epoch: ``gpu_peak_allocated`` (the allocator's peak, what the paper's tables 5, 7 and 10
report; GPU runs only, missing on a CPU), ``peak_rss`` (the process's peak resident set),
``saved_for_backward`` (what autograd keeps for the backward in the largest window) and
``train_memory`` (that plus parameters and inherited states). Where a comparison with the paper
needs a memory figure and the runs had no GPU, it takes ``train_memory`` and says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from dygsched.errors import DygschedError
from dygsched.paper.common import geometric_mean, published_value, span, speedup_of_reductions, table_named, times, write_table
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Section, Settings, Sweep, Tables

SECTION = Section("flaredtdg", "FlareDTDG", "Node-partitioned training on hybrid batches with temporal decay, shrinking and overlap.")

SMOKE = "+smoke=flare"  # conf/smoke/flare.yaml: 2,000 nodes, 14 snapshots, 4 chunks per rank, 2 epochs

# our sched names -> the names our tables print
VARIANTS = {
    "flare_full_history": "Full-History",
    "flare_recent_only": "Recent-Only",
    "flare": "FlareDTDG",
    "flare_artifact": "FlareDTDG (artifact schedule)",
    "flare_no_shrink": "w/o shrinking",
    "flare_overlap_rr": "overlap rr",
    "flare_overlap_mlp": "overlap mlp",
}
# our model names -> the paper's row labels
MODEL_LABELS = {"tgcn": "T-GCN", "mpnn_lstm": "MPNN-LSTM", "evolvegcn_o": "EvolveGCN"}
PAPER_DATASET = "soc-flickr"  # the first dataset of the paper's tables 6-12
MB = 2**20
# Older runs wrote one `peak_mem_bytes`: the allocator's peak on a GPU, the peak resident set on a CPU.
LEGACY_MEMORY = {"cuda": "gpu_peak_allocated_bytes", "cpu": "peak_rss_bytes"}
MEMORY_MEASURES = ("gpu_peak_allocated_mb", "peak_rss_mb", "saved_for_backward_mb", "train_memory_mb")


# ---- the runs -------------------------------------------------------------------------------------------
VARIANTS_SWEEP = Sweep(  # tables 5/7, 6 and 12 read the same runs
    folder="flare/variants",
    runs=(("+experiment=flare", "+flare_variant=full_history,recent_only,flare,artifact", "model=tgcn,mpnn_lstm,evolvegcn_o"),),
    smoke=(("+experiment=flare", "+flare_variant=full_history,flare", "model=tgcn", SMOKE),),
)
CONVERGENCE_SWEEP = Sweep(
    folder="flare/convergence",
    runs=(("+experiment=flare", "+flare_variant=full_history,recent_only,flare", "model=tgcn,mpnn_lstm,evolvegcn_o", "epochs=10"),),
    smoke=(("+experiment=flare", "+flare_variant=full_history,recent_only,flare", "model=tgcn", "epochs=3", SMOKE),),
)
TIME_SWEEP = Sweep(
    folder="flare/time",
    runs=(("+experiment=flare", "+flare_variant=flare,no_shrink,overlap_rr,overlap_mlp", "model=tgcn,mpnn_lstm"),),
    smoke=(("+experiment=flare", "+flare_variant=flare", "model=tgcn", SMOKE),),
)
HEATMAP_SWEEP = Sweep(
    folder="flare/heatmap",
    runs=(("+experiment=flare_small", "sched.full=1,2,4,6,8", "sched.alpha=0.0,0.1,0.3,0.6,1.0"),),
    smoke=(("+experiment=flare_small", "sched.full=2", "sched.alpha=0.3", SMOKE),),
)
SCALING_SWEEP = Sweep(
    folder="flare/scaling",
    runs=(("+experiment=flare", "+flare_variant=flare", "model=tgcn", "world_size=1,2"),),
    smoke=(("+experiment=flare", "+flare_variant=flare", "model=tgcn", "world_size=1,2", SMOKE),),
)

ACCURACY_CSV = f"{VARIANTS_SWEEP.folder}/flare_accuracy.csv"
MEMORY_CSV = f"{VARIANTS_SWEEP.folder}/flare_memory.csv"
BREAKDOWN_CSV = f"{VARIANTS_SWEEP.folder}/flare_breakdown.csv"
CONVERGENCE_CSV = f"{CONVERGENCE_SWEEP.folder}/flare_convergence.csv"
TIME_CSV = f"{TIME_SWEEP.folder}/flare_time.csv"
HEATMAP_CSV = f"{HEATMAP_SWEEP.folder}/flare_heatmap.csv"
HEATMAP_PNG = f"{HEATMAP_SWEEP.folder}/flare_heatmap.png"
SCALING_CSV = f"{SCALING_SWEEP.folder}/flare_scaling.csv"

CONVERGENCE_TOLERANCE = 0.05  # table 8's target: Full-History's best validation MSE, 5% (relative) above it


# ---- reading a sweep's run folders ----------------------------------------------------------------------
def device_of(folder: Path) -> str:
    """``cpu`` or ``cuda`` where every rank ran on that kind of device (ranks.json), else ``unknown``."""
    try:
        kinds = {rank["device"].split(":")[0] for rank in json.loads((folder / "ranks.json").read_text())}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "unknown"
    return kinds.pop() if len(kinds) == 1 else "unknown"


def completed_run_folders(folder: Path) -> list[tuple[dict, pd.DataFrame]]:
    """Each completed run under ``folder``: its summary (with the device it ran on) and its metric rows."""
    found = []
    for summary_path in sorted(Path(folder).glob("*/summary.json")):
        summary = json.loads(summary_path.read_text())
        if summary.get("status") != "ok":
            continue
        summary["device"] = device_of(summary_path.parent)
        metrics = pd.read_parquet(summary_path.parent / "metrics.parquet")
        if summary["device"] in LEGACY_MEMORY:  # an older run's one memory figure, named for what it measured there
            metrics["metric"] = metrics["metric"].replace("peak_mem_bytes", LEGACY_MEMORY[summary["device"]])
        found.append((summary, metrics))
    if not found:
        raise DygschedError(f"no completed runs under {folder}: run the target's sweep first")
    return found


def epoch_value(metrics: pd.DataFrame, metric: str, over_ranks: str = "max") -> float:
    """The median over steady epochs (after the first, when there are more) of the per-epoch value."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric)]
    if rows.empty:
        return float("nan")
    steady = rows[rows.epoch >= 1] if rows.epoch.nunique() > 1 else rows
    return float(steady.groupby("epoch")["value"].agg(over_ranks).median())


def _test_mse(summary: dict) -> float | None:
    return (summary.get("eval") or {}).get("value")


def variant_table(folder: Path) -> pd.DataFrame:
    """One row per completed run: its model, variant, ranks, test MSE, epoch time, memory and halo."""
    rows = []
    for summary, metrics in completed_run_folders(folder):
        rows.append({
            "model": summary["model"],
            "variant": VARIANTS.get(summary["sched"], summary["sched"]),
            "world_size": summary["world_size"],
            "test_mse": _test_mse(summary),
            "epoch_time_s": summary.get("epoch_time_s"),
            "device": summary["device"],
            "gpu_peak_allocated_mb": epoch_value(metrics, "gpu_peak_allocated_bytes") / MB,
            "peak_rss_mb": epoch_value(metrics, "peak_rss_bytes") / MB,
            "saved_for_backward_mb": epoch_value(metrics, "saved_for_backward_bytes") / MB,
            "train_memory_mb": epoch_value(metrics, "train_memory_bytes") / MB,
            "halo_s": epoch_value(metrics, "halo_s", "mean"),
            "halo_mb": epoch_value(metrics, "bytes_halo", "sum") / MB,
        })  # fmt: skip
    return pd.DataFrame(rows)


def relative(table: pd.DataFrame, column: str, baseline: str) -> pd.Series:
    """``column`` over the same model's ``baseline`` variant's (missing where that model has none)."""
    base = table[table.variant == baseline].set_index("model")[column]
    return table[column] / table["model"].map(base)


# ---- comparing with the paper's tables --------------------------------------------------------------------
def memory_measure(table: pd.DataFrame) -> tuple[str, str]:
    """The paper's memory measure (the GPU allocator's peak) where the runs measured it, else the
    training memory; with the words that say which."""
    if "gpu_peak_allocated_mb" in table.columns and table["gpu_peak_allocated_mb"].notna().any():
        return "gpu_peak_allocated_mb", "MB, GPU allocator peak"
    return "train_memory_mb", "MB, training memory (no GPU in these runs: not the paper's allocator peak)"


def paper_layout(table: pd.DataFrame, value: str, columns: Mapping[str, str]) -> pd.DataFrame:
    """Our long table (model, variant, ``value``) as the paper's: its model labels as rows, in its
    order, and the variants ``columns`` maps to its column labels."""
    kept = table[table.model.isin(MODEL_LABELS) & table.variant.isin(columns)]
    frame = kept.pivot_table(index="model", columns="variant", values=value, aggfunc="median", dropna=False)
    frame = frame.reindex(index=[m for m in MODEL_LABELS if m in frame.index], columns=[v for v in columns if v in frame.columns])
    frame = frame.rename(index=MODEL_LABELS, columns=dict(columns))
    frame.index.name, frame.columns.name = "", None
    return frame


def ratio_over_models(table: pd.DataFrame, value: str, numerator: str, denominator: str) -> float | None:
    """The geometric mean over models of ``numerator``'s ``value`` over ``denominator``'s."""
    wide = table.pivot_table(index="model", columns="variant", values=value, aggfunc="median")
    if not {numerator, denominator} <= set(wide.columns):
        return None
    return geometric_mean(wide[numerator] / wide[denominator])


def paper_ratio(published: pd.DataFrame, ref: str, numerator: str, denominator: str) -> float | None:
    """The geometric mean, over every (dataset, model) row of the paper's table ``ref``, of its
    ``numerator`` column over its ``denominator`` column."""
    rows = published[published.ref == ref]
    wide = rows.pivot_table(index=["dataset", "row"], columns="column", values="value", aggfunc="first")
    if not {numerator, denominator} <= set(wide.columns):
        return None
    return geometric_mean(wide[numerator] / wide[denominator])


def _headline(label: str, paper: float | None, ours: float | None, ratio: bool = True) -> Headline:
    if paper is None:
        raise KeyError(f"no published number for {label!r}")
    return Headline(label, paper, ours, ratio)


# ---- table 6: test MSE per variant ------------------------------------------------------------------------
ACCURACY_COLUMNS = {"Full-History": "Full-History", "Recent-Only": "Recent-Only", "FlareDTDG": "Ours"}


def build_accuracy(results: Path) -> None:
    """Test MSE per model (rows) and variant (columns)."""
    table = variant_table(results / VARIANTS_SWEEP.folder).pivot_table(index="model", columns="variant", values="test_mse")
    table.columns.name = None
    write_table(table.reset_index(), results / ACCURACY_CSV)


def read_accuracy(tables: Tables) -> str:
    table = table_named(tables).set_index("model")
    parts = []
    for model, row in table.iterrows():
        text = f"{model}: " + ", ".join(f"{variant} {mse:.4f}" for variant, mse in row.dropna().items())
        if {"FlareDTDG", "Full-History"} <= set(row.dropna().index):
            text += f" (FlareDTDG {row['FlareDTDG'] / row['Full-History'] - 1:+.1%} against Full-History)"
        parts.append(text)
    return "test MSE, " + "; ".join(parts)


def _accuracy_long(tables: Tables) -> pd.DataFrame:
    wide = table_named(tables)
    return wide.melt(id_vars="model", var_name="variant", value_name="test_mse")


def shape_accuracy(tables: Tables) -> PaperShape:
    """Table 6's layout: models as rows, Full-History / Recent-Only / Ours as columns, test MSE;
    each model ranks its variants."""
    frame = paper_layout(_accuracy_long(tables), "test_mse", ACCURACY_COLUMNS)
    return PaperShape(frame, paper_ref="Table 6", paper_dataset=PAPER_DATASET, rank_within="rows", unit="MSE")


def headlines_accuracy(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """FlareDTDG's test MSE over Recent-Only's (the paper's "Improv.") and over Full-History's, the
    paper's over every model and dataset of table 6, ours over our models."""
    long = _accuracy_long(tables)
    return tuple(
        _headline(f"FlareDTDG's test MSE over {baseline}'s", paper_ratio(published, "Table 6", "Ours", baseline), ratio_over_models(long, "test_mse", "FlareDTDG", baseline))
        for baseline in ("Recent-Only", "Full-History")
    )


# ---- tables 5 and 7: memory per rank ----------------------------------------------------------------------
def build_memory(results: Path) -> None:
    """Each measure under its own name, and each against Full-History's same measure (never one
    measure against another): a CPU run has no GPU figure, so its GPU columns are missing."""
    table = variant_table(results / VARIANTS_SWEEP.folder)[["model", "variant", "device", *MEMORY_MEASURES]].copy()
    for column in MEMORY_MEASURES:
        table[column.removesuffix("_mb") + "_vs_full_history"] = relative(table, column, "Full-History")
    note = "the paper's measure is gpu_peak_allocated_mb; on a CPU it is missing and peak_rss_mb, saved_for_backward_mb, train_memory_mb are other measures"
    write_table(table.sort_values(["model", "variant"]), results / MEMORY_CSV, note)


def _by_variant(table: pd.DataFrame, value: str, form: Callable[[float], str]) -> str:
    return "; ".join(
        f"{model}: " + ", ".join(f"{row.variant} {form(getattr(row, value))}" for row in group.itertuples())
        for model, group in table.groupby("model", sort=False)
    )


def read_memory(tables: Tables) -> str:
    """Each measure against Full-History's same measure; the paper's tables 5/7 are the GPU allocator's peak."""
    table = table_named(tables)
    if table["gpu_peak_allocated_mb"].notna().any():
        text = "GPU allocator peak per rank (the paper's measure) against Full-History's, " + _by_variant(table, "gpu_peak_allocated_vs_full_history", times)
    else:
        text = "no GPU in these runs, so no figure of the paper's measure (the GPU allocator's peak)"
    return (
        text + "; bytes saved for the backward plus parameters and states against Full-History's, "
        + _by_variant(table, "train_memory_vs_full_history", times)
        + f"; the process's peak resident set {span(table.peak_rss_mb, lambda v: f'{v:.0f}')} MB"
    )


def shape_memory(tables: Tables) -> PaperShape:
    """Table 7's layout: models as rows, Full-History / Ours as columns, MB per rank (the GPU
    allocator's peak; the training memory where the runs had no GPU, as the unit says). Table 5
    compares systems we do not run (ESDG, DynaGraph, DynaHB)."""
    table = table_named(tables)
    measure, unit = memory_measure(table)
    frame = paper_layout(table, measure, {"Full-History": "Full-History", "FlareDTDG": "Ours"})
    return PaperShape(frame, paper_ref="Table 7", paper_dataset=PAPER_DATASET, rank_within="rows", unit=unit)


def headlines_memory(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 4.3's stated range of memory reduction against Full-History, as Full-History's memory over
    FlareDTDG's, beside ours (the measure ``memory_measure`` picks)."""
    table = table_named(tables)
    measure, _ = memory_measure(table)
    paper = speedup_of_reductions(published, "Ours vs Full-History", "GPU memory reduction min", "GPU memory reduction max")
    return (Headline("Full-History's memory per rank over FlareDTDG's", paper, ratio_over_models(table, measure, "Full-History", "FlareDTDG")),)


# ---- table 8: time to a common validation MSE -------------------------------------------------------------
def build_convergence(results: Path, tolerance: float) -> None:
    """Per model, the target is Full-History's best validation MSE ``tolerance`` (relative) above it;
    each variant's training time and epochs until it first reaches it, its epoch time beside. A
    variant that never reaches it shows no time and says so."""
    from dygsched.metrics.convergence import epoch_curve, target_mse, time_to_target

    rows = []
    for summary, metrics in completed_run_folders(results / CONVERGENCE_SWEEP.folder):
        curve = epoch_curve(metrics)
        rows.append({
            "model": summary["model"], "variant": VARIANTS.get(summary["sched"], summary["sched"]), "curve": curve,
            "best_val_mse": float(curve.val_mse.min()), "epoch_time_s": summary.get("epoch_time_s"),
        })  # fmt: skip
    table = pd.DataFrame(rows)
    full = table[table.variant == "Full-History"].groupby("model")["best_val_mse"].min()
    table["tolerance"] = tolerance
    table["target_val_mse"] = [target_mse(full.get(model, float("nan")), tolerance) for model in table.model]
    reached = [time_to_target(curve, target) for curve, target in zip(table.curve, table.target_val_mse, strict=True)]
    table["time_to_target_s"] = [r.seconds for r in reached]
    table["epochs_to_target"] = [r.epochs for r in reached]
    table["reached"] = [r.note if not pd.isna(t) else "no Full-History run sets the target" for r, t in zip(reached, table.target_val_mse, strict=True)]
    table["vs_full_history"] = relative(table, "time_to_target_s", "Full-History")
    columns = ["model", "variant", "tolerance", "target_val_mse", "time_to_target_s", "epochs_to_target", "epoch_time_s", "vs_full_history", "best_val_mse", "reached"]
    note = f"the target: the validation MSE first at or below Full-History's best + {100 * tolerance:g}% (the paper does not state its criterion)"
    write_table(table[columns].sort_values(["model", "variant"]), results / CONVERGENCE_CSV, note)


def read_convergence(tables: Tables) -> str:
    table = table_named(tables)
    parts = []
    for model, group in table.groupby("model", sort=False):
        cells = []
        for row in group.itertuples():
            if pd.isna(row.time_to_target_s):
                cells.append(f"{row.variant} {row.reached}")
            else:
                ratio = f", {times(row.vs_full_history)} Full-History's" if pd.notna(row.vs_full_history) and row.variant != "Full-History" else ""
                cells.append(f"{row.variant} {row.time_to_target_s:.1f} s in {int(row.epochs_to_target)} epochs{ratio}")
        target = group.target_val_mse.iloc[0]
        parts.append(f"{model} ({f'target val MSE {target:.4f}' if pd.notna(target) else 'no target'}): " + ", ".join(cells))
    return "time to the common target, " + "; ".join(parts)


def shape_convergence(tables: Tables) -> PaperShape:
    """Table 8's layout: models as rows, Full-History / Ours as columns, seconds to converge (ours:
    to the common target; a variant that never reached it is missing)."""
    frame = paper_layout(table_named(tables), "time_to_target_s", {"Full-History": "Full-History", "FlareDTDG": "Ours"})
    return PaperShape(frame, paper_ref="Table 8", paper_dataset=PAPER_DATASET, rank_within="rows", unit="s")


def headlines_convergence(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 4.3's 63%-72% shorter convergence than Full-History, as Full-History's time over
    FlareDTDG's; and its 5.3%-25.3% from shrinking, which this sweep does not run (table-flare-time
    measures shrinking per epoch)."""
    table = table_named(tables)
    full = speedup_of_reductions(published, "Ours vs Full-History", "convergence time reduction min", "convergence time reduction max")
    shrinking = speedup_of_reductions(published, "w/ vs w/o Shrinking", "convergence time reduction min", "convergence time reduction max")
    return (
        Headline("Full-History's time to converge over FlareDTDG's", full, ratio_over_models(table, "time_to_target_s", "Full-History", "FlareDTDG")),
        Headline("time to converge without shrinking over with it", shrinking, None),
    )


# ---- tables 9-11: shrinking and overlap -------------------------------------------------------------------
TIME_COLUMNS = ["model", "variant", "epoch_time_s", "halo_s", "halo_mb", "gpu_peak_allocated_mb", "train_memory_mb", "test_mse"]


def build_time(results: Path) -> None:
    """Epoch time, communication time not overlapped (``halo_s``) and memory per variant, against
    FlareDTDG's (shrinking on, no overlap)."""
    table = variant_table(results / TIME_SWEEP.folder)[TIME_COLUMNS].copy()
    if (table.variant == "Full-History").any():
        table["vs_full_history"] = relative(table, "epoch_time_s", "Full-History")
    table["vs_flare"] = relative(table, "epoch_time_s", "FlareDTDG")
    table["halo_s_vs_flare"] = relative(table, "halo_s", "FlareDTDG")
    write_table(table.sort_values(["model", "variant"]), results / TIME_CSV, "the paper's tables 9-10 are convergence time and memory, 11 communication time; here epoch time beside them")


def read_time(tables: Tables) -> str:
    return "epoch time against FlareDTDG's, " + _by_variant(table_named(tables), "vs_flare", times)


def shape_time(tables: Tables) -> PaperShape:
    """Table 11's layout: models as rows, w/o Async (FlareDTDG, exchanges wait) / w/ Async (Ours:
    exchanges posted ahead, ordered by the task-time MLP) as columns, seconds per epoch of
    communication not overlapped (``halo_s`` counts the posting and the waiting, not the overlap)."""
    frame = paper_layout(table_named(tables), "halo_s", {"FlareDTDG": "w/o Async", "overlap mlp": "w/ Async (Ours)"})
    return PaperShape(frame, paper_ref="Table 11", paper_dataset=PAPER_DATASET, rank_within="rows", unit="s/epoch")


def headlines_time(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 4.3's ratios, each as the baseline's over FlareDTDG's: communication not overlapped
    without async over with it; time without shrinking over with it (table 9's
    convergence times; ours per epoch, the same ratio since shrinking only renumbers nodes and leaves
    the arithmetic, so the epochs to converge, as they were); memory without shrinking over with it
    (the measure ``memory_measure`` picks); the paper's ranges are read from its published rows."""
    table = table_named(tables)
    measure, _ = memory_measure(table)
    overlap = speedup_of_reductions(published, "w/ vs w/o Async", "communication time reduction min", "communication time reduction max")
    shrink_memory = speedup_of_reductions(published, "w/ vs w/o Shrinking", "peak GPU memory reduction min", "peak GPU memory reduction max")
    return (
        Headline("communication not overlapped, without async over with it", overlap, ratio_over_models(table, "halo_s", "FlareDTDG", "overlap mlp")),
        _headline(
            "time without shrinking over with it (paper: to converge; ours: per epoch)",
            paper_ratio(published, "Table 9", "w/o Shrinking", "w/ Shrinking (Ours)"),
            ratio_over_models(table, "epoch_time_s", "w/o shrinking", "FlareDTDG"),
        ),
        Headline("memory per rank without shrinking over with it", shrink_memory, ratio_over_models(table, measure, "w/o shrinking", "FlareDTDG")),
    )


# ---- table 12: where an epoch's time goes -----------------------------------------------------------------
PHASES = ("shuffle_s", "remap_s", "load_s", "forward_s", "backward_s", "halo_s")
BREAKDOWN_LABELS = {"chunking_%": "Chunking", "shuffle_%": "Shuffle", "remap_%": "Remap", "forward_%": "Fwd.", "backward_%": "Bwd.", "halo_%": "Comm.", "load_%": "Load"}


def build_breakdown(results: Path) -> None:
    """FlareDTDG's epoch, per model, as shares of its time: the phases (mean over ranks) and the one
    partitioning (chunking) spread over the run's epochs."""
    rows = []
    for summary, metrics in completed_run_folders(results / VARIANTS_SWEEP.folder):
        if summary["sched"] != "flare":
            continue
        seconds = {phase: epoch_value(metrics, phase, "mean") for phase in PHASES}
        chunking = metrics[metrics.metric == "partition_s"]["value"]
        seconds["chunking_s"] = float(chunking.iloc[0]) / max(summary["epochs_completed"], 1) if not chunking.empty else float("nan")
        total = summary["epoch_time_s"]
        rows.append({"model": summary["model"], "epoch_time_s": total, **{k.removesuffix("_s") + "_%": 100 * v / total for k, v in seconds.items()}})
    write_table(pd.DataFrame(rows), results / BREAKDOWN_CSV, "chunking here: the one partition spread over the run's epochs")


def read_breakdown(tables: Tables) -> str:
    table = table_named(tables)
    phases = [column for column in table.columns if column.endswith("_%")]
    parts = []
    for _, row in table.iterrows():
        top = row[phases].astype(float).sort_values(ascending=False).head(3)
        parts.append(f"{row['model']}: " + ", ".join(f"{name.removesuffix('_%')} {share:.0f}%" for name, share in top.items()))
    return "the largest shares of an epoch, " + "; ".join(parts)


def shape_breakdown(tables: Tables) -> PaperShape:
    """Table 12's layout: models as rows (the paper's is MPNN-LSTM only), its phases as columns, % of
    an epoch; each row ranks its phases."""
    table = table_named(tables)
    table = table[table.model.isin(MODEL_LABELS)].groupby("model", sort=False).median(numeric_only=True)
    frame = table.reindex(index=[m for m in MODEL_LABELS if m in table.index], columns=[c for c in BREAKDOWN_LABELS if c in table.columns])
    frame = frame.rename(index=MODEL_LABELS, columns=BREAKDOWN_LABELS)
    frame.index.name = ""
    return PaperShape(frame, paper_ref="Table 12", paper_dataset=PAPER_DATASET, rank_within="rows", unit="% of an epoch")


def headlines_breakdown(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 4.4's shares (plain values): the remap's (11.68%-17.51%, the geometric mean of the
    ends) and the forward and backward's together (over 70% on average); ours over the models we ran."""
    table = table_named(tables)
    remap = math.sqrt(published_value(published, "Remap", "share of runtime min") * published_value(published, "Remap", "share of runtime max"))
    compute = published_value(published, "Fwd.+Bwd.", "share of runtime avg (over)")
    return (
        Headline("remap's share of an epoch (%)", remap, geometric_mean(table["remap_%"]), ratio=False),
        Headline("forward and backward's share of an epoch (%)", compute, geometric_mean(table["forward_%"] + table["backward_%"]), ratio=False),
    )


# ---- figure 8: K x alpha ----------------------------------------------------------------------------------
def build_heatmap(results: Path) -> None:
    """Test MSE, training memory and epoch time over K (full snapshots) x alpha (decay), as a table
    and three heatmaps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from omegaconf import OmegaConf

    folder = results / HEATMAP_SWEEP.folder
    rows = []
    for summary, metrics in completed_run_folders(folder):
        sched = OmegaConf.load(folder / summary["run_id"] / "config.yaml").sched
        rows.append({
            "K": int(sched.full), "alpha": float(sched.alpha), "test_mse": _test_mse(summary), "epoch_time_s": summary["epoch_time_s"],
            "train_memory_mb": epoch_value(metrics, "train_memory_bytes") / MB,
        })  # fmt: skip
    table = pd.DataFrame(rows).sort_values(["K", "alpha"])
    figure, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for axis, column in zip(axes, ("test_mse", "train_memory_mb", "epoch_time_s"), strict=True):
        grid = table.pivot_table(index="K", columns="alpha", values=column)
        image = axis.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap="viridis")
        axis.set_xticks(range(len(grid.columns)), [f"{a:g}" for a in grid.columns])
        axis.set_yticks(range(len(grid.index)), [str(k) for k in grid.index])
        axis.set_xlabel("alpha")
        axis.set_ylabel("K (full snapshots)")
        axis.set_title(column)
        figure.colorbar(image, ax=axis)
    figure.tight_layout()
    figure.savefig(results / HEATMAP_PNG, dpi=120)
    plt.close(figure)
    write_table(table, results / HEATMAP_CSV, f"figure: {results / HEATMAP_PNG} (MSE, memory and time over K x alpha)")


def read_heatmap(tables: Tables) -> str:
    table = table_named(tables)
    best = table.loc[table.test_mse.idxmin()]
    return (
        f"lowest test MSE {best.test_mse:.4f} at K = {int(best.K)}, alpha = {best.alpha:g}; over {len(table)} settings "
        f"MSE spans {span(table.test_mse, lambda v: f'{v:.4f}')}, training memory {span(table.train_memory_mb, lambda v: f'{v:.0f}')} MB"
    )


def headlines_heatmap(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Figure 8 prints no numbers; its text places the best accuracy on a hybrid graph (soc-youtube)
    at K about 3-5 (the geometric mean of the ends) and alpha about 0.3. Ours: the K and alpha of the
    lowest test MSE on our synthetic graph (plain values); missing where the grid did not vary it."""
    table = table_named(tables).dropna(subset=["test_mse"])
    best = table.loc[table.test_mse.idxmin()] if not table.empty else None

    def best_of(setting: str) -> float | None:
        return float(best[setting]) if best is not None and table[setting].nunique() > 1 else None

    youtube = published[published.dataset == "soc-youtube"]
    k = math.sqrt(published_value(youtube, "best accuracy", "K (approx.) min") * published_value(youtube, "best accuracy", "K (approx.) max"))
    alpha = published_value(youtube, "best accuracy", "alpha (approx.)")
    return (
        Headline("K of the lowest test MSE", k, best_of("K"), ratio=False),
        Headline("alpha of the lowest test MSE", alpha, best_of("alpha"), ratio=False),
    )


# ---- figure 7: scaling ------------------------------------------------------------------------------------
FIGURE7_GPUS = 4  # the paper's text states figure 7's speedup and memory from 1 to 4 GPUs


def build_scaling(results: Path) -> None:
    """Epoch time and memory per rank count, with the speedup over one rank."""
    table = variant_table(results / SCALING_SWEEP.folder)[["model", "variant", "world_size", "epoch_time_s", "gpu_peak_allocated_mb", "train_memory_mb", "halo_mb"]]
    table = table.sort_values(["model", "world_size"]).reset_index(drop=True)
    one = table[table.world_size == 1].set_index("model")["epoch_time_s"]
    table["speedup_vs_1_rank"] = table["model"].map(one) / table["epoch_time_s"]
    write_table(table, results / SCALING_CSV, "the ranks share this machine's cores")


def read_scaling(tables: Tables) -> str:
    table = table_named(tables).sort_values("world_size")
    one, most = table.iloc[0], table.iloc[-1]
    return (
        f"{int(one.world_size)} to {int(most.world_size)} ranks: {times(most.speedup_vs_1_rank)} the speed, "
        f"training memory per rank {times(most.train_memory_mb / one.train_memory_mb)}"
    )


def per_doubling(ratio: float, ranks_from: float, ranks_to: float) -> float | None:
    """A ratio between two rank counts as the ratio per doubling of the ranks (its log2-th root)."""
    doublings = math.log2(ranks_to / ranks_from)
    if doublings <= 0 or not ratio == ratio or ratio <= 0:
        return None
    return ratio ** (1 / doublings)


def headlines_scaling(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Figure 7's text: about 2.6x the speed from 1 to 4 GPUs, and memory per GPU from 7.5 GB to
    2.3 GB; we run 1 and 2 ranks, so both sides are per doubling of the ranks. Figure 7's comparison
    with DynaHB is a system we do not run."""
    table = table_named(tables).sort_values("world_size")
    speedup = per_doubling(published_value(published, "FlareDTDG 1 to 4 GPUs", "speedup (approx.)"), 1, FIGURE7_GPUS)
    memory = per_doubling(
        published_value(published, "FlareDTDG per-GPU memory", "4 GPUs") / published_value(published, "FlareDTDG per-GPU memory", "1 GPU"), 1, FIGURE7_GPUS
    )
    measure, _ = memory_measure(table)
    one, most = table.iloc[0], table.iloc[-1]
    ours_speedup = per_doubling(float(most.speedup_vs_1_rank), one.world_size, most.world_size)
    ours_memory = per_doubling(float(most[measure] / one[measure]), one.world_size, most.world_size)
    return (
        _headline("speedup per doubling of the ranks", speedup, ours_speedup),
        _headline("memory per rank per doubling of the ranks", memory, ours_memory),
    )


# ---- the targets ------------------------------------------------------------------------------------------
VARIANTS_REPEATS = "the runs of table 6 (made once for 6, 5/7 and 12)"

ACCURACY = PaperTarget(
    name="table-flare-accuracy",
    paper=SECTION.key,
    title="Test MSE: Full-History, Recent-Only, FlareDTDG per model",
    reproduces="FlareDTDG table 6",
    outputs=(ACCURACY_CSV,),
    repeats="one run per cell (4 epochs)",
    minutes=40,
    build=build_accuracy,
    reading=read_accuracy,
    sweep=VARIANTS_SWEEP,
    shape=shape_accuracy,
    headlines=headlines_accuracy,
)

MEMORY = PaperTarget(
    name="table-flare-memory",
    paper=SECTION.key,
    title=(
        "Memory per rank, each measure under its own name: GPU allocator peak (GPU runs only), peak resident set, "
        "bytes saved for the backward, training memory; Full-History against FlareDTDG"
    ),
    reproduces="FlareDTDG tables 5 and 7 (the paper's figures are the GPU allocator's peak per GPU)",
    outputs=(MEMORY_CSV,),
    repeats=f"{VARIANTS_REPEATS}; per-epoch peaks, median over epochs 2-4",
    minutes=40,
    build=build_memory,
    reading=read_memory,
    sweep=VARIANTS_SWEEP,
    shape=shape_memory,
    headlines=headlines_memory,
)

CONVERGENCE = PaperTarget(
    name="table-flare-convergence",
    paper=SECTION.key,
    title=(
        "Time to convergence: training time and epochs until the validation MSE first reaches Full-History's best + a tolerance "
        "(5% unless the tolerance setting says otherwise), epoch time beside"
    ),
    reproduces="FlareDTDG table 8",
    outputs=(CONVERGENCE_CSV,),
    repeats="one run per cell, every epoch",
    minutes=30,
    build=build_convergence,
    reading=read_convergence,
    sweep=CONVERGENCE_SWEEP,
    settings=Settings(full={"tolerance": CONVERGENCE_TOLERANCE}),
    shape=shape_convergence,
    headlines=headlines_convergence,
)

TIME = PaperTarget(
    name="table-flare-time",
    paper=SECTION.key,
    title="Epoch time; shrinking on and off; overlap none, rr, mlp",
    reproduces="FlareDTDG tables 9-11 (as epoch time; table 8's convergence time is table-flare-convergence)",
    outputs=(TIME_CSV,),
    repeats="median over epochs 2-4 of one run per cell",
    minutes=25,
    build=build_time,
    reading=read_time,
    sweep=TIME_SWEEP,
    shape=shape_time,
    headlines=headlines_time,
)

BREAKDOWN = PaperTarget(
    name="table-flare-breakdown",
    paper=SECTION.key,
    title="Chunking, shuffle, remap, forward, backward, communication, load",
    reproduces="FlareDTDG table 12",
    outputs=(BREAKDOWN_CSV,),
    repeats=f"{VARIANTS_REPEATS}; median over epochs",
    minutes=40,
    build=build_breakdown,
    reading=read_breakdown,
    sweep=VARIANTS_SWEEP,
    shape=shape_breakdown,
    headlines=headlines_breakdown,
)

HEATMAP = PaperTarget(
    name="fig-flare-heatmap",
    paper=SECTION.key,
    title="MSE, memory and time over K x alpha",
    reproduces="FlareDTDG figure 8",
    outputs=(HEATMAP_CSV, HEATMAP_PNG),
    repeats="one run per cell (4 epochs)",
    minutes=13,
    build=build_heatmap,
    reading=read_heatmap,
    sweep=HEATMAP_SWEEP,
    headlines=headlines_heatmap,
)

SCALING = PaperTarget(
    name="fig-flare-scaling",
    paper=SECTION.key,
    title="Epoch time and memory on 1 and 2 ranks",
    reproduces="FlareDTDG figure 7",
    outputs=(SCALING_CSV,),
    repeats="median over epochs 2-4 of one run per rank count",
    minutes=7,
    build=build_scaling,
    reading=read_scaling,
    sweep=SCALING_SWEEP,
    headlines=headlines_scaling,
)

TARGETS: tuple[PaperTarget, ...] = (ACCURACY, MEMORY, CONVERGENCE, TIME, BREAKDOWN, HEATMAP, SCALING)
