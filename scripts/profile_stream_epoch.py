"""Where a memory-based model's training epoch goes: seconds per phase, one process.

Builds the run exactly as `dygsched run sched=single` does (the same config, data, strategy,
model and optimizer) and trains epochs through the strategy's own loop, unchanged. The loop has no
timer per phase (its own clocks are the step's ``busy_s`` and ``comm_s``), so the standard
library's profiler (``cProfile``) records every call of the epoch, and a phase is the inclusive
time of the calls that make it:

    sampling      events, negatives, recent neighbours and the series (the strategy's ``inputs``)
    memory        the memory updater over the series' distinct (vertex, time) pairs (the backend's ``memory_of``)
    embedding     the temporal attention or embedding of the roots and the link scores (the model's ``embed``, ``score``)
    backward      the loss's backward pass (``Epoch.backward``)
    state writes  mails and memory written back (the backend's ``aggregate``)
    optimizer     the optimizer step and gradient reset (``Epoch.finish_iteration``)
    rest          everything else in the epoch (loss, dedup of roots, bookkeeping)

The profiler adds a constant cost to every Python call, so the phases made of many small calls
(sampling, rest) read higher than in a plain run; compare runs of this script with each other, not
with a run's epoch time. It profiles the calling thread: a backend that prepares batches on a
thread of its own (Sven's prefetch) would hide its sampling, so the run is ``sched=single``
unless an override names another strategy, and a non-memory model is refused in one line.

The first epoch is a warm-up; the table reports the median of the others per phase.

    python scripts/profile_stream_epoch.py --dataset wikipedia_like --model tgn --epochs 3
    python scripts/profile_stream_epoch.py --dataset reddit_like --model tgn --epochs 2 --out results/profile.csv
"""

from __future__ import annotations

import argparse
import cProfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dygsched.data.loading import load_data
from dygsched.engine.build import build_model, build_optimizer, build_strategy
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
from dygsched.engine.strategy import Artifacts, Epoch, IterationStats, RunContext
from dygsched.engine.worker import seed_everything
from dygsched.errors import ConfigError, DygschedError
from dygsched.launch.compose import compose_run
from dygsched.models.memory_base import MemoryModel

PHASES = ("sampling", "memory", "embedding", "backward", "state writes", "optimizer", "rest")


def phase_seconds(profiler: cProfile.Profile, functions: dict[str, list[Callable[..., Any]]]) -> dict[str, float]:
    """Each phase's inclusive seconds: the total time of its functions' outermost calls (no phase's
    function calls another's)."""
    codes = {id(function.__code__): phase for phase, group in functions.items() for function in group}
    seconds = dict.fromkeys(functions, 0.0)
    for entry in profiler.getstats():
        phase = codes.get(id(entry.code))
        if phase is not None:
            seconds[phase] += entry.totaltime
    return seconds


def profile(overrides: list[str], epochs: int) -> list[dict[str, float]]:
    run = compose_run(["sched=single", "world_size=1", *overrides])
    strategy = build_strategy(run.sched)
    if not isinstance(strategy, NodeMemoryStrategy):
        raise ConfigError(f"sched={run.sched.name} is not a node-memory strategy: this script profiles their loop")
    data = load_data(run.dataset)
    strategy.check(data, run, 1)
    device = torch.device("cpu")
    strategy.setup(RunContext(data, run, 0, 1, device, Artifacts(None, True)))
    seed_everything(run.seed)
    model = build_model(run.model, data)
    if not isinstance(model, MemoryModel):
        raise ConfigError(
            f"model={run.model.name} is {type(model).__name__}: this script profiles a memory-based model (tgn, jodie, apan)"
        )
    module = strategy.objective(model)
    optimizer = build_optimizer(run.optim, module.parameters())
    sync = GradientSync(module, 1)
    backend = type(strategy.memory)
    functions: dict[str, list[Callable[..., Any]]] = {
        "sampling": [NodeMemoryStrategy.inputs],
        "memory": [backend.memory_of],
        "embedding": [type(model).embed, type(model).score],
        "backward": [Epoch.backward],
        "state writes": [backend.aggregate],
        "optimizer": [Epoch.finish_iteration],
    }
    per_epoch = []
    for index in range(epochs):
        epoch = Epoch(index, module, optimizer, sync, device, 0, 1, ignore_iteration, ignore_row)
        profiler = cProfile.Profile(builtins=False)  # C functions count in their Python caller
        start = time.perf_counter()
        profiler.enable()
        strategy.run_epoch(epoch)
        profiler.disable()
        total = time.perf_counter() - start
        row = phase_seconds(profiler, functions)
        row["rest"] = total - sum(row.values())
        row["epoch"] = total
        per_epoch.append(row)
        print(
            f"epoch {index + 1}/{epochs}: {total:.1f} s  " + "  ".join(f"{k} {v:.1f}" for k, v in row.items() if k != "epoch"),
            flush=True,
        )
    return per_epoch


def ignore_iteration(stats: IterationStats) -> None:
    """The epoch's per-step rows: this script reads its own clock."""


def ignore_row(phase: str, metric: str, value: float) -> None:
    """The epoch's extra rows: none is reported here."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="wikipedia_like")
    parser.add_argument("--model", default="tgn")
    parser.add_argument("--epochs", type=int, default=3, help="the first is a warm-up")
    parser.add_argument("--out", type=Path, help="append the medians to this CSV")
    parser.add_argument("overrides", nargs="*", help="further config overrides (key=value)")
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (the first is a warm-up)")
    try:
        rows = profile([f"dataset={args.dataset}", f"model={args.model}", *args.overrides], args.epochs)
    except DygschedError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    medians = pd.DataFrame(rows[1:]).median()
    table = pd.DataFrame({"phase": [*PHASES, "epoch"], "seconds": [medians[p] for p in (*PHASES, "epoch")]}).assign(
        share=lambda t: t["seconds"] / medians["epoch"], dataset=args.dataset, model=args.model, threads=torch.get_num_threads()
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, mode="a", header=not args.out.exists(), index=False)


if __name__ == "__main__":
    main()
