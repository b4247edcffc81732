"""Full graphs against diff maps plus degrees, per dataset (REAL tables 4 and 5).

For each dataset config: the bytes of every snapshot's full graph against the first snapshot
plus the diff maps and the touched nodes' degrees that REAL's reuse engine keeps instead, and the
time preprocessing takes to build the diff maps. Writes a tidy CSV and prints it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from dygsched.data.diffmap import build_diff_maps, memory_report
from dygsched.data.loading import load_graph
from dygsched.errors import DygschedError
from dygsched.launch.hydra_app import compose_config

DEFAULT_DATASETS = ("synthetic", "synthetic_arxiv", "twitter_tennis", "england_covid")


def row(dataset: str) -> dict:
    cfg = compose_config([f"dataset={dataset}"])
    graph = load_graph(cfg.dataset)
    diffs = build_diff_maps(graph)
    report = memory_report(graph, diffs)
    return {"dataset": dataset, "nodes": graph.num_nodes, **report}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default=",".join(DEFAULT_DATASETS), help="comma-separated dataset configs")
    parser.add_argument("--out", type=Path, default=Path("results/table_reuse_memory.csv"))
    args = parser.parse_args(argv)
    try:
        table = pd.DataFrame([row(name) for name in args.datasets.split(",") if name])
    except DygschedError as exc:
        print(f"table_reuse_memory: error: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
