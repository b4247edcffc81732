"""The planner benchmark from the command line: the whole suite (``--quick`` leaves out its two
slowest sizes), one instance (``--only trend-100-8``), certified bounds (``--certify SECONDS``,
``--certify-configurations SECONDS``, up to ``--certify-max-groups`` groups). The benchmark itself is
``dygsched.paper.planner.run_benchmark``; ``dygsched paper bench-planner`` builds the report's table.
Exits 1 when a planner target (a FAIL line) is not met, 2 when ``--only`` names no instance.

Usage: python scripts/bench_planner.py [--quick] [--certify SECONDS] [--certify-configurations SECONDS] [--only NAME] [--out CSV]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dygsched.errors import ConfigError
from dygsched.paper.planner import BENCH_CSV, run_benchmark


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_planner")
    parser.add_argument("--quick", action="store_true", help="leave out the suite's two slowest sizes")
    parser.add_argument(
        "--out", default=f"results/{BENCH_CSV}", help="the table (the synthetic graphs' sizes are cached beside it)"
    )
    parser.add_argument(
        "--certify", type=float, default=0.0, help="seconds for the iteration bound per certified instance (0: off)"
    )
    parser.add_argument(
        "--certify-configurations",
        type=float,
        default=0.0,
        help="seconds for the configuration bound per certified instance (0: off)",
    )
    parser.add_argument("--certify-max-groups", type=int, default=1_000)
    parser.add_argument("--only", default=None, help="keep only the instances of this name")
    args = parser.parse_args(argv)
    try:
        met = run_benchmark(
            Path(args.out), args.quick, args.only, args.certify, args.certify_configurations, args.certify_max_groups
        )
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
