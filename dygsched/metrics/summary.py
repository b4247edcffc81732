"""The headline figures of a run, computed from its tidy metric table.

A figure whose rows are missing (NaN: the strategy did not measure it, see ``run_info["missing"]``)
is ``None``, never 0. Bytes are the exception that proves the rule: every byte a strategy moves
between ranks or to a device goes through a counted path, so a kind a strategy never moves (PSG's
hidden states) is a measured 0.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dygsched.metrics.recorder import EPOCH_LEVEL, EVAL_TIME

BYTE_KINDS = (
    "allreduce",
    "hidden_state",
    "features",
    "host_to_device",
    "halo",
)  # always shown; a strategy's own `bytes_<kind>` joins them
# Per epoch and rank, each reset at the epoch's start: the GPU allocator's peak (GPU runs only), the
# process's peak resident set, and the bytes autograd saved for the backward (where a strategy counts them).
MEMORY_METRICS = ("gpu_peak_allocated_bytes", "peak_rss_bytes", "saved_for_backward_bytes")


def _steady(frame: pd.DataFrame, first_steady_epoch: int = 1) -> pd.DataFrame:
    """Epochs from ``first_steady_epoch`` on (after warm-up and profiling), or all when none are."""
    later = frame[frame["epoch"] >= first_steady_epoch]
    return later if not later.empty else frame


def _measured(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["value"].notna()]


def summarize(frame: pd.DataFrame, run_info: dict[str, Any]) -> dict[str, Any]:
    epochs = frame[frame["iteration"] == EPOCH_LEVEL]

    def epoch_metric(phase: str, metric: str) -> pd.DataFrame:
        return epochs[(epochs["phase"] == phase) & (epochs["metric"] == metric)]

    switch = epoch_metric("plan", "switch_epoch")
    switch_epoch = int(switch["value"].iloc[0]) if not switch.empty else None
    steady_from = max(1, switch_epoch or 0)
    epoch_time = _steady(epoch_metric("train", "epoch_time_s"), steady_from)
    busy = _steady(epoch_metric("train", "busy_s"), steady_from)
    steady_ratio = busy.groupby("epoch")["value"].agg(lambda v: v.max() / v.min() if v.min() > 0 else float("nan"))
    solve_time = epoch_metric("plan", "solve_time_s")

    train_loss = epoch_metric("train", "loss").sort_values("epoch")
    last_epoch = int(epochs["epoch"].max()) if not epochs.empty else -1
    # the epoch whose test metrics the run reports: with early stopping, its best validation epoch
    # (DyGLib's and TGB's model selection), else its last
    best = (run_info.get("early_stop") or {}).get("best_epoch")
    eval_epoch = int(best) if best is not None else last_epoch
    tested = epochs[(epochs["phase"] == "test") & (epochs["epoch"] == eval_epoch)]
    # the headline: the first task metric ("loss[historical]" is a loss too; the evaluation's time is no task metric)
    test = tested[(tested["metric"].str.split("[", regex=False).str[0] != "loss") & (tested["metric"] != EVAL_TIME)]

    comm = dict.fromkeys(BYTE_KINDS, 0)  # every kind, so "PSG sends no hidden state" reads as 0
    recorded = epochs.loc[epochs["metric"].str.startswith("bytes_"), "metric"].unique() if not epochs.empty else []
    for kind in [*BYTE_KINDS, *sorted(m.removeprefix("bytes_") for m in recorded if m.removeprefix("bytes_") not in BYTE_KINDS)]:
        rows = epoch_metric("train", f"bytes_{kind}")
        if not rows.empty:
            comm[kind] = int(_steady(rows, steady_from).groupby("epoch")["value"].sum().median())

    def largest(metric: str) -> int | None:
        rows = _measured(epoch_metric("train", metric))
        return int(rows["value"].max()) if not rows.empty else None

    flops = _measured(epoch_metric("train", "conv_flops"))
    preprocess = _measured(epoch_metric("train", "reuse_preprocess_s"))
    case = _measured(epoch_metric("train", "reuse_case")).sort_values("epoch")

    return {
        **run_info,
        "epochs_completed": int(epochs["epoch"].nunique()) if not epochs.empty else 0,
        "epoch_time_s": float(epoch_time["value"].median()) if not epoch_time.empty else None,
        "imbalance_ratio": float(steady_ratio.median()) if not steady_ratio.empty else None,
        "final_train_loss": float(train_loss["value"].iloc[-1]) if not train_loss.empty else None,
        "eval": {"split": "test", "metric": str(test["metric"].iloc[0]), "value": float(test["value"].iloc[0])}
        if not test.empty
        else None,
        "eval_epoch": eval_epoch if not tested.empty else None,
        # every test metric of that epoch (None: not measured, e.g. ap_inductive with no new node)
        "test_metrics": {
            str(metric): (None if pd.isna(value) else float(value))
            for metric, value in tested.groupby("metric", sort=True)["value"].first().items()
        },
        "comm_bytes_per_epoch": comm,
        # memory, each measure under its own name, the largest over epochs and ranks (None: not measured)
        **{metric: largest(metric) for metric in MEMORY_METRICS},
        "switch_epoch": switch_epoch,
        "plan_solve_time_s": float(solve_time["value"].iloc[0]) if not solve_time.empty else None,
        # graph-convolution FLOPs of the forward passes, all ranks (REAL figure 11)
        "conv_flops_per_epoch": float(_steady(flops, steady_from).groupby("epoch")["value"].sum().median())
        if not flops.empty
        else None,
        "reuse_preprocess_s": float(preprocess["value"].max()) if not preprocess.empty else None,
        # REAL 4.1.2's case the reuse engine ran layer 0 in, the last epoch's (1: project first, 2: aggregate first)
        "reuse_case": int(case["value"].iloc[-1]) if not case.empty else None,
    }
