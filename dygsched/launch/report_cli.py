"""``dygsched report``: render every paper target under a results root into one static report.

    dygsched report                          render results/report/ from what results/ holds
    dygsched report results/smoke --smoke    the smoke run's report (numbers marked as not measurements)
    dygsched report --run-missing            first run, through make, every target whose outputs are missing
    dygsched report --run-missing --only table-sven-comm,simulate
    dygsched report --run-missing --no-progress   no line per target (make paper PROGRESS=false)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dygsched.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dygsched report", description="Render every paper target under a results root into one static report.")
    parser.add_argument("results", nargs="?", default="results", help="the results root (default: results)")
    parser.add_argument("--run-missing", action="store_true", help="run every target with a missing output first (make <target>)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for every target (with --run-missing), and say so in the report")
    parser.add_argument("--only", default=None, help="comma-separated targets to run (with --run-missing); the report shows them all")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --run-missing, a line as each target starts (which of how many, its expected time) and ends (default: on)",
    )
    return parser


def main(argv: list[str]) -> int:
    from dygsched.report.provenance import missing_outputs, run_missing
    from dygsched.report.render import render
    from dygsched.report.targets import TARGETS, target

    args = build_parser().parse_args(argv)
    results = Path(args.results)
    chosen = TARGETS
    if args.only is not None:
        try:
            chosen = tuple(target(name.strip()) for name in args.only.split(",") if name.strip())
        except KeyError as exc:
            raise ConfigError(exc.args[0]) from None
    if args.run_missing:
        results.mkdir(parents=True, exist_ok=True)
        ran = run_missing(chosen, results, args.smoke, progress=args.progress)
    elif not results.is_dir():
        raise ConfigError(f"no results folder {results}: run the targets first (make paper, or dygsched report --run-missing)")
    else:
        ran = []
    folder = render(results, smoke=args.smoke)
    print(f"report: {folder / 'index.html'} (and README.md, runs.html)")
    failed = [record.target for record in ran if missing_outputs(target(record.target), results)]
    if failed:
        print(f"dygsched: error: {len(failed)} target(s) failed: {', '.join(failed)} (logs under {results / 'provenance'})", file=sys.stderr)
        return 1
    return 0
