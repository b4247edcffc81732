"""What link prediction costs a snapshot epoch, and what the stored one-vs-many negatives hold.

1. **Scoring's share of an epoch.** The Wikipedia-sized stream (``wikipedia_like``) cut daily, T-GCN,
   PSG's loop on one process (each training group a forward, a backward and a step, in time order;
   each evaluated group scored alone). ``task=link`` and the node task's regression on the same cut
   are timed in alternated rounds (each round starts with the other task): the training epoch, and
   the evaluation of validation and test (link: every positive against ``--one-vs-many`` stored
   negatives). In the link epochs the time is split where the embedding meets the decoder: the
   model's forward and backward, and the scoring (the decoder on the positives and their training
   negatives, its loss and their backward; in evaluation the one-vs-many scores and the ranks). The
   split backward is the same chain rule as one backward (the embedding's gradient, then the model's).
2. **The stored negatives' memory.** For each of ``--memory-datasets`` (Wikipedia's and REDDIT's
   sizes cut daily) and each of ``--counts``: generating them (TGB's ``hist_rnd``, the int32 table),
   writing TGB's files, and reading them back as a run does, each timed, with the peak resident set
   above what the process held before (Linux's ``VmHWM``, reset before each step), the files' bytes,
   and the bytes the run keeps (destinations int64 and their presence mask).

Figures go to ``--out`` (two CSVs) and to stdout; docs/measurements.md holds a sitting's.

Usage: python scripts/bench_link_cost.py [--dataset wikipedia_like] [--unit daily] [--rounds 3]
       [--one-vs-many 1000] [--memory-datasets wikipedia_like,reddit_like] [--counts 1000,100]
       [--skip-epochs] [--skip-memory] [--out results/bench_link_cost]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from dygsched.data.link_negatives import generate, stored
from dygsched.data.link_targets import link_events
from dygsched.data.loading import for_task, load_data
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.data.tgb_negatives import PHASE_FILES, read_phase_negatives
from dygsched.engine.build import build_model
from dygsched.engine.distributed import peak_rss, reset_memory_peaks
from dygsched.engine.link_objective import evaluated_ranges
from dygsched.engine.objective import GroupObjective, build_split, group_objective
from dygsched.engine.run_config import RunConfig
from dygsched.launch.compose import compose_run
from dygsched.models.dgnn import DGNN

CPU = torch.device("cpu")
MIB = 2**20


class Clock:
    """Seconds summed per part: ``with clock.part("scoring"): ...``."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        yield
        self.parts[name] = self.parts.get(name, 0.0) + time.perf_counter() - began


def run_config(dataset: str, unit: str, task: str, one_vs_many: int, seed: int) -> RunConfig:
    overrides = [f"dataset={dataset}", f"dataset.snapshot={unit}", "model=tgcn", f"task={task}", f"seed={seed}", "world_size=1"]
    if task == "link":
        overrides.append(f"eval.one_vs_many={one_vs_many}")
    return compose_run(overrides)


class Setup:
    """One task's graph (the same cut), split, objective and optimizer."""

    def __init__(self, cut: TemporalGraph, settings: RunConfig) -> None:
        graph = for_task(cut, TemporalGraph, settings)
        assert isinstance(graph, TemporalGraph)
        self.graph, self.split = graph, build_split(graph, settings)
        torch.manual_seed(settings.seed)
        model = build_model(settings.model, graph)
        assert isinstance(model, DGNN)
        self.objective: GroupObjective = group_objective(model, graph, self.split, settings)
        self.optimizer = torch.optim.Adam(self.objective.parameters(), lr=0.01)
        self.link = settings.task == "link"

    def train_epoch(self, epoch: int, clock: Clock | None) -> float:
        """One epoch, PSG's order; with ``clock``, the link loss split into the model's part and the scoring."""
        self.objective.train()
        self.objective.start_epoch(epoch)
        began = time.perf_counter()
        for group in self.split.train:
            snapshots = group.snapshots(self.graph)
            self.optimizer.zero_grad()
            if clock is None:
                self.objective(snapshots).backward()
            else:
                with clock.part("model"):
                    z = self.objective.model(snapshots)
                cut = z.detach().requires_grad_()
                with clock.part("scoring"):
                    self.objective.loss_from_predictions(cut, snapshots[-1]).backward()
                with clock.part("model"):
                    z.backward(cut.grad)
            self.optimizer.step()
        return time.perf_counter() - began

    def evaluate(self, clock: Clock | None) -> float:
        """Validation and test, each group alone; with ``clock``, the model's forwards apart from the scoring."""
        self.objective.eval()
        began = time.perf_counter()
        clock = clock or Clock()  # unsplit: the same calls, their split not read
        with torch.no_grad():
            for phase in ("val", "test"):
                evaluation = self.objective.phase_evaluation(phase)
                for group in self.split.phase(phase):
                    snapshots = group.snapshots(self.graph)
                    with clock.part("model"):
                        z = self.objective.model(snapshots)
                    with clock.part("scoring"):
                        evaluation.add(z, snapshots[-1])
                with clock.part("scoring"):
                    evaluation.metrics(shared=True)
        return time.perf_counter() - began


def spread(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def epoch_shares(args: argparse.Namespace) -> pd.DataFrame:
    config = run_config(args.dataset, args.unit, "link", args.one_vs_many, args.seed)
    began = time.perf_counter()
    cut = load_data(config.dataset)
    assert isinstance(cut, TemporalGraph)
    took = time.perf_counter() - began
    print(f"{args.dataset} cut {args.unit}: {cut.num_snapshots} snapshots, {cut.num_nodes:,} nodes (loaded in {took:.1f} s)")
    tasks = {"link": Setup(cut, config), "node": Setup(cut, run_config(args.dataset, args.unit, "node", 0, args.seed))}
    link = tasks["link"]
    pairs = sum(int(s.links.shape[1]) for s in link.graph.snapshots if s.links is not None)
    print(f"  link targets: {pairs:,} pairs; training groups {len(link.split.train)}, window {link.split.train[0].size}")
    link.evaluate(None)  # the stored negatives are generated (once, into the cache) and read before any timing
    seconds: dict[tuple[str, str], list[float]] = {}
    shares: dict[str, list[float]] = {"train": [], "eval": [], "epoch": []}
    for r in range(args.rounds):
        for name in ("link", "node") if r % 2 == 0 else ("node", "link"):
            setup = tasks[name]
            seconds.setdefault((name, "train"), []).append(setup.train_epoch(r, None))
            seconds.setdefault((name, "eval"), []).append(setup.evaluate(None))
        train, evaluation = Clock(), Clock()  # the link epoch split: model / scoring
        trained, evaluated = link.train_epoch(r, train), link.evaluate(evaluation)
        shares["train"].append(train.parts["scoring"] / trained)
        shares["eval"].append(evaluation.parts["scoring"] / evaluated)
        shares["epoch"].append((train.parts["scoring"] + evaluation.parts["scoring"]) / (trained + evaluated))
        train_share, eval_share = 100 * shares["train"][-1], 100 * shares["eval"][-1]
        print(f"  round {r + 1}: scoring {train_share:.1f}% of training, {eval_share:.1f}% of evaluation")
    rows = []
    for (name, part), values in seconds.items():
        median, low, high = spread(values)
        rows.append({"measure": f"{name} {part} (s)", "median": median, "min": low, "max": high, "rounds": len(values)})
    for part, values in shares.items():
        median, low, high = spread(values)
        rows.append(
            {"measure": f"scoring share of the link {part}", "median": median, "min": low, "max": high, "rounds": len(values)}
        )
    return pd.DataFrame(rows)


def stored_negatives_memory(args: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for dataset in args.memory_datasets.split(","):
        settings = run_config(dataset, args.unit, "link", 1, args.seed)
        graph = for_task(load_data(settings.dataset), TemporalGraph, settings)
        assert isinstance(graph, TemporalGraph)
        split = build_split(graph, settings)
        events = link_events(graph)
        _, phases, train_stop = evaluated_ranges(graph, split)
        positives = sum(stop - first for first, stop in phases.values())
        for count in (int(c) for c in args.counts.split(",")):
            gc.collect()
            with tempfile.TemporaryDirectory() as scratch:
                measured: dict[str, Any] = {"dataset": dataset, "cut": args.unit, "negatives": count, "positives": positives}
                assert reset_memory_peaks(CPU), "this system cannot reset the process's peak resident set"
                held = _resident()
                began = time.perf_counter()
                tables = generate(events, train_stop, phases, count, args.seed)
                measured["generate_s"] = time.perf_counter() - began
                measured["table_mib"] = sum(t.nbytes for t in tables.values()) / MIB
                measured["generate_peak_mib"] = (peak_rss() - held) / MIB
                del tables
                gc.collect()
                reset_memory_peaks(CPU)
                held = _resident()
                began = time.perf_counter()
                prefix = stored(events, train_stop, phases, count, args.seed, Path(scratch))  # generates again, then writes
                measured["generate_and_write_s"] = time.perf_counter() - began
                measured["write_peak_mib"] = (peak_rss() - held) / MIB
                measured["files_mib"] = sum(Path(f.format(prefix=prefix)).stat().st_size for f in PHASE_FILES.values()) / MIB
                gc.collect()
                reset_memory_peaks(CPU)
                held = _resident()
                began = time.perf_counter()
                fixed = read_phase_negatives(prefix, events, phases)
                measured["read_s"] = time.perf_counter() - began
                measured["read_peak_mib"] = (peak_rss() - held) / MIB
                measured["kept_mib"] = sum(f.destinations.nbytes + f.present.nbytes for f in fixed.values()) / MIB
                del fixed
            rows.append(measured)
            print("  " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in measured.items()))
    return pd.DataFrame(rows)


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_link_cost")
    parser.add_argument("--dataset", default="wikipedia_like")
    parser.add_argument("--unit", default="daily")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-vs-many", type=int, default=1000)
    parser.add_argument("--memory-datasets", default="wikipedia_like,reddit_like")
    parser.add_argument("--counts", default="1000,100")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-epochs", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--out", default="results/bench_link_cost")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        if not args.skip_epochs:
            shares = epoch_shares(args)
            shares.to_csv(out / "epoch_shares.csv", index=False)
            print(shares.to_string(index=False))
        if not args.skip_memory:
            memory = stored_negatives_memory(args)
            memory.to_csv(out / "stored_negatives.csv", index=False)
            print(memory.to_string(index=False))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"torch threads {torch.get_num_threads()}; the machine's load average (1, 5, 15 min): {load}; tables in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
