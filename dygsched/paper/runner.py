"""Running the targets that are missing, each recorded: what it printed to
``<root>/provenance/<name>.log`` and how it was made (the ``dygsched paper`` command, what it ran, the
commit, the machine, the date, the wall time, the exit status) to ``<root>/provenance/<name>.json``.

Each target runs in a child process of its own (``dygsched paper NAME --build-only``), so one that
fails, or holds memory, leaves the next one a clean process; tests run them in this process. A
benchmark that needs one ``dygsched run`` in a process of its own (its peak memory, a time limit)
starts it with ``run_in_process_of_its_own``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path

from dygsched.errors import DygschedError
from dygsched.paper.build import build_target, recipe, results_root, split_overrides
from dygsched.paper.provenance import PROVENANCE_DIR, Provenance, commit, machine, write_provenance
from dygsched.paper.sweep import RECORD, is_complete, sweep_made
from dygsched.paper.target import Overrides, PaperTarget


def paper_command(paper_target: PaperTarget, results: Path, smoke: bool, extra: Overrides = ()) -> list[str]:
    """The command that rebuilds the target, as a reader would type it."""
    return [
        "dygsched",
        "paper",
        paper_target.name,
        "--results",
        str(results),
        *(["--smoke"] if smoke else []),
        *(["--set", *extra] if extra else []),
    ]


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """This process's stdout and stderr into ``log``: Python's streams and the descriptors its child
    processes inherit."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "a", buffering=1) as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        try:
            with contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
                yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run_target(
    paper_target: PaperTarget, results: Path, smoke: bool, extra: Overrides = (), in_process: bool = False
) -> Provenance:
    """Build one target, its output to the log; the provenance is written even when it fails."""
    root = results_root(results, smoke)
    folder = root / PROVENANCE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{paper_target.name}.log"
    log.write_text("")
    command = paper_command(paper_target, results, smoke, extra)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    made_at = commit()  # the code that builds it, read before: the checkout may move on while it runs
    _, extra_overrides = split_overrides(paper_target, smoke, extra)
    sweep = paper_target.sweep
    reused = sweep is not None and is_complete(sweep, root, smoke, extra_overrides)
    begin = time.perf_counter()
    if in_process:
        exit_code = 0
        with _output_to(log):
            try:
                build_target(paper_target, root, smoke, extra)
            except SystemExit as exc:  # a benchmark's own exit status, as a child's would be
                exit_code = exc.code if isinstance(exc.code, int) else 1
                if not isinstance(exc.code, int) and exc.code is not None:
                    print(exc.code, file=sys.stderr)
            except Exception as exc:  # recorded in the log and the exit status, as a child's would be
                print(f"dygsched: error: {exc}", file=sys.stderr)
                exit_code = 1
    else:
        child = [sys.executable, "-m", "dygsched", *command[1:], "--build-only"]
        with open(log, "ab") as handle:
            exit_code = subprocess.run(child, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    missing = paper_target.missing_outputs(root)
    if exit_code == 0 and missing:
        exit_code = 3  # it ran but did not write what the report reads
        with open(log, "a") as handle:
            handle.write(f"\npaper: {paper_target.name} wrote none of {', '.join(missing)}\n")
    record = Provenance(
        target=paper_target.name,
        command=shlex.join(command),
        recipe=recipe(paper_target, root, smoke, extra),
        commit=made_at,
        date=started,
        machine=machine(),
        wall_s=round(time.perf_counter() - begin, 1),
        exit_code=exit_code,
        smoke=smoke,
        sweep={**sweep_made(sweep, root), "reused": reused} if sweep is not None else None,
    )
    write_provenance(root, record)
    return record


def run_missing(
    targets: tuple[PaperTarget, ...],
    results: Path,
    smoke: bool,
    extra: Overrides = (),
    progress: bool = True,
    in_process: bool = False,
) -> list[Provenance]:
    """Run every target with an output missing, in order. With ``progress``, one line on stderr as
    each target starts (which of how many, its expected time) and one as it ends (how, how long),
    then the tally: one line per event, on a terminal and in a log alike."""

    def say(line: str) -> None:
        if progress:
            print(line, file=sys.stderr, flush=True)

    root = results_root(results, smoke)
    ran, present, failed, unavailable = [], 0, 0, []
    for number, paper_target in enumerate(targets, start=1):
        label = f"target {number} of {len(targets)}: {paper_target.name}"
        grown = _sweep_grew(paper_target, root, smoke, extra)
        if not paper_target.missing_outputs(root) and not grown:
            say(f"{label}: present, not rerun" + (" (--rerun builds it again with --set)" if extra else ""))
            present += 1
            continue
        absent = paper_target.absent_needs()
        if absent:  # an optional dependency this environment lacks: the rest of the build goes on
            say(f"{label}: not built: {'; '.join(needed.sentence() for needed in absent)}")
            unavailable.append(paper_target.name)
            continue
        resumes = " (its sweep's runs changed since it was built: the runs still planned are kept)" if grown else ""
        say(f"{label} ({'smoke size' if smoke else paper_target.expected}){resumes} ...")
        record = run_target(paper_target, results, smoke, extra, in_process)
        log = f"log: {root / PROVENANCE_DIR / paper_target.name}.log"
        if record.ok:
            status = "ok"
        elif not paper_target.missing_outputs(root):
            status = f"exit {record.exit_code} after writing its outputs (an unmet benchmark target?; {log})"
        else:
            status = f"FAILED (exit {record.exit_code}; {log})"
            failed += 1
        say(f"{label}: {status} in {wall_time(record.wall_s)}")
        ran.append(record)
    not_built = f", {len(unavailable)} not built for want of a dependency ({', '.join(unavailable)})" if unavailable else ""
    say(f"targets: {len(ran)} run ({len(ran) - failed} built, {failed} failed), {present} present{not_built}")
    return ran


def _sweep_grew(paper_target: PaperTarget, root: Path, smoke: bool, extra: Overrides) -> bool:
    """Whether a built target's sweep is no longer the one it declares (a new version changed its
    runs), so that building it again resumes the sweep; with ``--set`` the user's runs stand until
    ``--rerun``."""
    sweep = paper_target.sweep
    if sweep is None or extra or not (root / sweep.folder / RECORD).is_file():
        return False
    return not is_complete(sweep, root, smoke)


def wall_time(seconds: float) -> str:
    """``42 s`` under two minutes, else ``12.5 min``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class BenchmarkRunFailed(DygschedError):
    """A ``dygsched run`` a benchmark needs did not finish."""


def run_in_process_of_its_own(overrides: Sequence[str], timeout_s: float | None = None) -> str:
    """``dygsched run`` with ``overrides`` in a child process; ``""`` when it finished, else why not
    (its last line of output, or the time limit it passed)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return f"over the time limit of {timeout_s:g} s"
    if done.returncode == 0:
        return ""
    last = (done.stderr or done.stdout).strip().splitlines()[-1:]
    return last[0] if last else f"exit {done.returncode}"


def run_or_fail(overrides: Sequence[str], what: str) -> None:
    reason = run_in_process_of_its_own(overrides)
    if reason:
        raise BenchmarkRunFailed(f"{what} failed: {reason}")
