"""How each result was made: ``<root>/provenance/<name>.json`` holds the ``dygsched paper`` command
that built a target, what it ran, the commit, the machine, the date, the wall time and the exit
status. It belongs to the stage that writes it (``dygsched.paper.runner``); the report only reads it."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROVENANCE_DIR = "provenance"


@dataclass(frozen=True)
class Provenance:
    target: str
    command: str  # what to type to rebuild it
    recipe: tuple[str, ...]  # what the command ran: its sweeps as `dygsched run -m` lines, then its builder
    commit: str
    date: str  # UTC, ISO 8601, when the run started
    machine: str
    wall_s: float
    exit_code: int
    smoke: bool
    # where the target's runs came from, when it has a sweep: made by this build, or reused from an
    # earlier one (its folder, commit, start and seconds; None where its record does not say)
    sweep: dict[str, Any] | None = None

    @property
    def reused_runs(self) -> bool:
        return bool(self.sweep and self.sweep.get("reused"))

    @property
    def resumed_runs(self) -> bool:
        """Whether the build finished a sweep that earlier sittings had begun."""
        return bool(self.sweep and not self.reused_runs and (self.sweep.get("sittings") or 1) > 1)

    @property
    def minutes_with_runs(self) -> float | None:
        """The build's minutes with those of the runs it reused, or of the earlier sittings of the sweep
        it resumed; ``None`` where their time is not recorded."""
        sweep = self.sweep or {}
        if not sweep:
            return self.wall_s / 60
        if self.reused_runs:
            earlier = sweep.get("wall_s")
        elif "earlier_wall_s" in sweep:
            earlier = sweep["earlier_wall_s"]
        else:  # a record from before sittings were counted: a sweep of unknown time had a sitting without record
            earlier = None if sweep.get("wall_s") is None else 0.0
        return None if earlier is None else (self.wall_s + float(earlier)) / 60

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the dygsched package whose code made the results


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30, cwd=PACKAGE_DIR)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def commit() -> str:
    """The commit of the checkout the running package comes from, with `+changes` when tracked files
    differ from it; an installed package that is no checkout's says its version instead."""
    head = _git("rev-parse", "--short=12", "HEAD")
    if not head or not _git("ls-files", "--", "__init__.py"):  # not inside a checkout, or not a tracked copy of the package
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"dygsched {version('dygsched')} (installed, not a git checkout)"
        except PackageNotFoundError:
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


def write_provenance(results: Path, record: Provenance) -> None:
    """``<results>/provenance/<target>.json``, written whole (a temporary file renamed into place)."""
    folder = results / PROVENANCE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{record.target}.json.tmp"
    temporary.write_text(json.dumps(asdict(record), indent=2))
    temporary.replace(folder / f"{record.target}.json")
