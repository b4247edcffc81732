"""Running a target's training sweep: the Hydra compose API and the same ``run(cfg)`` that
``dygsched run`` runs, one job after another as ``dygsched run -m`` would (``a,b`` and ``range()``
expand), every run into one results folder that keeps one ``runs.parquet``.

Every point of the sweep is composed and checked before the first one trains, so a bad override is
one line and nothing half-written. A sweep that finished writes ``sweep.json`` (what it ran); a
folder with the same record is reused. A folder without it is an interrupted sweep: the runs it
finished whose configuration is one of the sweep's points (as composed, but for the run id, the
results folder and the progress switch) are kept and those points are not run again, so a sweep
longer than one sitting resumes where it stopped; its unfinished runs (their folders and rows) are
removed first, so no duplicate row is left behind. A folder holding none of the sweep's runs is
moved aside and the sweep runs anew. Each sitting's commit, start and seconds are kept
(``sweep.parts.json`` while it runs, ``parts`` in the record).
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dygsched.paper.provenance import commit
from dygsched.paper.target import Overrides, Sweep

if TYPE_CHECKING:
    from dygsched.engine.run_config import RunConfig

RECORD = "sweep.json"
PARTS = "sweep.parts.json"  # each sitting of a sweep not yet finished: its commit, start, seconds and runs
PER_INVOCATION = ("run_id", "results_dir", "progress")  # what differs between two runs of one point
SHIPPED_MARK = "/dygsched/data/shipped/"  # a dataset file inside the package, wherever the checkout is
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


def _points(run: Overrides, folder: Path) -> list[tuple[list[str], RunConfig]]:
    """Every job of one multirun, composed into its typed run and checked now (a bad override: one
    line, nothing run)."""
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
    done = finished_points(folder, [typed for _, typed in jobs]) if folder.exists() else {}
    if done:
        _drop_unfinished(folder, set(done.values()))
        log.info("sweep %s: resumed, %d of %d runs already finished", folder, len(done), len(jobs))
    elif folder.exists():
        aside = folder.with_name(f"{folder.name}.incomplete-{time.strftime('%Y%m%d-%H%M%S')}")
        folder.rename(aside)
        log.info("sweep %s: an earlier, incomplete sweep moved aside to %s", folder, aside)
    folder.mkdir(parents=True, exist_ok=True)
    parts = _read_parts(folder) if done else []
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    parts.append({"commit": commit(), "started": now, "wall_s": 0.0, "runs": 0})
    for number, (point, typed) in enumerate(jobs, start=1):
        if number - 1 in done:
            continue
        log.info(
            "sweep: run %d of %d: %s",
            number,
            len(jobs),
            " ".join(o for o in point if not o.startswith(("results_dir=", "progress="))),
        )
        begin = time.perf_counter()
        run(typed, overrides=point)  # each point composed, typed and checked once (checked_points)
        # to the millisecond: runs of a few milliseconds each must still add up
        parts[-1]["wall_s"] = round(float(parts[-1]["wall_s"]) + time.perf_counter() - begin, 3)
        parts[-1]["runs"] = int(parts[-1]["runs"]) + 1
        (folder / PARTS).write_text(json.dumps(parts, indent=2))
    made = {
        "commit": parts[-1]["commit"],
        "started": parts[0]["started"],
        "wall_s": _seconds(parts),  # the seconds its runs took, every sitting
        "parts": parts,
    }
    (folder / RECORD).write_text(json.dumps({"runs": [list(run) for run in multiruns], **made}, indent=2))
    (folder / PARTS).unlink(missing_ok=True)
    return folder


def _as_ran(run: RunConfig) -> dict[str, Any]:
    """A run's typed configuration as it ran (as its folder's ``config.yaml`` keeps it), less what
    differs per invocation, a shipped dataset named by its file alone (the checkout may have moved)."""
    return {key: _shipped_by_name(value) for key, value in run.to_container().items() if key not in PER_INVOCATION}


def _shipped_by_name(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _shipped_by_name(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shipped_by_name(item) for item in value]
    if isinstance(value, str) and SHIPPED_MARK in value:
        return "shipped:" + value.split(SHIPPED_MARK, 1)[1]
    return value


def finished_points(folder: Path, configs: list[RunConfig]) -> dict[int, str]:
    """Which of a sweep's points (their typed runs) an earlier sitting already ran to the end in
    ``folder``: point index -> run id, each run matched to one point (rounds repeat a point), the
    saved configurations read back as typed runs and compared as such."""
    from dygsched.engine.run_config import saved_run
    from dygsched.errors import ConfigError
    from dygsched.metrics.runs_table import read_runs

    runs = read_runs(folder)
    if runs.empty or "status" not in runs.columns:
        return {}
    ran = {}
    for run_id in runs.loc[runs["status"] == "ok", "run_id"]:
        try:
            ran[str(run_id)] = _as_ran(saved_run(folder / str(run_id)))
        except ConfigError:  # no config.yaml, or one of a form no longer read: not a point of this sweep
            continue
    done: dict[int, str] = {}
    for index, config in enumerate(configs):
        wanted = _as_ran(config)
        match = next((run_id for run_id, saved in ran.items() if saved == wanted and run_id not in done.values()), None)
        if match is not None:
            done[index] = match
    return done


def _drop_unfinished(folder: Path, kept: set[str]) -> None:
    """Remove the run folders and runs-table rows of an interrupted sweep's runs other than ``kept``."""
    import shutil

    from dygsched.metrics.runs_table import keep_runs

    for child in folder.iterdir():
        if child.is_dir() and (child / "config.yaml").is_file() and child.name not in kept:
            shutil.rmtree(child)
    keep_runs(folder, kept)


def _read_parts(folder: Path) -> list[dict[str, Any]]:
    """The sittings so far of a sweep being resumed: those of one cut off (``sweep.parts.json``), else
    those of one finished before its definition grew (its record's ``parts``), else one sitting that
    kept no record."""
    for name, key in ((PARTS, None), (RECORD, "parts")):
        try:
            raw = json.loads((folder / name).read_text())
        except (OSError, ValueError):
            continue
        parts = raw.get(key) if key is not None and isinstance(raw, dict) else raw
        if isinstance(parts, list) and parts:
            return list(parts)
    return [{"commit": None, "started": None, "wall_s": None, "runs": None}]  # a sitting that kept no record


def sweep_made(sweep: Sweep, results: Path) -> dict[str, Any]:
    """When and at what commit the sweep's runs were made, and in how many seconds, from its record
    (``None`` for what a record written before these were kept does not say); for a sweep resumed
    across sittings, how many, and the seconds of those before the last (``None`` where one of them
    kept no record)."""
    try:
        raw = json.loads((results / sweep.folder / RECORD).read_text())
    except (OSError, ValueError):
        raw = {}
    made = {"folder": sweep.folder, **{key: raw.get(key) for key in ("commit", "started", "wall_s")}}
    parts = raw.get("parts")
    if isinstance(parts, list) and parts:
        made["sittings"] = len(parts)
        made["earlier_wall_s"] = _seconds(parts[:-1])
    return made


def _seconds(parts: list[dict[str, Any]]) -> float | None:
    """The seconds the sittings ``parts`` ran; ``None`` where one of them kept no record."""
    if any(part.get("commit") is None for part in parts):
        return None
    return round(sum(float(part.get("wall_s") or 0.0) for part in parts), 3)
