"""Where one training epoch's time goes, for one model on one rank: the loop PSG runs per group
(forward through the model's layer loop, loss, backward, optimizer step), timed by phase.

    python scripts/profile_epoch.py                                   # TGCN on twitter_tennis, hidden 64, windows of 4
    python scripts/profile_epoch.py --model mpnn_lstm --dataset synthetic20k

Phases, in ms per training group (median over ``--epochs`` after the first): ``spatial`` (each
layer's graph part: normalisation, aggregation and the input projections), ``temporal`` (the
recurrent updates), ``readout + loss``, ``backward``, ``optimizer`` and ``other`` (the rest of the
loop: fetching the group, Python between the phases). The engine's own timers
(``dygsched.engine.snapshot_groups.profiler``) do the timing, as in profiling epochs. What the framework adds
around this loop (metrics, gradient sync, timing) is the difference between this loop and the
epoch time of ``dygsched run sched=single`` on the same settings. Run it on two commits to
compare before and after. A model that is not a snapshot model, or data that is not snapshots,
is refused in one line.
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
PHASES = ("spatial", "temporal", "readout + loss", "backward", "optimizer", "other")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="twitter_tennis", choices=sorted(DATASETS))
    parser.add_argument("--model", default="tgcn")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args(argv)

    from dygsched.errors import DygschedError

    try:
        profile(args)
    except DygschedError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")


def profile(args: argparse.Namespace) -> None:
    from dygsched.data.groups import sliding_groups, split_by_time
    from dygsched.data.loading import load_data
    from dygsched.data.temporal_graph import TemporalGraph
    from dygsched.engine.build import build_model
    from dygsched.engine.objective import GroupObjective
    from dygsched.engine.snapshot_groups.profiler import PhaseTimer, TimedHooks
    from dygsched.engine.timing import Tally, timed
    from dygsched.errors import ConfigError
    from dygsched.launch.compose import compose_run
    from dygsched.models.dgnn import DGNN

    overrides = [
        *DATASETS[args.dataset],
        f"model={args.model}",
        f"model.hidden_channels={args.hidden}",
        f"model.num_layers={args.layers}",
        f"window={args.window}",
    ]
    run = compose_run(overrides)
    graph = load_data(run.dataset)
    if not isinstance(graph, TemporalGraph):
        raise ConfigError(f"dataset {args.dataset} gives an event stream: this loop trains on snapshots")
    groups = split_by_time(sliding_groups(graph.num_snapshots, args.window), run.split.train, run.split.val).train
    if not groups:
        raise ConfigError(f"windows of {args.window} leave no training group on {graph.num_snapshots} snapshots")
    torch.manual_seed(0)
    model = build_model(run.model, graph)
    if not isinstance(model, DGNN):
        raise ConfigError(f"model={args.model} is {type(model).__name__}, not a snapshot model (a DGNN): PSG's loop trains those")
    objective = GroupObjective(model, graph.task)
    optimizer = torch.optim.Adam(objective.parameters(), lr=run.optim.learning_rate)
    device = torch.device("cpu")
    per_epoch: list[dict[str, float]] = []
    for _ in range(args.epochs):
        tally = Tally()  # the engine's phases (spatial, temporal, backward) and this loop's own two, in one tally
        timer = PhaseTimer(device, tally)
        hooks = TimedHooks(timer)
        start = time.perf_counter()
        for group in groups:
            optimizer.zero_grad()
            snapshots = group.snapshots(graph)
            h, _ = model.unroll(snapshots, hooks=hooks)
            with timed(device) as region:
                loss = objective.loss_from_predictions(model.readout(h), snapshots[-1])
            tally.add("readout + loss", region)
            with timer.phase("backward"):
                loss.backward()
            with timed(device) as region:
                optimizer.step()
            tally.add("optimizer", region)
        seconds = {name: tally.seconds(name) for name in PHASES[:-1]}
        seconds["total"] = time.perf_counter() - start
        seconds["other"] = seconds["total"] - sum(seconds[name] for name in PHASES[:-1])
        per_epoch.append({k: v / len(groups) * 1e3 for k, v in seconds.items()})
    steady = per_epoch[1:] or per_epoch
    print(
        f"{args.model} on {args.dataset}: {len(groups)} training groups, hidden {args.hidden}, "
        f"{args.layers} layer(s), windows of {args.window}"
    )
    total = statistics.median(e["total"] for e in steady)
    for name in (*PHASES, "total"):
        value = statistics.median(e[name] for e in steady)
        print(f"  {name:<15}{value:>9.2f} ms/group {100 * value / total:>6.1f}%")


if __name__ == "__main__":
    main()
