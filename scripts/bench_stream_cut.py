"""How long cutting a REDDIT-sized stream into daily snapshots takes: ours (``stream_cut``), a plain
pandas group-by, and UTG's own discretisation (TGX's ``Graph.discretize``, the call UTG's loaders
make), in alternated rounds; the median and range of each, whether the three give the same
snapshots (distinct edges per snapshot), and what ours holds in memory.

UTG's code is not part of this project. ``--tgx-python`` names a Python that can import TGX (with
``--tgx-path``, the folder of a TGX checkout to put on its path); each of its rounds reads the same
events, written as the ``src,dst,t`` CSV TGX reads, and times ``discretize`` alone. Without it the
TGX column is recorded as missing.

Usage: python scripts/bench_stream_cut.py [--dataset reddit_like] [--unit daily] [--rounds 5]
       [--tgx-python PY] [--tgx-path DIR] [--out results/bench_stream_cut.csv]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dygsched.data.events import EventStream
from dygsched.data.loading import load_data
from dygsched.data.stream_cut import cut_stream
from dygsched.data.time_cut import UNITS, TimeCut
from dygsched.launch.compose import compose_run

# Run by --tgx-python: TGX reads the file (not timed), then its discretize is timed.
TGX_ROUND = """
import contextlib, io, json, sys, time
if sys.argv[3]:
    sys.path.insert(0, sys.argv[3])
import tgx
with contextlib.redirect_stdout(io.StringIO()):
    graph = tgx.Graph(fname=sys.argv[1])
    start = time.perf_counter()
    cut, _ = graph.discretize(time_scale=sys.argv[2], store_unix=True)
    seconds = time.perf_counter() - start
bins = sorted(cut.data)
print(json.dumps({"seconds": seconds, "bins": bins, "edges": [len(cut.data[b]) for b in bins]}))
"""


def ours(stream: EventStream, unit: str) -> tuple[float, list[int]]:
    start = time.perf_counter()
    graph = cut_stream(stream, TimeCut.unit(unit))
    return time.perf_counter() - start, [s.num_edges for s in graph.snapshots]


def pandas_group_by(frame: pd.DataFrame, unit: str) -> tuple[float, list[int]]:
    """UTG's rule as one group-by: the window of each event, then its distinct (src, dst) pairs."""
    start = time.perf_counter()
    whole = np.floor(frame["t"].to_numpy())
    window = np.ceil((whole - whole.min()) / UNITS[unit]).astype(np.int64)
    pairs = frame.assign(window=window).groupby(["window", "src", "dst"]).size()
    edges = pairs.groupby(level="window").size()
    return time.perf_counter() - start, edges.tolist()


def tgx_round(python: str, path: str, csv: Path, unit: str) -> tuple[float, list[int]]:
    done = subprocess.run([python, "-c", TGX_ROUND, str(csv), unit, path], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench_stream_cut: TGX failed: {done.stderr.strip().splitlines()[-1:]}")
    result = json.loads(done.stdout)
    if result["bins"] != list(range(len(result["bins"]))):
        raise SystemExit("bench_stream_cut: TGX's windows have a gap; UTG's loaders refuse such a cut")
    return float(result["seconds"]), list(result["edges"])


def memory(stream: EventStream, unit: str) -> tuple[int, int, int]:
    """(bytes the snapshots hold, of which features, the peak of the cut's numpy allocations). Torch's
    own allocations during the cut (boolean checks while validating) are not traced; they are per snapshot."""
    tracemalloc.start()
    graph = cut_stream(stream, TimeCut.unit(unit))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    buffers = {}
    for snapshot in graph.snapshots:
        for tensor in (snapshot.edge_index, snapshot.edge_weight, snapshot.x, snapshot.y, snapshot.node_mask):
            storage = tensor.untyped_storage()
            buffers[storage.data_ptr()] = storage.nbytes()  # the snapshots share their features' buffer
    features = sum(snapshot.x.nbytes for snapshot in graph.snapshots)
    return sum(buffers.values()), features, peak


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s (range {min(values):.3f}-{max(values):.3f}, {len(values)} rounds)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_stream_cut")
    parser.add_argument("--dataset", default="reddit_like")
    parser.add_argument("--unit", default="daily", choices=list(UNITS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tgx-python", default=None, help="a Python that imports TGX (UTG's discretisation)")
    parser.add_argument("--tgx-path", default="", help="a TGX checkout to put on that Python's path")
    parser.add_argument("--out", default="results/bench_stream_cut.csv")
    parser.add_argument("--torch-threads", type=int, default=None, help="torch's intra-op threads (default: torch's own)")
    args = parser.parse_args(argv)
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)

    stream = load_data(compose_run([f"dataset={args.dataset}"]).dataset)
    assert isinstance(stream, EventStream)
    frame = pd.DataFrame({"src": stream.src.numpy(), "dst": stream.dst.numpy(), "t": stream.t.numpy()})
    plain = dataclasses.replace(stream, edge_features=None)
    print(
        f"{args.dataset}: {stream.num_events:,} events, {stream.num_nodes:,} nodes, {stream.edge_dim} features, cut {args.unit}"
    )

    methods = {
        "ours": lambda: ours(stream, args.unit),
        "ours, degree features only": lambda: ours(plain, args.unit),
        "pandas group-by": lambda: pandas_group_by(frame, args.unit),
    }
    with tempfile.TemporaryDirectory() as scratch:
        csv = Path(scratch) / "events.csv"
        if args.tgx_python:
            frame.to_csv(csv, index=False)
            methods["UTG (TGX discretize)"] = lambda: tgx_round(args.tgx_python, args.tgx_path, csv, args.unit)
        names = list(methods)
        seconds: dict[str, list[float]] = {name: [] for name in names}
        edges: dict[str, list[int]] = {}
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:  # each round starts with the next method
                took, counts = methods[name]()
                seconds[name].append(took)
                edges[name] = counts
    snapshots = len(edges["ours"])
    same = {
        name: counts[:snapshots] == edges["ours"] and len(counts) in (snapshots, snapshots + 1) for name, counts in edges.items()
    }
    held, features, peak = memory(stream, args.unit)
    rows = [
        {
            "method": name,
            "median_s": statistics.median(seconds[name]),
            "min_s": min(seconds[name]),
            "max_s": max(seconds[name]),
            "rounds": len(seconds[name]),
            "same_snapshots": same[name],
        }
        for name in names
    ]
    if not args.tgx_python:
        rows.append(
            {
                "method": "UTG (TGX discretize)",
                "median_s": float("nan"),
                "min_s": float("nan"),
                "max_s": float("nan"),
                "rounds": 0,
                "same_snapshots": None,
            }
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out, index=False)
    for name in names:
        print(f"  {name:<28} {spread(seconds[name])}  same snapshots as ours: {same[name]}")
    if not args.tgx_python:
        print("  UTG (TGX discretize)         missing: no --tgx-python given")
    print(f"  {snapshots} snapshots (+ the window that gives the last one's targets), {sum(edges['ours']):,} distinct edges")
    mib = 2**20
    print(f"  ours holds {held / mib:.0f} MiB ({features / mib:.0f} MiB of node features); numpy peak {peak / mib:.0f} MiB")
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"  torch threads {torch.get_num_threads()}; the machine's load average (1, 5, 15 min): {load}")
    print(f"  table in {args.out}")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
