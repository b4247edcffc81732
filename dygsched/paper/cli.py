"""``dygsched paper``: list the paper targets, or build the missing ones and render the report.

    dygsched paper                                  every target: paper, what it reproduces, minutes at full size, built or not
    dygsched paper table-sven-comm                  build it if its outputs are missing, then render results/report/
    dygsched paper all --smoke                      every target at tiny sizes, under results/smoke/ (what CI runs)
    dygsched paper all --reuse                      only render what results/ holds
    dygsched paper table-epoch-time --rerun         build it again, its sweep too
    dygsched paper table-epoch-time --set sched=psg,greedy dataset=twitter_tennis   in place of the sweep's own, or added
    dygsched paper table-sven-comm --set ranks=2,4,8  a builder setting
    dygsched paper table-sven-comm --in-process     build in this process (a debugger steps into the builder)

The report comes after the paper stage and renders what it built, so this module does not import it:
``dygsched.cli`` hands ``main`` the report's ``render``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from dygsched.arguments import CommandParser
from dygsched.errors import ConfigError
from dygsched.paper.target import PaperTarget


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="dygsched paper", description="List the paper targets, or build the missing ones and render the report."
    )
    parser.add_argument("targets", nargs="*", help="targets to build (`all`: every one); none: list them")
    parser.add_argument("--results", default="results", help="the results root (default: results)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, under <results>/smoke; the report says the numbers are not measurements"
    )
    parser.add_argument("--reuse", action="store_true", help="run nothing: render what the results root holds")
    parser.add_argument(
        "--rerun", action="store_true", help="build the named targets again, their sweeps too, even when their outputs are there"
    )
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="a builder setting (e.g. ranks=2,4) or an override for every run of the sweep, "
        "replacing the sweep's own for that key (e.g. sched=psg,greedy)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a line as each target starts and ends (default: on)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="build in this process, not one child process per target (to step into a builder)",
    )
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)  # the child process of one target
    return parser


def list_targets(results: Path) -> None:
    from dygsched.paper import registry

    titles = {section.key: section.title for section in registry.SECTIONS}
    print(f"{'target':<26} {'paper':<12} {'full size':<15} {'in ' + str(results):<12} reproduces")
    for paper_target in registry.TARGETS:
        state = "built" if not paper_target.missing_outputs(results) else "missing"
        print(
            f"{paper_target.name:<26} {titles[paper_target.paper]:<12} {paper_target.expected:<15} {state:<12} "
            f"{paper_target.reproduces}"
        )
    total = sum(t.minutes for t in registry.TARGETS)
    print(
        f"\n{len(registry.TARGETS)} targets, about {total / 60:.1f} h at full size on 2 CPU cores; "
        "`dygsched paper all --smoke` runs each at tiny sizes"
    )


def _forget(paper_target: PaperTarget, root: Path) -> None:
    """--rerun: remove the target's outputs and its sweep's folder (moved aside would pile up)."""
    for path in paper_target.outputs:
        (root / path).unlink(missing_ok=True)
    if paper_target.sweep is not None:
        shutil.rmtree(root / paper_target.sweep.folder, ignore_errors=True)


Render = Callable[[Path, bool], Path]  # (results root, smoke) -> the report folder


def main(argv: list[str], render: Render) -> int:
    """``dygsched paper``: build what is missing, then ``render(root, smoke)`` the report."""
    from dygsched.paper.build import build_target, results_root, split_overrides
    from dygsched.paper.registry import targets_named

    args = build_parser().parse_args(argv)
    results = Path(args.results)
    root = results_root(results, args.smoke)
    if not args.targets:
        list_targets(root)
        return 0
    chosen = targets_named(args.targets)
    extra = tuple(args.overrides)
    for paper_target in chosen:  # a setting no target has: one line before anything runs
        split_overrides(paper_target, args.smoke, extra)
    if args.build_only:
        for paper_target in chosen:
            build_target(paper_target, root, args.smoke, extra)
        return 0
    if args.reuse and args.rerun:
        raise ConfigError("--reuse renders only and --rerun builds again: choose one")
    ran = []
    if not args.reuse:
        from dygsched.paper.runner import run_missing

        if args.rerun:
            for paper_target in chosen:
                _forget(paper_target, root)
        ran = run_missing(chosen, results, args.smoke, extra, progress=args.progress, in_process=args.in_process)
    elif not root.is_dir():
        raise ConfigError(f"no results folder {root}: build the targets first (dygsched paper all)")
    folder = render(root, args.smoke)
    print(f"report: {folder / 'index.html'} (and README.md, runs.html)")
    failed = [
        record.target
        for record in ran
        if not record.ok and any(t.name == record.target and t.missing_outputs(root) for t in chosen)
    ]
    if failed:
        print(
            f"dygsched: error: {len(failed)} target(s) failed: {', '.join(failed)} (logs under {root / 'provenance'})",
            file=sys.stderr,
        )
        return 1
    return 0
