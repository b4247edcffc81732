"""Where a memory-based model's training epoch goes: seconds per phase, one process.

Builds the run exactly as `dygsched run sched=single` does (the same config, data, strategy,
model and optimizer) and trains epochs through the strategy's own loop, with its methods timed
from the outside (a clock read around each call, a few per batch; nothing inside the loop changes):

    sampling      events, negatives, recent neighbours and the series (``inputs``)
    memory        the memory updater over the series' distinct (vertex, time) pairs (``memory_of``)
    embedding     the temporal attention or embedding of the roots and the link scores (``embed``, ``score``)
    backward      the loss's backward pass
    state writes  mails and memory written back (``aggregate``)
    optimizer     the optimizer step and gradient reset (``finish_iteration``)
    rest          everything else in the epoch (loss, dedup of roots, bookkeeping)

The first epoch is a warm-up; the table reports the median of the others per phase.

    python scripts/profile_stream_epoch.py --dataset wikipedia_like --model tgn --epochs 3
    python scripts/profile_stream_epoch.py --dataset reddit_like --model tgn --epochs 2 --out results/profile.csv
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dygsched.data.loading import load_data
from dygsched.engine.build import build_model, build_optimizer, build_strategy
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.strategy import Artifacts, Epoch, RunContext
from dygsched.engine.worker import seed_everything
from dygsched.launch.compose import compose_run

PHASES = ("sampling", "memory", "embedding", "backward", "state writes", "optimizer", "rest")


def timed(seconds: dict[str, float], phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[phase] += time.perf_counter() - start

    return call


def profile(overrides: list[str], epochs: int) -> list[dict[str, float]]:
    run = compose_run(["sched=single", "world_size=1", *overrides])
    data = load_data(run.dataset)
    strategy = build_strategy(run.sched)
    strategy.check(data, run, 1)
    device = torch.device("cpu")
    strategy.setup(RunContext(data, run, 0, 1, device, Artifacts(None, True)))
    seed_everything(run.seed)
    module = strategy.objective(build_model(run.model, data))
    optimizer = build_optimizer(run.optim, module.parameters())
    sync = GradientSync(module, 1)
    model = strategy.model

    seconds: dict[str, float] = defaultdict(float)
    strategy.inputs = timed(seconds, "sampling", strategy.inputs)
    strategy.memory.memory_of = timed(seconds, "memory", strategy.memory.memory_of)
    strategy.memory.aggregate = timed(seconds, "state writes", strategy.memory.aggregate)
    model.embed = timed(seconds, "embedding", model.embed)
    model.score = timed(seconds, "embedding", model.score)
    per_epoch = []
    for index in range(epochs):
        seconds.clear()
        epoch = Epoch(index, module, optimizer, sync, device, 0, 1, lambda stats: None, lambda *row: None)
        epoch.backward = timed(seconds, "backward", epoch.backward)
        epoch.finish_iteration = timed(seconds, "optimizer", epoch.finish_iteration)
        start = time.perf_counter()
        strategy.run_epoch(epoch)
        total = time.perf_counter() - start
        row = {phase: seconds.get(phase, 0.0) for phase in PHASES[:-1]}
        row["rest"] = total - sum(row.values())
        row["epoch"] = total
        per_epoch.append(row)
        print(
            f"epoch {index + 1}/{epochs}: {total:.1f} s  " + "  ".join(f"{k} {v:.1f}" for k, v in row.items() if k != "epoch"),
            flush=True,
        )
    return per_epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="wikipedia_like")
    parser.add_argument("--model", default="tgn")
    parser.add_argument("--epochs", type=int, default=3, help="the first is a warm-up")
    parser.add_argument("--out", type=Path, help="append the medians to this CSV")
    parser.add_argument("overrides", nargs="*", help="further config overrides (key=value)")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (the first is a warm-up)")
    rows = profile([f"dataset={args.dataset}", f"model={args.model}", *args.overrides], args.epochs)
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
