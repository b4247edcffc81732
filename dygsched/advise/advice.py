"""The advice: every prediction ranked, one recommendation with its reason, a tidy table and a figure.

``Advice.table`` is tidy: one row per strategy and GPU count, with its predicted epoch time and its
parts, its peak memory per GPU against the memory it has (``fits``), its traffic per epoch (total,
and each kind as a ``traffic_<kind>`` column), what it changes in training, and, where it cannot run
there, why. ``rank`` orders the strategies that run and fit on each GPU count, fastest first. The
recommendation is the fastest that fits on the largest GPU count asked for; its reason names the
term that sets it apart from the runner-up. Nothing here imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.advise.pricing import Prediction, Target

ADVICE_PARQUET = "advice.parquet"
ADVICE_CSV = "advice.csv"
ADVICE_PNG = "advice.png"


def size(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def seconds(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Advice:
    """The predictions of one model on one dataset, with what they were made for."""

    predictions: tuple[Prediction, ...]
    targets: tuple[Target, ...]
    context: Mapping[str, Any] = field(default_factory=dict)  # dataset, model, task, device, ...

    def memory_limit(self, gpus: int) -> int:
        return next(t.memory_bytes for t in self.targets if t.gpus == gpus)

    @property
    def table(self) -> pd.DataFrame:
        rows = []
        kinds = sorted({kind for p in self.predictions for kind in p.traffic})
        for p in self.predictions:
            limit = self.memory_limit(p.gpus)
            fits = None if p.peak_memory_bytes is None or not p.runs else bool(p.peak_memory_bytes <= limit)
            target = next(t for t in self.targets if t.gpus == p.gpus)
            rows.append(
                {
                    **{key: value for key, value in self.context.items() if isinstance(value, (str, int, float))},
                    "target_gpu": target.gpu_name or str(self.context.get("device", "")),
                    "link": target.link.name if p.gpus > 1 else "",
                    "nodes": target.nodes,
                    "sched": p.strategy,
                    "family": p.family,
                    "gpus": p.gpus,
                    "runs": p.runs,
                    "epoch_time_s": p.epoch_time_s if p.runs else math.nan,
                    "compute_s": p.compute_s,
                    "communication_s": p.communication_s,
                    "overhead_s": p.overhead_s,
                    "steps": p.steps,
                    "peak_memory_bytes": p.peak_memory_bytes if p.peak_memory_bytes is not None else math.nan,
                    "memory_limit_bytes": limit,
                    "fits": fits,
                    "traffic_bytes": p.traffic_bytes if p.runs else math.nan,
                    **{f"traffic_{kind}": float(p.traffic.get(kind, 0.0)) if p.runs else math.nan for kind in kinds},
                    "training": p.training,
                    "exact": p.exact,
                    "reason": p.reason,
                    "terms": p.terms,
                }
            )
        table = pd.DataFrame(rows)
        if table.empty:
            return table
        ranked = table[table.runs & (table.fits != False)]  # noqa: E712 (None: memory not predicted)
        table["rank"] = ranked.groupby("gpus")["epoch_time_s"].rank(method="min").reindex(table.index)
        return table.sort_values(["gpus", "rank", "sched"], na_position="last").reset_index(drop=True)

    # ---- the recommendation ---------------------------------------------------------------------
    def ranked(self, gpus: int) -> list[Prediction]:
        """The strategies that run and fit on ``gpus``, fastest first."""
        limit = self.memory_limit(gpus)
        fitting = [
            p
            for p in self.predictions
            if p.gpus == gpus and p.runs and (p.peak_memory_bytes is None or p.peak_memory_bytes <= limit)
        ]
        return sorted(fitting, key=lambda p: (p.epoch_time_s or math.inf, p.strategy))

    def recommendation(self) -> str:
        """One line: the fastest strategy that fits on the largest GPU count asked for, and why."""
        gpus = max(t.gpus for t in self.targets)
        ranked = self.ranked(gpus)
        if not ranked:
            return f"no strategy runs and fits on {gpus} GPU(s): see the reasons in the table"
        best = ranked[0]
        line = f"use sched={best.strategy} on {gpus} GPU(s): {seconds(best.epoch_time_s)} s per epoch"
        if len(ranked) > 1:
            second = ranked[1]
            factor = (second.epoch_time_s or math.inf) / max(best.epoch_time_s or math.inf, 1e-12)
            line += f", {factor:.2f}x faster than {second.strategy}, because {why(best, second)}"
        else:
            line += ", the only one that runs and fits"
        if not best.exact:
            exact = next((p for p in ranked if p.exact), None)
            line += f"; it changes training ({best.training})"
            if exact is not None:
                line += f"; the fastest exact one is {exact.strategy} ({seconds(exact.epoch_time_s)} s)"
        if best.peak_memory_bytes is not None:
            line += f"; {size(best.peak_memory_bytes)} of {size(self.memory_limit(gpus))} per GPU"
        return line

    # ---- output ------------------------------------------------------------------------------------
    def text(self) -> str:
        """The ranked table per GPU count, as printed."""
        lines = []
        header = (
            f"{'gpus':>4} {'rank':>4}  {'sched':<13}{'epoch s':>9}{'compute':>9}{'comm':>9}"
            f"{'memory/GPU':>12}{'fits':>5}{'traffic':>10}  training"
        )
        lines.append(header)
        table = self.table
        for _, row in table.iterrows():
            if not row["runs"]:
                lines.append(f"{row['gpus']:>4} {'-':>4}  {row['sched']:<13}cannot run: {row['reason']}")
                continue
            fits = {True: "yes", False: "NO", None: "?"}.get(row["fits"], "?")
            rank = "-" if row["rank"] != row["rank"] else f"{int(row['rank'])}"
            lines.append(
                f"{row['gpus']:>4} {rank:>4}  {row['sched']:<13}{seconds(row['epoch_time_s']):>9}{seconds(row['compute_s']):>9}"
                f"{seconds(row['communication_s']):>9}{size(row['peak_memory_bytes']):>12}{fits:>5}"
                f"{size(row['traffic_bytes']):>10}  {row['training']}"
            )
        return "\n".join(lines)

    def write(self, folder: Path) -> dict[str, Path]:
        """``advice.parquet`` (the tidy table), ``advice.csv`` (the same) and ``advice.png`` (the figure)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        table = self.table
        written = {}
        for name, writer in ((ADVICE_PARQUET, table.to_parquet), (ADVICE_CSV, table.to_csv)):
            path = folder / name
            temporary = path.with_name(f".{name}.tmp")
            writer(temporary, index=False)
            temporary.replace(path)
            written[name] = path
        figure = folder / ADVICE_PNG
        plot(table, figure, title=self.title())
        written[ADVICE_PNG] = figure
        return written

    def title(self) -> str:
        context = self.context
        gpu = self.targets[0].gpu_name or context.get("device", "this device")
        return f"{context.get('model', '')} on {context.get('dataset', '')}: predicted on {gpu}"


def why(best: Prediction, second: Prediction) -> str:
    """The term that sets ``best`` apart from ``second`` (the largest difference of the three)."""
    parts = {
        "compute": (best.compute_s, second.compute_s),
        "communication": (best.communication_s, second.communication_s),
        "optimizer steps": (best.overhead_s, second.overhead_s),
    }
    name, (mine, theirs) = max(parts.items(), key=lambda item: abs(item[1][1] - item[1][0]))
    if name == "compute":
        detail = REASONS.get(best.family, "its units are cheaper to compute")
    elif name == "communication":
        detail = "it moves less between ranks, or waits less for what it moves"
    else:
        detail = f"it takes fewer optimizer steps ({best.steps} against {second.steps})"
    return f"{detail} ({name} {seconds(mine)} s against {seconds(theirs)} s)"


REASONS = {
    "sequential": "its plan balances the groups' measured times over the ranks",
    "reuse": "its plan balances measured times and its reuse engine shares overlapping groups' work",
    "blad": "its pipeline overlaps the next group's loading and message passing with the current group",
    "flare": "each rank computes only its part of the nodes, and the older snapshots on fewer of them",
    "distdy": "each rank samples and encodes only the targets its store holds",
    "node_memory": "its steps compute less per event",
}


def plot(table: pd.DataFrame, out: Path, title: str = "") -> None:
    """Epoch time and peak memory per GPU against the GPU count, one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    runs = table[table.runs] if not table.empty else table
    for sched, rows in runs.groupby("sched", sort=False):
        rows = rows.sort_values("gpus")
        left.plot(rows.gpus, rows.epoch_time_s, marker="o", label=sched)
        memory = rows.dropna(subset=["peak_memory_bytes"])
        if not memory.empty:
            right.plot(memory.gpus, memory.peak_memory_bytes / 2**30, marker="o", label=sched)
    if not table.empty:
        limits = table.groupby("gpus")["memory_limit_bytes"].first().sort_index()
        right.plot(limits.index, limits.values / 2**30, "k--", label="memory per GPU")
    for ax, label in ((left, "predicted epoch time (s)"), (right, "predicted peak memory per GPU (GiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("GPUs")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=110)
    finally:
        plt.close(fig)


def by_gpus(predictions: Sequence[Prediction]) -> dict[int, list[Prediction]]:
    out: dict[int, list[Prediction]] = {}
    for prediction in predictions:
        out.setdefault(prediction.gpus, []).append(prediction)
    return out
