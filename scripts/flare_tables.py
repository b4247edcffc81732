"""FlareDTDG's tables and figures from a sweep's run folders (see the `make table-flare-*` targets).

    python scripts/flare_tables.py accuracy  results/flare/variants    # table 6: test MSE, Full-History / Recent-Only / FlareDTDG
    python scripts/flare_tables.py memory    results/flare/variants    # tables 5/7: memory per rank
    python scripts/flare_tables.py time      results/flare/time        # tables 8-11: epoch time, shrinking, overlap
    python scripts/flare_tables.py breakdown results/flare/variants    # table 12: where an epoch's time goes
    python scripts/flare_tables.py heatmap   results/flare/heatmap     # figure 8: MSE, memory, time over K x alpha
    python scripts/flare_tables.py scaling   results/flare/scaling     # figure 7: 1 and 2 ranks

Every figure is the median over the epochs after the first of the per-epoch value, the largest over
ranks for memory and the mean over ranks for phase times. Memory is what the run measured on its
device: on a CPU, the bytes a window keeps for its backward (the largest window) plus parameters and
inherited states (`train_memory_bytes`) beside the process's peak resident set (`peak_mem_bytes`);
on a GPU, the allocator's peak. Each table is printed and written as CSV beside the runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

VARIANTS = {
    "flare_full_history": "Full-History",
    "flare_recent_only": "Recent-Only",
    "flare": "FlareDTDG",
    "flare_artifact": "FlareDTDG (artifact schedule)",
    "flare_no_shrink": "w/o shrinking",
    "flare_overlap_rr": "overlap rr",
    "flare_overlap_mlp": "overlap mlp",
}
PAPER_TABLE6 = "paper, table 6 (soc-flickr): T-GCN 0.0562 / 0.1395 / 0.0876, MPNN-LSTM 0.0597 / 0.6867 / 0.0543, EvolveGCN 0.2932 / 0.7289 / 0.3081"
PAPER_TABLE7 = "paper, table 7: FlareDTDG uses 66.7% to 70.6% less GPU memory than Full-History"
PAPER_TABLE8 = "paper, tables 8-11: time -63.1% to -71.9% vs Full-History; shrinking -5.3% to -25.3%; overlap -6.9% to -20.4% communication"
PAPER_TABLE12 = "paper, table 12 (MPNN-LSTM): chunking 0.5-1%, shuffle 0.3-0.4%, remap 12-18%, fwd 22-27%, bwd 46-50%, comm 1-14%, load 4-7%"


def runs(results: Path) -> list[tuple[dict, pd.DataFrame]]:
    found = []
    for summary_path in sorted(results.glob("*/summary.json")):
        summary = json.loads(summary_path.read_text())
        if summary.get("status") == "ok":
            found.append((summary, pd.read_parquet(summary_path.parent / "metrics.parquet")))
    if not found:
        raise SystemExit(f"flare_tables: no completed runs under {results}: run the sweep first")
    return found


def epoch_value(metrics: pd.DataFrame, metric: str, over_ranks: str = "max") -> float:
    """The median over steady epochs (after the first, when there are more) of the per-epoch value."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric)]
    if rows.empty:
        return float("nan")
    steady = rows[rows.epoch >= 1] if rows.epoch.nunique() > 1 else rows
    return float(steady.groupby("epoch")["value"].agg(over_ranks).median())


def variant_table(results: Path) -> pd.DataFrame:
    rows = []
    for summary, metrics in runs(results):
        rows.append({
            "model": summary["model"],
            "variant": VARIANTS.get(summary["sched"], summary["sched"]),
            "world_size": summary["world_size"],
            "test_mse": (summary.get("eval") or {}).get("value"),
            "epoch_time_s": summary.get("epoch_time_s"),
            "train_memory_mb": epoch_value(metrics, "train_memory_bytes") / 2**20,
            "peak_rss_mb": epoch_value(metrics, "peak_mem_bytes") / 2**20,
            "halo_s": epoch_value(metrics, "halo_s", "mean"),
            "halo_mb": epoch_value(metrics, "bytes_halo", "sum") / 2**20,
        })  # fmt: skip
    return pd.DataFrame(rows)


def relative(table: pd.DataFrame, column: str, baseline: str) -> pd.Series:
    base = table[table.variant == baseline].set_index("model")[column]
    return table[column] / table["model"].map(base)


def accuracy(results: Path) -> pd.DataFrame:
    table = variant_table(results).pivot_table(index="model", columns="variant", values="test_mse")
    print(PAPER_TABLE6)
    return table


def memory(results: Path) -> pd.DataFrame:
    table = variant_table(results)[["model", "variant", "train_memory_mb", "peak_rss_mb"]].copy()
    table["vs_full_history"] = relative(table, "train_memory_mb", "Full-History")
    print(PAPER_TABLE7)
    return table.sort_values(["model", "variant"])


def timing(results: Path) -> pd.DataFrame:
    table = variant_table(results)[["model", "variant", "epoch_time_s", "halo_s", "halo_mb", "test_mse"]].copy()
    if (table.variant == "Full-History").any():
        table["vs_full_history"] = relative(table, "epoch_time_s", "Full-History")
    table["vs_flare"] = relative(table, "epoch_time_s", "FlareDTDG")
    table["halo_s_vs_flare"] = relative(table, "halo_s", "FlareDTDG")
    print(PAPER_TABLE8)
    return table.sort_values(["model", "variant"])


def breakdown(results: Path) -> pd.DataFrame:
    rows = []
    phases = ["shuffle_s", "remap_s", "load_s", "forward_s", "backward_s", "halo_s"]
    for summary, metrics in runs(results):
        if summary["sched"] != "flare":
            continue
        seconds = {p: epoch_value(metrics, p, "mean") for p in phases}
        chunking = metrics[(metrics.metric == "partition_s")]["value"]
        seconds["chunking_s"] = float(chunking.iloc[0]) / max(summary["epochs_completed"], 1) if not chunking.empty else float("nan")
        total = summary["epoch_time_s"]
        rows.append({"model": summary["model"], "epoch_time_s": total, **{k.removesuffix("_s") + "_%": 100 * v / total for k, v in seconds.items()}})
    print(PAPER_TABLE12 + " (chunking here: the one partition spread over the run's epochs)")
    return pd.DataFrame(rows)


def heatmap(results: Path) -> pd.DataFrame:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for summary, metrics in runs(results):
        sched = OmegaConf.load(results / summary["run_id"] / "config.yaml").sched
        rows.append({
            "K": int(sched.full), "alpha": float(sched.alpha), "test_mse": (summary.get("eval") or {}).get("value"), "epoch_time_s": summary["epoch_time_s"],
            "train_memory_mb": epoch_value(metrics, "train_memory_bytes") / 2**20,
        })  # fmt: skip
    table = pd.DataFrame(rows).sort_values(["K", "alpha"])
    figure, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for axis, column in zip(axes, ("test_mse", "train_memory_mb", "epoch_time_s")):
        grid = table.pivot_table(index="K", columns="alpha", values=column)
        image = axis.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap="viridis")
        axis.set_xticks(range(len(grid.columns)), [f"{a:g}" for a in grid.columns])
        axis.set_yticks(range(len(grid.index)), [str(k) for k in grid.index])
        axis.set_xlabel("alpha")
        axis.set_ylabel("K (full snapshots)")
        axis.set_title(column)
        figure.colorbar(image, ax=axis)
    figure.tight_layout()
    figure.savefig(results / "flare_heatmap.png", dpi=120)
    print(f"figure: {results / 'flare_heatmap.png'} (paper, figure 8: MSE, memory and time over K x alpha)")
    return table


def scaling(results: Path) -> pd.DataFrame:
    table = variant_table(results)[["model", "variant", "world_size", "epoch_time_s", "train_memory_mb", "halo_mb"]]
    table = table.sort_values(["model", "world_size"]).reset_index(drop=True)
    one = table[table.world_size == 1].set_index("model")["epoch_time_s"]
    table["speedup_vs_1_rank"] = table["model"].map(one) / table["epoch_time_s"]
    print("paper, figure 7: near-linear scaling to 16 GPUs; here 2 CPU ranks share 2 cores")
    return table


TABLES = {"accuracy": accuracy, "memory": memory, "time": timing, "breakdown": breakdown, "heatmap": heatmap, "scaling": scaling}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", choices=sorted(TABLES))
    parser.add_argument("results_dir", type=Path)
    args = parser.parse_args(argv)
    table = TABLES[args.table](args.results_dir)
    out = args.results_dir / f"flare_{args.table}.csv"
    # a named index (the model of a pivot) is a column of the CSV; a plain row number is not
    (table.reset_index() if any(table.index.names) else table).to_csv(out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(table.to_string())
    print(f"\nwritten {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
