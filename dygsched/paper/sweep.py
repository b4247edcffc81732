"""Running a target's training sweep: the Hydra compose API and the same ``run(cfg)`` that
``dygsched run`` runs, one job after another as ``dygsched run -m`` would (``a,b`` and ``range()``
expand), every run into one results folder that keeps one ``runs.parquet``.

Every point of the sweep is composed and checked before the first one trains, so a bad override is
one line and nothing half-written. A sweep that finished writes ``sweep.json`` (what it ran); a
folder with the same record is reused, any other is moved aside and the sweep runs anew, so a crashed
sweep never leaves duplicate rows behind.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dygsched.paper.provenance import commit
from dygsched.paper.target import Overrides, Sweep

RECORD = "sweep.json"
log = logging.getLogger("dygsched")


def override_key(override: str) -> str:
    """``+smoke=x`` -> ``smoke``; ``sched.alpha=0.1,0.3`` -> ``sched.alpha``."""
    return override.split("=", 1)[0].lstrip("+~")


def with_overrides(run: Overrides, extra: Overrides) -> Overrides:
    """``run`` with each of ``extra`` in place of the override of the same key, or appended: a user's
    ``sched=psg,greedy`` replaces the sweep's strategies, ``dataset=twitter_tennis`` adds a setting."""
    replaced = {override_key(o): o for o in extra}
    kept = tuple(replaced.pop(override_key(o), o) for o in run)
    return (*kept, *(o for o in extra if override_key(o) in replaced))


def planned_runs(sweep: Sweep, smoke: bool, extra: Overrides = ()) -> list[Overrides]:
    """The multiruns this sweep runs, in order: its runs (or smoke runs) once per round, each with
    the user's ``extra`` overrides in place (``with_overrides``)."""
    runs = sweep.smoke if smoke else sweep.runs
    rounds = sweep.smoke_rounds if smoke else sweep.rounds
    return [with_overrides(run, extra) for _ in range(rounds) for run in runs]


def command_lines(sweep: Sweep, results: Path, smoke: bool, extra: Overrides = ()) -> list[str]:
    """Each multirun as the ``dygsched run -m`` line that would run it by hand."""
    folder = results / sweep.folder
    return [
        shlex.join(["dygsched", "run", "-m", *run, f"results_dir={folder}", "progress=false"])
        for run in planned_runs(sweep, smoke, extra)
    ]


def is_complete(sweep: Sweep, results: Path, smoke: bool, extra: Overrides = ()) -> bool:
    record = results / sweep.folder / RECORD
    if not record.is_file() or not (results / sweep.folder / "runs.parquet").is_file():
        return False
    try:
        return json.loads(record.read_text()).get("runs") == [list(run) for run in planned_runs(sweep, smoke, extra)]
    except ValueError:
        return False


def _points(run: Overrides, folder: Path) -> list[tuple[list[str], Any]]:
    """Every job of one multirun, composed and checked now (a bad override: one line, nothing run)."""
    from dygsched.launch.sweeps import checked_points, sweep_points

    return checked_points(sweep_points([*run, f"results_dir={folder}", "progress=false"]))


def run_sweep(sweep: Sweep, results: Path, smoke: bool, extra: Overrides = ()) -> Path:
    """Run the sweep into ``<results>/<folder>`` unless it is there complete; returns the folder.
    A run that fails stops the sweep with its one-line error (the runs before it stay recorded)."""
    from dygsched.launch.app import run

    folder = results / sweep.folder
    if is_complete(sweep, results, smoke, extra):
        log.info("sweep %s: complete, reused", folder)
        return folder
    multiruns = planned_runs(sweep, smoke, extra)
    jobs = [job for run in multiruns for job in _points(run, folder)]  # all checked before the first trains
    if folder.exists():
        aside = folder.with_name(f"{folder.name}.incomplete-{time.strftime('%Y%m%d-%H%M%S')}")
        folder.rename(aside)
        log.info("sweep %s: an earlier, incomplete sweep moved aside to %s", folder, aside)
    folder.mkdir(parents=True)
    started, begin = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    for number, (point, cfg) in enumerate(jobs, start=1):
        log.info(
            "sweep: run %d of %d: %s",
            number,
            len(jobs),
            " ".join(o for o in point if not o.startswith(("results_dir=", "progress="))),
        )
        run(cfg, overrides=point, settings_checked=True)  # checked_points ran precheck on every point
    made = {"commit": commit(), "started": started, "wall_s": round(time.perf_counter() - begin, 1)}
    (folder / RECORD).write_text(json.dumps({"runs": [list(run) for run in multiruns], **made}, indent=2))
    return folder


def sweep_made(sweep: Sweep, results: Path) -> dict[str, Any]:
    """When and at what commit the sweep's runs were made, and in how many seconds, from its record
    (``None`` for what a record written before these were kept does not say)."""
    try:
        raw = json.loads((results / sweep.folder / RECORD).read_text())
    except (OSError, ValueError):
        raw = {}
    return {"folder": sweep.folder, **{key: raw.get(key) for key in ("commit", "started", "wall_s")}}
