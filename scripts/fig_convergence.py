"""Training loss and test metric per epoch for every strategy (DyGNeX figure 3, REAL figure 14).

Reads every run folder under a results directory (see `make fig-convergence`), writes a tidy CSV
of the curves and one PNG with a panel per (dataset, model) and metric.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def curves(results_dir: Path) -> pd.DataFrame:
    frames = []
    for summary_path in sorted(results_dir.glob("*/summary.json")):
        summary = json.loads(summary_path.read_text())
        metrics_path = summary_path.parent / "metrics.parquet"
        if summary.get("status") != "ok" or not metrics_path.exists():
            continue
        metrics = pd.read_parquet(metrics_path)
        epoch_rows = metrics[(metrics["iteration"] == -1) & (metrics["rank"] == 0)]
        wanted = ((epoch_rows["phase"] == "train") & (epoch_rows["metric"] == "loss")) | (
            (epoch_rows["phase"] == "test") & (epoch_rows["metric"] != "loss")
        )
        rows = epoch_rows[wanted].assign(dataset=summary["dataset"], model=summary["model"], sched=summary["sched"])
        frames.append(rows[["dataset", "model", "sched", "epoch", "phase", "metric", "value"]])
    if not frames:
        raise SystemExit(f"no completed runs under {results_dir}: run the sweep first")
    return pd.concat(frames, ignore_index=True)


def plot(data: pd.DataFrame, out: Path) -> None:
    panels = data.groupby(["dataset", "model", "phase", "metric"], sort=True)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for ax, ((dataset, model, phase, metric), frame) in zip(axes[0], panels):
        for sched, curve in frame.groupby("sched"):
            curve = curve.sort_values("epoch")
            ax.plot(curve["epoch"] + 1, curve["value"], marker="o", markersize=3, label=sched)
        ax.set_title(f"{dataset} / {model}: {phase} {metric}", fontsize=9)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results_dir", type=Path)
    args = parser.parse_args(argv)
    data = curves(args.results_dir)
    data.to_csv(args.results_dir / "convergence.csv", index=False)
    out = args.results_dir / "convergence.png"
    plot(data, out)
    final = data.sort_values("epoch").groupby(["dataset", "model", "sched", "phase", "metric"], observed=True)["value"].last()
    print(final.unstack(["phase", "metric"]).to_string(float_format="{:.4f}".format))
    print(f"\nwritten {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
