"""One line per target that says what its table shows: which strategy wins, by how much, and whether
the shape the paper reports holds here.

Each reading takes the target's tables (``{path under the results root: frame}``) and returns one
sentence built from the numbers alone; nothing here knows what the numbers should be.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

Tables = dict[str, pd.DataFrame]


def _table(tables: Tables, name: str = "") -> pd.DataFrame:
    """The table whose path ends with ``name`` (the only one when ``name`` is empty)."""
    for path, frame in tables.items():
        if path.endswith(name):
            return frame
    raise KeyError(f"no table {name!r}")


def _x(value: float) -> str:
    return f"{value:.2f}x"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _span(values: pd.Series, form: Callable[[float], str] = lambda v: f"{v:.3g}") -> str:
    low, high = values.min(), values.max()
    return form(low) if form(low) == form(high) else f"{form(low)} to {form(high)}"


def _holds(count: int, total: int) -> str:
    return "holds on every row" if count == total else f"holds on {count} of {total} rows"


# ---- DyGNeX ---------------------------------------------------------------------------------------------
def epoch_time(tables: Tables) -> str:
    table = _table(tables).dropna(subset=["epoch_time_s"])
    parts = []
    for (dataset, model), group in table.groupby(["dataset", "model"]):
        best = group.loc[group.epoch_time_s.idxmin()]
        parts.append(f"{model} on {dataset}: {best.sched} fastest ({_x(best.speedup_vs_psg)} PSG)")
    text = "; ".join(parts) + f"; busy-time imbalance {_span(table.imbalance_ratio)}"
    pairs = table.pivot_table(index=["dataset", "model"], columns="sched", values="epoch_time_s")
    if {"greedy", "dygnex_g"} <= set(pairs.columns):
        text += f"; greedy ≤ DyGNeX-G {_holds(int((pairs.greedy <= pairs.dygnex_g * 1.02).sum()), len(pairs))} (2% noise)"
    return text


def convergence(tables: Tables) -> str:
    table = _table(tables)
    test = table[table.phase == "test"]
    metric = test.metric.iloc[0]
    final = test[test.metric == metric].sort_values("epoch").groupby("sched").value.last()
    listed = ", ".join(f"{sched} {value:.3f}" for sched, value in final.items())
    return f"final test {metric}: {listed} (spread {final.max() - final.min():.3f} over {len(final)} strategies)"


def solve_time(tables: Tables) -> str:
    greedy = _table(tables, "solve_time_greedy.csv")
    gaps = greedy.assign(solver=greedy.solver.str.rstrip("*")).pivot_table(index="snapshots", columns="solver", values="gap")
    ours = greedy[greedy.solver == "greedy"]
    slowest = ours.loc[ours.solve_time_s.idxmax()]
    ilp = _table(tables, "solve_time_ilp.csv")
    return (
        f"greedy's gap ≤ DyGNeX-G's {_holds(int((gaps.greedy <= gaps.dygnex_g + 1e-9).sum()), len(gaps))}; "
        f"greedy's slowest solve {slowest.solve_time_s:.2f} s at {int(slowest.snapshots)} snapshots; "
        f"DyGNeX-L met its gap in {int(ilp.converged.sum())} of {len(ilp)} cells (slowest {ilp.solve_time_s.max():.1f} s)"
    )


# ---- REAL -----------------------------------------------------------------------------------------------
def ablation(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for model, group in table.groupby("model", sort=False):
        steps = ", ".join(f"{row.step} {_x(row.speedup_vs_psg)}" for row in group.itertuples() if row.step != "PSG")
        parts.append(f"{model}: {steps}")
    return "speedup over PSG, " + "; ".join(parts)


def reuse_memory(tables: Tables) -> str:
    table = _table(tables)
    saved = ", ".join(f"{row.dataset} {_pct(row.saved_fraction)}" for row in table.itertuples())
    return f"diff maps + degrees save {saved} of the full graphs' bytes; built in at most {table.build_seconds.max():.2f} s"


# ---- FlareDTDG ------------------------------------------------------------------------------------------
def _by_variant(table: pd.DataFrame, value: str, form: Callable[[float], str]) -> str:
    return "; ".join(
        f"{model}: " + ", ".join(f"{row.variant} {form(getattr(row, value))}" for row in group.itertuples())
        for model, group in table.groupby("model", sort=False)
    )


def flare_accuracy(tables: Tables) -> str:
    table = _table(tables).set_index("model")
    parts = []
    for model, row in table.iterrows():
        text = f"{model}: " + ", ".join(f"{variant} {mse:.4f}" for variant, mse in row.dropna().items())
        if {"FlareDTDG", "Full-History"} <= set(row.dropna().index):
            text += f" (FlareDTDG {row['FlareDTDG'] / row['Full-History'] - 1:+.1%} against Full-History)"
        parts.append(text)
    return "test MSE, " + "; ".join(parts)


def flare_memory(tables: Tables) -> str:
    """Each measure against Full-History's same measure; the paper's tables 5/7 are the GPU allocator's peak."""
    table = _table(tables)
    if table["gpu_peak_allocated_mb"].notna().any():
        text = "GPU allocator peak per rank (the paper's measure) against Full-History's, " + _by_variant(table, "gpu_peak_allocated_vs_full_history", _x)
    else:
        text = "no GPU in these runs, so no figure of the paper's measure (the GPU allocator's peak)"
    return (
        text + "; bytes saved for the backward plus parameters and states against Full-History's, "
        + _by_variant(table, "train_memory_vs_full_history", _x)
        + f"; the process's peak resident set {_span(table.peak_rss_mb, lambda v: f'{v:.0f}')} MB"
    )


def flare_convergence(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for model, group in table.groupby("model", sort=False):
        cells = []
        for row in group.itertuples():
            if pd.isna(row.time_to_target_s):
                cells.append(f"{row.variant} {row.reached}")
            else:
                ratio = f", {_x(row.vs_full_history)} Full-History's" if pd.notna(row.vs_full_history) and row.variant != "Full-History" else ""
                cells.append(f"{row.variant} {row.time_to_target_s:.1f} s in {int(row.epochs_to_target)} epochs{ratio}")
        target = group.target_val_mse.iloc[0]
        parts.append(f"{model} ({f'target val MSE {target:.4f}' if pd.notna(target) else 'no target'}): " + ", ".join(cells))
    return "time to the common target, " + "; ".join(parts)


def flare_time(tables: Tables) -> str:
    return "epoch time against FlareDTDG's, " + _by_variant(_table(tables), "vs_flare", _x)


def flare_breakdown(tables: Tables) -> str:
    table = _table(tables)
    phases = [column for column in table.columns if column.endswith("_%")]
    parts = []
    for _, row in table.iterrows():
        top = row[phases].astype(float).sort_values(ascending=False).head(3)
        parts.append(f"{row['model']}: " + ", ".join(f"{name.removesuffix('_%')} {share:.0f}%" for name, share in top.items()))
    return "the largest shares of an epoch, " + "; ".join(parts)


def flare_heatmap(tables: Tables) -> str:
    table = _table(tables)
    best = table.loc[table.test_mse.idxmin()]
    return (
        f"lowest test MSE {best.test_mse:.4f} at K = {int(best.K)}, alpha = {best.alpha:g}; over {len(table)} settings "
        f"MSE spans {_span(table.test_mse, lambda v: f'{v:.4f}')}, training memory {_span(table.train_memory_mb, lambda v: f'{v:.0f}')} MB"
    )


def flare_scaling(tables: Tables) -> str:
    table = _table(tables).sort_values("world_size")
    one, most = table.iloc[0], table.iloc[-1]
    return (
        f"{int(one.world_size)} to {int(most.world_size)} ranks: {_x(most.speedup_vs_1_rank)} the speed, "
        f"training memory per rank {_x(most.train_memory_mb / one.train_memory_mb)}"
    )


# ---- DistDy ---------------------------------------------------------------------------------------------
def distdy_storage(tables: Tables) -> str:
    table = _table(tables)
    return (
        f"additive storage saves {_span(table.saved_both, _pct)} of whole snapshots (features only "
        f"{_span(table.saved_features_only, _pct)}, edges only {_span(table.saved_edges_only, _pct)}) over {len(table)} settings"
    )


def distdy_partition(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for (data, stores), group in table.groupby(["data", "stores"], sort=False):
        rows = group.set_index("partitioner")
        distdy, others = rows.loc["distdy"], rows.drop(index=[p for p in rows.index if p.startswith("distdy")])
        oom = [name for name, row in others.iterrows() if row.out_of_memory]
        parts.append(
            f"{data}, K={int(stores)}: DistDy cuts {_pct(distdy.cut_weight_share)} of the fetch weight against "
            f"{_span(others.cut_weight_share, _pct)}, largest store over mean {distdy.balance_bytes:.2f} in bytes and "
            f"{distdy.balance_targets:.2f} in targets, median {distdy.median_passes:g} passes, partitioning "
            f"{_x(distdy.partition_vs_metis)} METIS's and {_x(distdy.partition_vs_metis_layer)} METIS-layer's time"
            + (f"; out of memory: {', '.join(oom)}" if oom else "")
        )
    return "; ".join(parts)


def distdy_traffic(tables: Tables) -> str:
    table = _table(tables, "traffic.csv")
    parts = []
    for (stores, source), group in table.groupby(["stores", "source"]):
        others = group[group.partitioner != "distdy"]
        lowest = bool((others.vs_distdy >= 1).all())  # vs_distdy: bytes fetched over DistDy's
        parts.append(f"{int(stores)} stores ({source}): others fetch {_span(others.vs_distdy, _x)} DistDy's bytes"
                     + ("" if lowest else " (DistDy not the lowest)"))  # fmt: skip
    return "; ".join(parts)


def distdy_time(tables: Tables) -> str:
    measured = _table(tables, "time_measured.csv")
    simulated = _table(tables, "time_simulated.csv")
    measured_distdy = measured[measured.partitioner == "distdy"]
    parts = [f"measured on 2 ranks, DistDy {_span(measured_distdy.speedup_vs_metis, _x)} METIS's speed"]
    for device, group in simulated[simulated.partitioner == "distdy"].groupby("device", sort=False):
        slow = group[group.gbps == group.gbps.min()]
        lowest = group[[c for c in group.columns if c.startswith("speedup_vs_")]].min(axis=1)
        parts.append(
            f"simulated ({device}) at {slow.gbps.iloc[0]:g} Gbps {_span(slow.speedup_vs_metis, _x)} METIS's speed, "
            f"its lowest speedup over any baseline {_span(lowest, _x)} over every bandwidth and K"
        )
    return "; ".join(parts)


def distdy_params(tables: Tables) -> str:
    table = _table(tables)
    speed = next(column for column in table.columns if column.startswith("speedup"))
    best = table.loc[table[speed].idxmax()]
    return f"simulated speedup over METIS {_span(table[speed], _x)}; best at budget {best.budget:g}, eta {best.eta:g}"


def distdy_capacity(tables: Tables) -> str:
    table = _table(tables, "capacity.csv")
    parts = []
    for stores, group in table.groupby("stores"):
        oom = [c.removesuffix("_out_of_memory") for c in group.columns if c.endswith("_out_of_memory") and group[c].any()]
        parts.append(
            f"K={int(stores)}: from the tightest feasible D^k to twice it, speedup over METIS "
            f"{_span(group.speedup_vs_metis, _x)}, largest store over mean {_span(group.balance_bytes, lambda v: f'{v:.2f}')} "
            f"in bytes" + (f"; out of memory at some capacity: {', '.join(oom)}" if oom else "")
        )
    return "; ".join(parts)


# ---- Sven -----------------------------------------------------------------------------------------------
def sven_comm(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for ranks in sorted({table.ranks.min(), table.ranks.max()}):
        rows = table[(table.ranks == ranks) & (table.strategy != "sven")]
        spans = ", ".join(f"{strategy} {_span(group.vs_sven, _x)}" for strategy, group in rows.groupby("strategy"))
        parts.append(f"at {ranks} ranks {spans}")
    return "bytes per epoch against Sven's: " + "; ".join(parts)


def sven_balance(tables: Tables) -> str:
    table = _table(tables)
    cut = table[table.partition == "reflexbicut"]
    return (
        f"Re-FlexBiCut's largest per-step balance cost (slowest link minus fastest, Equation 2) is "
        f"{_span(cut.vs_range_pct, lambda v: f'{v:+.1f}%')} against range and "
        f"{_span(cut.vs_interval_pct, lambda v: f'{v:+.1f}%')} against interval over {len(cut)} settings"
    )


def sven_accuracy(tables: Tables) -> str:
    table = _table(tables)

    def setting(row) -> str:
        return "one process" if row.sched == "single" else f"{row.sched} on {int(row.ranks)} ranks, staleness {int(row.staleness)}"

    parts = [
        f"{model}: " + ", ".join(f"{setting(row)} {row.test_ap:.3f}" for row in group.itertuples())
        for model, group in table.groupby("model", sort=False)
    ]
    return f"test AP (mean over {int(table.seeds.max())} seed(s)), " + "; ".join(parts)


def sven_breakdown(tables: Tables) -> str:
    table = _table(tables)
    steps = ", ".join(f"{row.step} {row.epoch_time_s:.2f} s" for row in table.itertuples())
    sven = table.iloc[-1]
    return f"epoch time {steps}: the full Sven {_x(sven.speedup_vs_depcomm)} DepComm's speed"


# ---- planner, simulation, reuse, engine -----------------------------------------------------------------
def planner(tables: Tables) -> str:
    table = _table(tables)
    table = table[~table.instance.str.startswith("stress-")]  # printed by the benchmark, outside its suite
    solver = table.solver.str.replace(r"\[.*\]$", "", regex=True)  # "dygnex_g[16 targets]": the capped run
    gaps = table.assign(solver=solver).pivot_table(index=["instance", "reuse"], columns="solver", values="gap")
    text = f"{len(gaps)} instances of the suite; greedy's gap to the bound {_span(gaps.greedy, _pct)}"
    if "dygnex_g" in gaps.columns:
        both = gaps.dropna(subset=["greedy", "dygnex_g"])
        text += f"; greedy ≤ DyGNeX-G {_holds(int((both.greedy <= both.dygnex_g + 1e-9).sum()), len(both))}"
    greedy_time = table[table.solver == "greedy"].solve_time.max()
    return text + f"; greedy's slowest solve {greedy_time:.3f} s"


def simulate(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for solver, group in table.groupby("solver", sort=False):
        largest = group.loc[group.gpus.idxmax()]
        parts.append(f"{solver} {_pct(largest.efficiency)} at {int(largest.gpus)} GPUs")
    return "parallel efficiency " + ", ".join(parts)


def bench_reuse(tables: Tables) -> str:
    table = _table(tables).set_index("run")
    base, other = table.index[0], table.index[-1]
    return (
        f"{other}: {_x(table.epoch_time_s[base] / table.epoch_time_s[other])} faster than {base}, "
        f"{_x(table.conv_flops_per_epoch[base] / table.conv_flops_per_epoch[other])} fewer graph-convolution FLOPs"
    )


def flop_counting(tables: Tables) -> str:
    table = _table(tables).set_index("count_flops")
    return f"counting graph-convolution FLOPs costs {table.overhead_pct[True]:+.1f}% of the epoch time"


def vs_pygt(tables: Tables) -> str:
    table = _table(tables)
    rows = ", ".join(f"{row.model} on {row.dataset} {_x(row.ratio)}" for row in table.itertuples())
    return f"dygsched's time per training group against the plain PyG-Temporal loop: {rows} (below 1x: dygsched faster)"


def tgn_pyg(tables: Tables) -> str:
    table = _table(tables)
    return f"the reference TGN takes {_x(table.ratio.iloc[0])} the epoch time of a TGN of PyG's modules"


def stream_scaling(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for model, rows in table.groupby("model", sort=False):
        rows = rows.sort_values("events")
        first, last = rows.iloc[0], rows.iloc[-1]
        slope = np.polyfit(np.log(rows.events), np.log(rows.epoch_time_s), 1)[0] if len(rows) > 1 else float("nan")
        parts.append(f"{model} {first.epoch_time_s:.2f} s at {int(first.events):,} events to {last.epoch_time_s:.2f} s at {int(last.events):,} (time ~ events^{slope:.2f})")
    return "seconds per epoch in one process: " + "; ".join(parts)


def scaling(tables: Tables) -> str:
    """The fitted exponents per strategy, nodes then snapshots, and which grow faster than linear (above
    1.1) over every size or over the two largest (where the libraries' fixed memory no longer hides it)."""
    fits = _table(tables, "scaling_exponents.csv")
    parts, faster = [], []
    for sched, rows in fits.groupby("sched", sort=False):
        shown = []
        for fit in rows.itertuples():
            shown.append(f"{fit.axis}^{fit.time_exponent:.2f} (memory ^{fit.memory_exponent:.2f})")
            for what in ("time", "memory"):
                over = {span: getattr(fit, f"{what}_exponent{suffix}", float("nan")) for span, suffix in (("all sizes", ""), ("the two largest", "_top"))}
                over = {span: value for span, value in over.items() if value > 1.1}
                if over:
                    faster.append(f"{sched}'s {what} in {fit.axis} (" + ", ".join(f"{v:.2f} over {span}" for span, v in over.items()) + ")")
        parts.append(f"{sched} time ~ " + ", ".join(shown))
    verdict = "faster than linear (exponent above 1.1): " + "; ".join(faster) if faster else "none grows faster than linear (every exponent at most 1.1)"
    return "epoch time and peak memory per rank against the graph's size: " + "; ".join(parts) + f"; {verdict}"


def stream_accuracy(tables: Tables) -> str:
    table = _table(tables)
    parts = []
    for (dataset, setting), rows in table[table["metric"] == "ap"].groupby(["dataset", "setting"], sort=False):
        shown = ", ".join(f"{r.model} {r['mean']:.3f}" + (f" ± {r['std']:.3f}" if r["seeds"] > 1 else "") for _, r in rows.iterrows())
        parts.append(f"{dataset} {setting}: {shown}")
    return "test AP at the best validation epoch, mean ± std over seeds: " + "; ".join(parts)


READINGS: dict[str, Callable[[Tables], str]] = {
    "table-epoch-time": epoch_time,
    "fig-convergence": convergence,
    "table-solve-time": solve_time,
    "table-ablation": ablation,
    "table-reuse-memory": reuse_memory,
    "table-flare-accuracy": flare_accuracy,
    "table-flare-memory": flare_memory,
    "table-flare-convergence": flare_convergence,
    "table-flare-time": flare_time,
    "table-flare-breakdown": flare_breakdown,
    "fig-flare-heatmap": flare_heatmap,
    "fig-flare-scaling": flare_scaling,
    "table-distdy-storage": distdy_storage,
    "table-distdy-partition": distdy_partition,
    "table-distdy-traffic": distdy_traffic,
    "table-distdy-time": distdy_time,
    "fig-distdy-params": distdy_params,
    "fig-distdy-capacity": distdy_capacity,
    "table-sven-comm": sven_comm,
    "table-sven-balance": sven_balance,
    "table-sven-accuracy": sven_accuracy,
    "table-sven-breakdown": sven_breakdown,
    "bench-planner": planner,
    "bench-planner-certify": planner,
    "simulate": simulate,
    "bench-reuse": bench_reuse,
    "bench-flop-counting": flop_counting,
    "bench-vs-pygt": vs_pygt,
    "bench-stream-scaling": stream_scaling,
    "bench-scaling": scaling,
    "table-stream-accuracy": stream_accuracy,
    "bench-tgn-pyg": tgn_pyg,
}
