"""Running the paper targets that are missing, and recording how each result was made.

Each target runs through its own Make target (`make <name> RESULTS=<root> VAR=...`), so the report
runs exactly the command a reader would type; what it printed goes to
`<root>/provenance/<name>.log` and how it was made (the command, the recipe make expanded, the
commit, the machine, the date, the wall time, the exit status) to `<root>/provenance/<name>.json`.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from dygsched.report.targets import PaperTarget

PROVENANCE_DIR = "provenance"


@dataclass(frozen=True)
class Provenance:
    target: str
    command: str  # what to type to rebuild it
    recipe: tuple[str, ...]  # the commands make ran, variables expanded
    commit: str
    date: str  # UTC, ISO 8601, when the run started
    machine: str
    wall_s: float
    exit_code: int
    smoke: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def commit() -> str:
    """The checkout's commit, with `+changes` when tracked files differ from it; `unknown` outside git."""
    head = _git("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown"
    return head + ("+changes" if _git("status", "--porcelain", "--untracked-files=no") else "")


def machine() -> str:
    """CPU model and core count, and the GPUs when `nvidia-smi` lists any (torch is not imported here)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    described = f"{cpu}, {os.cpu_count()} cores, {platform.system()}"
    if shutil.which("nvidia-smi"):
        try:
            names = subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
            ).stdout.split("\n")
        except (OSError, subprocess.TimeoutExpired):
            names = []
        gpus = [name.strip() for name in names if name.strip()]
        if gpus:
            described += f"; GPUs: {', '.join(gpus)}"
    return described


def make_arguments(paper_target: PaperTarget, results: Path, smoke: bool) -> list[str]:
    variables = {"RESULTS": str(results), **(paper_target.smoke if smoke else {})}
    return [paper_target.name, *(f"{key}={value}" for key, value in variables.items())]


def missing_outputs(paper_target: PaperTarget, results: Path) -> list[str]:
    return [path for path in paper_target.outputs if not (results / path).is_file()]


def read_provenance(results: Path, name: str) -> Provenance | None:
    path = results / PROVENANCE_DIR / f"{name}.json"
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        raw["recipe"] = tuple(raw["recipe"])
        return Provenance(**raw)
    except (ValueError, TypeError, KeyError):
        return None


def run_target(paper_target: PaperTarget, results: Path, smoke: bool, make: str = "make") -> Provenance:
    """Run one target through make, its output to the log; the provenance is written even when it fails."""
    folder = results / PROVENANCE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    arguments = make_arguments(paper_target, results, smoke)
    dry = subprocess.run([make, "--no-print-directory", "-n", *arguments], capture_output=True, text=True)
    recipe = tuple(line for line in dry.stdout.splitlines() if line.strip())
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    begin = time.perf_counter()
    with open(folder / f"{paper_target.name}.log", "w") as log:
        done = subprocess.run([make, "--no-print-directory", *arguments], stdout=log, stderr=subprocess.STDOUT)
    exit_code = done.returncode
    missing = missing_outputs(paper_target, results)
    if exit_code == 0 and missing:
        exit_code = 3  # the recipe ran but did not write what the report reads
        with open(folder / f"{paper_target.name}.log", "a") as log:
            log.write(f"\nreport: make {paper_target.name} wrote none of {', '.join(missing)}\n")
    record = Provenance(
        target=paper_target.name,
        command=shlex.join(["make", *arguments]),
        recipe=recipe,
        commit=commit(),
        date=started,
        machine=machine(),
        wall_s=round(time.perf_counter() - begin, 1),
        exit_code=exit_code,
        smoke=smoke,
    )
    temporary = folder / f".{paper_target.name}.json.tmp"
    temporary.write_text(json.dumps(asdict(record), indent=2))
    temporary.replace(folder / f"{paper_target.name}.json")
    return record


def run_missing(
    targets: tuple[PaperTarget, ...], results: Path, smoke: bool, make: str = "make", progress: bool = True
) -> list[Provenance]:
    """Run every target with an output missing, in order. With ``progress``, one line on stderr as
    each target starts (which of how many, its expected time) and one as it ends (how, how long),
    then the tally: one line per event, on a terminal and in a log alike."""

    def say(line: str) -> None:
        if progress:
            print(line, file=sys.stderr, flush=True)

    ran, present, failed = [], 0, 0
    for number, paper_target in enumerate(targets, start=1):
        label = f"target {number} of {len(targets)}: {paper_target.name}"
        if not missing_outputs(paper_target, results):
            say(f"{label}: present, not rerun")
            present += 1
            continue
        say(f"{label} ({'smoke size' if smoke else paper_target.expected}) ...")
        record = run_target(paper_target, results, smoke, make)
        log = f"log: {results / PROVENANCE_DIR / paper_target.name}.log"
        if record.ok:
            status = "ok"
        elif not missing_outputs(paper_target, results):
            status = f"exit {record.exit_code} after writing its outputs (an unmet benchmark target?; {log})"
        else:
            status = f"FAILED (exit {record.exit_code}; {log})"
            failed += 1
        say(f"{label}: {status} in {wall_time(record.wall_s)}")
        ran.append(record)
    say(f"targets: {len(ran)} run ({len(ran) - failed} built, {failed} failed), {present} present")
    return ran


def wall_time(seconds: float) -> str:
    """``42 s`` under two minutes, else ``12.5 min``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
