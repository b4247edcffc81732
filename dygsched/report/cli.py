"""``dygsched report``: render what a results root holds into one static report (runs nothing).

    dygsched report                          render results/report/ from what results/ holds
    dygsched report results/smoke --smoke    the smoke run's report (numbers marked as not measurements)

``dygsched paper`` builds the targets that are missing and renders the same report.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dygsched.arguments import CommandParser
from dygsched.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="dygsched report",
        description="Render every paper target under a results root into one static report "
        "(dygsched paper builds what is missing).",
    )
    parser.add_argument("results", nargs="?", default="results", help="the results root (default: results)")
    parser.add_argument(
        "--smoke", action="store_true", help="say in the report that its numbers come from the smoke run's tiny sizes"
    )
    return parser


def main(argv: list[str]) -> int:
    from dygsched.report.render import render

    args = build_parser().parse_args(argv)
    results = Path(args.results)
    if not results.is_dir():
        raise ConfigError(f"no results folder {results}: build the targets first (dygsched paper all)")
    folder = render(results, smoke=args.smoke)
    print(f"report: {folder / 'index.html'} (and README.md, runs.html)")
    return 0
