"""One metric over the epochs of several runs, drawn into a PNG (``dygsched runs --plot``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.errors import ConfigError
from dygsched.metrics.recorder import EPOCH_LEVEL

PHASE_PREFERENCE = ("val", "train", "test", "plan")  # where a metric recorded in several phases is read


def epoch_series(metrics: pd.DataFrame, metric: str, phase: str | None) -> tuple[str, pd.Series] | None:
    """``(phase, value per epoch)`` of ``metric`` in one run's metrics table (the mean over the
    ranks that recorded it; epochs it was not measured in are NaN), or ``None`` if it has none."""
    rows = metrics[(metrics["metric"] == metric) & (metrics["iteration"] == EPOCH_LEVEL)]
    phases = [p for p in PHASE_PREFERENCE if p in set(rows["phase"])] if phase is None else [phase]
    rows = rows[rows["phase"] == phases[0]] if phases else rows.iloc[0:0]
    if rows.empty:
        return None
    return phases[0], rows.groupby("epoch")["value"].mean()


def epoch_axis(axes: Any) -> None:
    """An x axis of epochs counted from 1, ticked at whole epochs only (no tick at 1.5)."""
    from matplotlib.ticker import MaxNLocator

    axes.set_xlabel("epoch (counted from 1)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))


def plot_runs(runs: pd.DataFrame, results: Path, metric: str, phase: str | None, out: Path) -> tuple[Path, list[str]]:
    """Draw ``metric`` (in ``phase``, else the first of val, train, test that has it) for every run
    of ``runs`` whose folder has it; returns the file and one note per run left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.2))
    notes, drawn, shown_phases, known = [], 0, set(), set()
    for run in runs.itertuples(index=False):
        path = Path(results) / str(run.run_id) / "metrics.parquet"
        try:
            metrics = pd.read_parquet(path)
        except Exception:  # a run without its folder, or a damaged table: said, not fatal
            notes.append(f"{run.run_id}: no readable {path.name}")
            continue
        known.update(metrics.loc[metrics["iteration"] == EPOCH_LEVEL, "metric"].unique())
        found = epoch_series(metrics, metric, phase)
        if found is None:
            notes.append(f"{run.run_id}: no {metric}" + (f" in phase {phase}" if phase else ""))
            continue
        run_phase, values = found
        shown_phases.add(run_phase)
        label = f"{run.run_id} ({getattr(run, 'model', '?')}, {getattr(run, 'sched', '?')})"
        axes.plot(values.index + 1, values.to_numpy(), marker="o", markersize=3, label=label)
        drawn += 1
    if not drawn:
        plt.close(figure)
        choices = ", ".join(sorted(known)) if known else "none (no run folder could be read)"
        raise ConfigError(f"no selected run has the metric {metric!r} at epoch level; metrics recorded: {choices}")
    epoch_axis(axes)
    axes.set_ylabel(f"{'/'.join(sorted(shown_phases))} {metric} (mean over ranks)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    from dygsched.metrics.atomic import write_with

    write_with(out, lambda tmp: figure.savefig(tmp, dpi=120, format="png"))
    plt.close(figure)
    return out, notes
