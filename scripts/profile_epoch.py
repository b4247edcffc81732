"""Where one training epoch's time goes, for one model on one rank: the loop PSG runs per group
(forward through the model's layer loop, loss, backward, optimizer step), timed by phase.

    python scripts/profile_epoch.py                                   # TGCN on twitter_tennis, hidden 64, windows of 4
    python scripts/profile_epoch.py --model mpnn_lstm --dataset synthetic20k

Phases, in ms per training group (median over ``--epochs`` after the first): ``spatial`` (each
layer's graph part: normalisation, aggregation and the input projections), ``temporal`` (the
recurrent updates), ``readout + loss``, ``backward``, ``optimizer`` and ``other`` (the rest of the
loop: fetching the group, Python between the phases). The engine's own timers
(``dygsched.engine.snapshot_groups.profiler``) do the timing, as in profiling epochs. What the framework adds
around this loop (metrics, gradient sync, timing) is the difference between this loop and a
``dygsched run``'s epoch time (``scripts/bench_vs_pygt.py`` prints that). Run it on two commits to
compare before and after.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

DATASETS = {
    "twitter_tennis": ["dataset=twitter_tennis"],
    "synthetic20k": ["dataset=synthetic", "dataset.num_nodes=20000", "dataset.avg_degree=8", "dataset.num_snapshots=16"],
}


def main(argv: list[str] | None = None) -> None:

    from dygsched.data.groups import sliding_groups, split_by_time
    from dygsched.data.loading import load_data
    from dygsched.engine.build import build_model
    from dygsched.engine.objective import GroupObjective
    from dygsched.engine.snapshot_groups.profiler import PhaseTimer, TimedHooks
    from dygsched.launch.compose import compose_run

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="twitter_tennis", choices=sorted(DATASETS))
    parser.add_argument("--model", default="tgcn")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args(argv)

    overrides = [
        *DATASETS[args.dataset],
        f"model={args.model}",
        f"model.hidden_channels={args.hidden}",
        f"model.num_layers={args.layers}",
        f"window={args.window}",
    ]
    run = compose_run(overrides)
    graph = load_data(run.dataset)
    groups = split_by_time(sliding_groups(graph.num_snapshots, args.window), run.split.train, run.split.val).train
    torch.manual_seed(0)
    objective = GroupObjective(build_model(run.model, graph), graph.task)
    optimizer = torch.optim.Adam(objective.parameters(), lr=run.optim.learning_rate)
    device = torch.device("cpu")
    per_epoch: list[dict[str, float]] = []
    for _ in range(args.epochs):
        timer = PhaseTimer(device, {name: 0.0 for name in ("spatial", "temporal", "readout + loss", "backward", "optimizer")})
        hooks = TimedHooks(timer)
        start = time.perf_counter()
        for group in groups:
            optimizer.zero_grad()
            snapshots = group.snapshots(graph)
            h, _ = objective.model.unroll(snapshots, hooks=hooks)
            with timer.phase("readout + loss"):
                loss = objective.loss_from_predictions(objective.model.readout(h), snapshots[-1])
            with timer.phase("backward"):
                loss.backward()
            with timer.phase("optimizer"):
                optimizer.step()
        seconds = dict(timer.seconds)
        seconds["total"] = time.perf_counter() - start
        seconds["other"] = seconds["total"] - sum(v for k, v in timer.seconds.items())
        per_epoch.append({k: v / len(groups) * 1e3 for k, v in seconds.items()})
    steady = per_epoch[1:] or per_epoch
    print(
        f"{args.model} on {args.dataset}: {len(groups)} training groups, hidden {args.hidden}, "
        f"{args.layers} layer(s), windows of {args.window}"
    )
    total = statistics.median(e["total"] for e in steady)
    for name in ("spatial", "temporal", "readout + loss", "backward", "optimizer", "other", "total"):
        value = statistics.median(e[name] for e in steady)
        print(f"  {name:<15}{value:>9.2f} ms/group {100 * value / total:>6.1f}%")


if __name__ == "__main__":
    main()
