"""A results folder whose disk fills up, or turns read-only, while a run writes into it: real
processes on a small tmpfs (mounting one needs root; elsewhere these tests are skipped)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, TINY_SYNTHETIC


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or 'mount failed'})")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def start_run(tmp_path: Path, results: Path) -> subprocess.Popen:
    """A long 2-rank run writing into ``results``, once its first checkpoint is there."""
    command = [
        sys.executable,
        "-m",
        "dygsched",
        "run",
        *TINY_SYNTHETIC,
        "epochs=400",
        "run_id=victim",
        f"results_dir={results}",
        "progress=false",
    ]
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not (results / "victim" / "checkpoint.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    return proc


def remount_read_only(disk: Path) -> None:
    """Linux refuses the remount (EBUSY) while a file on the disk is open for writing, which the run
    does for a moment every epoch: try again until it lands between two writes."""
    deadline = time.monotonic() + 60
    while subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "the disk stayed busy for a minute"
        time.sleep(0.01)


def fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def finish(proc: subprocess.Popen) -> tuple[int, list[str]]:
    try:
        _, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
    return proc.returncode, stderr.strip().splitlines()


def test_a_full_disk_is_named_in_one_line(tmp_path, small_disk):
    proc = start_run(tmp_path, small_disk / "results")
    fill(small_disk)
    code, lines = finish(proc)
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("dygsched: error: run victim failed") and "No space left on device" in lines[0], lines
    assert "lost the connection" not in lines[0]


def test_a_results_folder_turned_read_only_is_named_in_one_line(tmp_path, small_disk):
    proc = start_run(tmp_path, small_disk / "results")
    remount_read_only(small_disk)
    try:
        code, lines = finish(proc)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert code == 1 and len(lines) == 1, lines
    assert "Read-only file system" in lines[0] and "cannot write" in lines[0], lines
    assert ".tmp" not in lines[0]  # the file the run meant to write, not its temporary name
    assert "exited without a reason" not in lines[0]
