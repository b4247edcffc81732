"""Ours: the simulated speedup and balance as the capacity D^k grows; the baselines out of memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.paper.common import span, table_named, times, write_table
from dygsched.paper.distdy.common import SECTION, SMOKE_SIZES, baseline_partitioners, config
from dygsched.paper.distdy.simulation import Simulator, Stream
from dygsched.paper.target import PaperTarget, Regime, Settings, Tables

CAPACITY_CSV = "distdy/capacity.csv"
CAPACITY_PNG = "distdy/capacity.png"


def build_capacity(
    results: Path, *, stores: tuple[int, ...], gbps: float, points: int, device_profile: str, overrides: tuple[str, ...]
) -> None:
    """DistDy's speedup and balance as ``D^k`` goes from the tightest feasible value to twice it; a
    baseline that would exceed ``D^k`` at some snapshot is out of memory there."""
    from dygsched.data.partition.online import over_capacity, smallest_feasible_factor

    run = config(*overrides)
    stream = Stream(run)
    simulator = Simulator(stream, device_profile)
    rows = []
    for count in stores:
        tightest = smallest_feasible_factor(stream.snapshot_graphs, run.window, count, **stream.options())
        baselines = {}
        for method in baseline_partitioners():
            parts, _, _ = stream.place(count, method)
            baselines[method] = (parts, simulator.epoch(stream.counts(parts, count), gbps)["epoch_s"])
        for factor in tightest * np.linspace(1.0, 2.0, points):
            parts, seconds, bound = stream.place(count, "distdy", factor=float(factor))
            epoch = simulator.epoch(stream.counts(parts, count), gbps)["epoch_s"]
            row = {
                "stores": count,
                "factor": float(factor),
                "of_tightest": float(factor / tightest),
                "capacity_mb": float(bound[0]) / 2**20,
                "partition_s": seconds,
                "epoch_s": epoch,
                **stream.balance(parts, count),
            }
            for method, (theirs, their_epoch) in baselines.items():
                oom = bool(over_capacity(theirs, bound, run.window))
                row[f"speedup_vs_{method}"] = np.nan if oom else their_epoch / epoch  # out of memory: no epoch to compare
                row[f"{method}_out_of_memory"] = oom
            rows.append(row)
    table = pd.DataFrame(rows)
    write_table(
        table,
        results / CAPACITY_CSV,
        f"simulated ({device_profile}, {gbps:g} Gbps); factor: D^k over the balanced window storage; "
        "a baseline out of memory at that D^k has no speedup (NaN)",
    )
    _capacity_figure(table, results / CAPACITY_PNG)


def _capacity_figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, balance) = plt.subplots(1, 2, figsize=(10, 4))
    for stores, group in table.groupby("stores"):
        for method in baseline_partitioners():
            line = speed.plot(group.of_tightest, group[f"speedup_vs_{method}"], marker="o", label=f"vs {method}, K={stores}")
            oom = group[group[f"{method}_out_of_memory"]]
            speed.scatter(oom.of_tightest, np.ones(len(oom)), marker="x", color=line[0].get_color())
        balance.plot(group.of_tightest, group.balance_bytes, marker="o", label=f"bytes, K={stores}")
        balance.plot(group.of_tightest, group.balance_targets, marker="s", label=f"targets, K={stores}")
    speed.set(xlabel="D^k over the tightest feasible", ylabel="DistDy's speedup (x: baseline out of memory)")
    balance.set(xlabel="D^k over the tightest feasible", ylabel="largest store over mean")
    speed.legend(fontsize=7)
    balance.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"written: {path}")


def read_capacity(tables: Tables) -> str:
    table = table_named(tables, "capacity.csv")
    parts = []
    for stores, group in table.groupby("stores"):
        oom = [c.removesuffix("_out_of_memory") for c in group.columns if c.endswith("_out_of_memory") and group[c].any()]
        parts.append(
            f"K={int(stores)}: from the tightest feasible D^k to twice it, speedup over METIS "
            f"{span(group.speedup_vs_metis, times)}, largest store over mean {span(group.balance_bytes, lambda v: f'{v:.2f}')} "
            f"in bytes" + (f"; out of memory at some capacity: {', '.join(oom)}" if oom else "")
        )
    return "; ".join(parts)


CAPACITY = PaperTarget(
    name="fig-distdy-capacity",
    paper=SECTION.key,
    title="Simulated speedup and balance as the capacity D^k grows; baselines out of memory",
    reproduces="(no paper table; ours, beside DistDy section 4: the paper sweeps no capacity)",
    outputs=(CAPACITY_CSV, CAPACITY_PNG),
    repeats="one simulated epoch per capacity",
    minutes=0.4,
    build=build_capacity,
    reading=read_capacity,
    settings=Settings(
        full={"stores": (4, 8), "gbps": 1.0, "points": 5, "device_profile": "v100", "overrides": ()},
        smoke={"stores": (4,), "points": 2, "overrides": (SMOKE_SIZES,)},
    ),
    regime=Regime(
        paper="",
        ours="Simulated on the hot-node graph of +experiment=distdy (10,000 nodes, 16 snapshots, windows of 4) for K = 4 "
        "and 8 stores at 1 Gbps with the V100 profile, D^k at 5 points from the tightest feasible value to twice it.",
    ),
)
