"""A write that fails (a full or read-only disk) is named in one line, wherever the reason can be kept."""

from __future__ import annotations

import errno

from dygsched.engine.worker import failure_text
from dygsched.metrics.run_folder import RunFolder


def test_a_failed_write_is_named_by_its_file_and_the_disks_words():
    try:
        raise OSError(errno.ENOSPC, "No space left on device", "/results/run/metrics.parquet")
    except OSError as exc:
        text = failure_text(exc)
    assert text.splitlines()[0] == "cannot write /results/run/metrics.parquet: No space left on device"


def test_a_rank_that_cannot_write_its_folder_leaves_the_reason_where_the_launcher_finds_it(tmp_path):
    blocked = tmp_path / "not_a_folder"
    blocked.write_text("a file where the results folder should be")
    folder = RunFolder(blocked, "run-x")
    folder.write_failure(0, "cannot write /somewhere: Read-only file system\n\ntraceback")  # never raises
    try:
        assert folder.failures() == [(0, "cannot write /somewhere: Read-only file system")]
    finally:
        folder.fallback_failure_file(0).unlink(missing_ok=True)
