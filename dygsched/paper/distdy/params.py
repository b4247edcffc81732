"""Figure 11: the budget M and the learning rate eta of DistDy's online partitioner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.paper.common import span, table_named, times, write_table
from dygsched.paper.distdy.common import SECTION, SMOKE_SIZES, config
from dygsched.paper.distdy.simulation import Simulator, Stream
from dygsched.paper.target import PaperTarget, Settings, Tables

PARAMS_CSV = "distdy/params.csv"


def build_params(
    results: Path,
    *,
    stores: int,
    gbps: float,
    budgets: tuple[int, ...],
    etas: tuple[float, ...],
    device_profile: str,
    overrides: tuple[str, ...],
) -> None:
    """DistDy's simulated speedup over METIS as the refinement budget M and eta vary (one at a time)."""
    cfg = config(*overrides)
    stream = Stream(cfg)
    simulator = Simulator(stream, device_profile)
    parts, _, _ = stream.place(stores, "metis")
    metis = simulator.epoch(stream.counts(parts, stores), gbps)["epoch_s"]
    grid = [("budget", m, m, cfg["sched"]["eta"]) for m in budgets] + [("eta", e, cfg["sched"]["budget"], e) for e in etas]
    rows = []
    for swept, value, budget, eta in grid:
        parts, seconds, _ = stream.place(stores, "distdy", budget=budget, eta=eta)
        epoch = simulator.epoch(stream.counts(parts, stores), gbps)["epoch_s"]
        rows.append(
            {
                "swept": swept,
                "value": value,
                "budget": budget,
                "eta": eta,
                "partition_s": seconds,
                "median_passes": float(np.median([p.passes for p in parts])),
                "cut_edges": float(np.mean([p.cut_edges for p in parts])),
                "epoch_s": epoch,
                "speedup_vs_metis": metis / epoch,
            }
        )
    write_table(
        pd.DataFrame(rows),
        results / PARAMS_CSV,
        f"simulated ({device_profile}): K={stores}, {gbps:g} Gbps, METIS {metis:.3g} s per epoch",
    )


def read_params(tables: Tables) -> str:
    table = table_named(tables)
    speed = next(column for column in table.columns if column.startswith("speedup"))
    best = table.loc[table[speed].idxmax()]
    return f"simulated speedup over METIS {span(table[speed], times)}; best at budget {best.budget:g}, eta {best.eta:g}"


PARAMS = PaperTarget(
    name="fig-distdy-params",
    paper=SECTION.key,
    title="Simulated speedup over METIS against the budget M and eta",
    reproduces="DistDy figure 11",
    outputs=(PARAMS_CSV,),
    repeats="one simulated epoch per setting",
    minutes=0.3,
    build=build_params,
    reading=read_params,
    settings=Settings(
        full={
            "stores": 8,
            "gbps": 1.0,
            "budgets": (1, 5, 20, 100, 300),
            "etas": (1.0, 2.0, 4.0, 6.0, 8.0, 12.0),
            "device_profile": "v100",
            "overrides": (),
        },
        smoke={"budgets": (1, 5), "etas": (1.0, 4.0), "overrides": (SMOKE_SIZES,)},
    ),
)
# figure 11 prints no number: "with a larger budget, the speedup ... first increases and then remains
# the same"; "with a larger eta, ... a similar speedup"
