"""bench-scaling: the snapshot strategies as the graph grows in nodes and in snapshots, each run in a
process of its own."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.paper.bench.common import EPOCH_LEVEL, SECTION, growth_exponent
from dygsched.paper.common import table_named, write_table
from dygsched.paper.runner import run_in_process_of_its_own
from dygsched.paper.target import PaperTarget, Regime, Settings, Tables

SCALING_DIR = "scaling"
SCALING_CSV = f"{SCALING_DIR}/scaling.csv"
SCALING_EXPONENTS_CSV = f"{SCALING_DIR}/scaling_exponents.csv"
SCALING_PNG = f"{SCALING_DIR}/scaling.png"
SCALING_MODEL = {"distdy": "sage_temporal"}  # DistDy trains only a sampled GraphSAGE encoder; every other strategy TGCN
# Greedy profiles 4 PSG epochs before it plans (conf/sched/dygnex_g.yaml); here one, so the measured
# last epoch runs its plan (the table's `plan_from_epoch` says from which epoch each run did).
SCALING_OVERRIDES = {"greedy": ("sched.timeline.profile_epochs=1",)}


def last_epoch(metrics: pd.DataFrame) -> dict[str, Any]:
    """The last training epoch's time (the slowest rank's) and each rank's peak resident set in it (MB)."""
    frame = metrics[metrics["iteration"] == EPOCH_LEVEL]
    train = frame[frame["phase"] == "train"]
    last = train[train["epoch"] == train["epoch"].max()]
    epoch_times = last[last["metric"] == "epoch_time_s"]["value"]
    rss = last[last["metric"] == "peak_rss_bytes"].dropna(subset=["value"]).sort_values("rank")
    switch = frame[frame["metric"] == "switch_epoch"]["value"]
    return {
        "epoch": int(last["epoch"].max()),
        "plan_from_epoch": int(switch.iloc[0]) if not switch.empty else 0,
        "epoch_time_s": float(epoch_times.max()) if not epoch_times.empty else float("nan"),
        "peak_rss_mb": float(rss["value"].max() / 2**20) if not rss.empty else float("nan"),  # the largest rank's
        "peak_rss_mb_per_rank": "/".join(f"{v / 2**20:.0f}" for v in rss["value"]),
        "error": "",
    }


def _scaling_run(
    results: Path,
    sched: str,
    nodes: int,
    snapshots: int,
    avg_degree: float,
    epochs: int,
    seed: int,
    extra: tuple[str, ...],
    timeout_s: float | None,
) -> dict[str, Any]:
    """One strategy at one size on 2 ranks, in a process of its own: its row (the reason, without
    numbers, when it failed or passed ``timeout_s``: missing, never 0)."""
    run_id = f"scaling-{sched}-{nodes}n-{snapshots}t"
    model = SCALING_MODEL.get(sched, "tgcn")
    overrides = [
        "dataset=synthetic",
        "dataset.growth=none",
        f"dataset.num_nodes={nodes}",
        f"dataset.num_snapshots={snapshots}",
        f"dataset.avg_degree={avg_degree}",
        f"model={model}",
        f"sched={sched}",
        *SCALING_OVERRIDES.get(sched, ()),
        f"epochs={epochs}",
        f"seed={seed}",
        "checkpoint=false",
        f"results_dir={results / SCALING_DIR}",
        f"run_id={run_id}",
        "overwrite=true",  # a rebuild replaces the earlier run (moved aside)
        "progress=false",
        *extra,
    ]
    row: dict[str, Any] = {
        "sched": sched,
        "model": model,
        "nodes": nodes,
        "snapshots": snapshots,
        "edge_rows": int(round(avg_degree * nodes)) * snapshots,
    }
    start = time.perf_counter()
    reason = run_in_process_of_its_own(overrides, timeout_s)
    row["wall_s"] = time.perf_counter() - start
    if reason:
        print(f"bench-scaling: {sched} at {nodes} nodes x {snapshots} snapshots failed: {reason}", file=sys.stderr)
        return {**row, "error": reason}
    return {**row, **last_epoch(pd.read_parquet(results / SCALING_DIR / run_id / "metrics.parquet"))}


def axis_rows(table: pd.DataFrame, axis: str, base_nodes: int, base_snapshots: int) -> pd.DataFrame:
    """The rows of one axis: the nodes at the fixed snapshot count, or the snapshots at the fixed node count."""
    fixed = ("snapshots", base_snapshots) if axis == "nodes" else ("nodes", base_nodes)
    return table[table[fixed[0]] == fixed[1]].sort_values(axis)


def scaling_exponents(table: pd.DataFrame, base_nodes: int, base_snapshots: int) -> pd.DataFrame:
    """Per strategy and axis, the exponents over every size and over the two largest (where the data
    outweighs the libraries' fixed memory)."""
    rows = []
    for axis in ("nodes", "snapshots"):
        for sched, group in axis_rows(table, axis, base_nodes, base_snapshots).groupby("sched", sort=False):
            top = group.dropna(subset=["epoch_time_s"]).tail(2)
            rows.append(
                {
                    "sched": sched,
                    "axis": axis,
                    "points": int(group["epoch_time_s"].notna().sum()),
                    "time_exponent": growth_exponent(group, axis, "epoch_time_s"),
                    "memory_exponent": growth_exponent(group, axis, "peak_rss_mb"),
                    "time_exponent_top": growth_exponent(top, axis, "epoch_time_s"),
                    "memory_exponent_top": growth_exponent(top, axis, "peak_rss_mb"),
                }
            )
    return pd.DataFrame(rows)


def _plot_scaling(table: pd.DataFrame, base_nodes: int, base_snapshots: int, avg_degree: float, epochs: int, out: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    fixed = {"nodes": f"{base_snapshots} snapshots", "snapshots": f"{base_nodes:,} nodes"}
    for row, axis in enumerate(("nodes", "snapshots")):
        rows = axis_rows(table, axis, base_nodes, base_snapshots)
        for ax, column, label in (
            (axes[row, 0], "epoch_time_s", "seconds per epoch"),
            (axes[row, 1], "peak_rss_mb", "peak resident set per rank (MB)"),
        ):
            for sched, group in rows.groupby("sched", sort=False):
                group = group.dropna(subset=[column])
                if not group.empty:
                    ax.loglog(
                        group[axis], group[column], "o-", label=f"{sched} (slope {growth_exponent(group, axis, column):.2f})"
                    )
            sizes = sorted(rows[axis].unique())
            ax.set_xticks(sizes, [f"{s / 1000:g}k" if axis == "nodes" else str(s) for s in sizes])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(f"{axis} (at {fixed[axis]})")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(f"2 CPU ranks, synthetic graph at average degree {avg_degree:g}, epoch {epochs} of {epochs}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def build_scaling(
    results: Path,
    scheds: tuple[str, ...],
    nodes: tuple[int, ...],
    snapshots: tuple[int, ...],
    base_nodes: int,
    base_snapshots: int,
    avg_degree: float,
    epochs: int,
    seed: int,
    extra: tuple[str, ...] = (),
    timeout_s: float | None = None,
) -> None:
    """Each strategy on 2 ranks (the local launcher) on the synthetic graph at ``avg_degree`` with
    ``growth=none`` (every snapshot has all its nodes and ``avg_degree x nodes`` edges, so the sizes
    are exact), along two axes: ``nodes`` at ``base_snapshots`` snapshots and ``snapshots`` at
    ``base_nodes`` nodes (the point both share runs once). Each run trains ``epochs`` epochs and the
    table keeps the last (the first pays for warm-up and, for greedy, its profiling epoch): its time
    (the slowest rank's) and each rank's peak resident set. Then the fitted growth exponents per
    strategy and axis (1.0 is linear) and a log-log plot. Runs go smallest graph first, the
    strategies alternated at each size; each in a process of its own, so one that fails or passes
    ``timeout_s`` keeps its row with the reason and no numbers."""
    sizes = {(n, base_snapshots) for n in nodes} | {(base_nodes, t) for t in snapshots}
    order = sorted(sizes, key=lambda size: (size[0] * size[1], size))
    rows = []
    for node_count, snapshot_count in order:
        for sched in scheds:
            rows.append(_scaling_run(results, sched, node_count, snapshot_count, avg_degree, epochs, seed, extra, timeout_s))
            print(f"  {sched} at {node_count} nodes x {snapshot_count} snapshots: {rows[-1].get('error') or 'done'}", flush=True)
    table = pd.DataFrame(rows)
    write_table(table, results / SCALING_CSV)
    fits = scaling_exponents(table, base_nodes, base_snapshots)
    write_table(fits, results / SCALING_EXPONENTS_CSV)
    _plot_scaling(table, base_nodes, base_snapshots, avg_degree, epochs, results / SCALING_PNG)
    print(f"written: {results / SCALING_PNG}")


def read_scaling(tables: Tables) -> str:
    """The fitted exponents per strategy, nodes then snapshots, and which grow faster than linear (above
    1.1) over every size or over the two largest (where the libraries' fixed memory no longer hides it)."""
    fits = table_named(tables, "scaling_exponents.csv")
    parts, faster = [], []
    for sched, rows in fits.groupby("sched", sort=False):
        shown = []
        for fit in rows.itertuples():
            shown.append(f"{fit.axis}^{fit.time_exponent:.2f} (memory ^{fit.memory_exponent:.2f})")
            for what in ("time", "memory"):
                over = {
                    span: getattr(fit, f"{what}_exponent{suffix}", float("nan"))
                    for span, suffix in (("all sizes", ""), ("the two largest", "_top"))
                }
                over = {span: value for span, value in over.items() if value > 1.1}
                if over:
                    faster.append(
                        f"{sched}'s {what} in {fit.axis} (" + ", ".join(f"{v:.2f} over {span}" for span, v in over.items()) + ")"
                    )
        parts.append(f"{sched} time ~ " + ", ".join(shown))
    verdict = (
        "faster than linear (exponent above 1.1): " + "; ".join(faster)
        if faster
        else "none grows faster than linear (every exponent at most 1.1)"
    )
    return "epoch time and peak memory per rank against the graph's size: " + "; ".join(parts) + f"; {verdict}"


SCALING = PaperTarget(
    name="bench-scaling",
    paper=SECTION.key,
    title="PSG, greedy, FlareDTDG and DistDy as the snapshot graph grows in nodes and in snapshots",
    reproduces="(no paper table)",
    outputs=(SCALING_CSV, SCALING_EXPONENTS_CSV, SCALING_PNG),
    repeats="one run per strategy and size, its last (2nd) epoch",
    minutes=13,  # 12.6 min alone on 2 cores (2026-11-27); 39 on a shared machine before
    build=build_scaling,
    reading=read_scaling,
    regime=Regime(
        paper="",
        ours="PSG, greedy, FlareDTDG and DistDy on 2 ranks, synthetic graphs of 1,000-100,000 nodes (24 snapshots) and "
        "24-240 snapshots (3,000 nodes), 2 epochs each",
    ),
    settings=Settings(
        full={
            "scheds": ("psg", "greedy", "flare", "distdy"),
            "nodes": (1000, 3000, 10000, 30000, 100000),
            "snapshots": (24, 48, 120, 240),
            "base_nodes": 3000,
            "base_snapshots": 24,
            "avg_degree": 6.0,
            "epochs": 2,
            "seed": 0,
        },
        smoke={"scheds": ("psg", "greedy"), "nodes": (300, 600), "snapshots": (10, 20), "base_nodes": 300, "base_snapshots": 10},
    ),
)
