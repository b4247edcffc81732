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


def test_reasons_left_outside_belong_to_their_folder_and_a_new_attempt_forgets_them(tmp_path):
    here, elsewhere = RunFolder(tmp_path / "a", "victim"), RunFolder(tmp_path / "b", "victim")  # the same run id
    blocked = RunFolder(tmp_path / "file", "victim")
    (tmp_path / "file").write_text("not a folder")
    try:
        blocked.write_failure(0, "cannot write x: Read-only file system")
        assert here.failures() == [] and elsewhere.failures() == []  # an earlier run's reason is not theirs
        here.path.mkdir(parents=True)
        here.write_failure(1, "rank 1's reason from the interrupted attempt")
        here.forget_old_failures()
        blocked.forget_old_failures()
        assert here.failures() == [] and blocked.failures() == []
        assert (here.path / "earlier-failure-rank1.txt").read_text().startswith("rank 1's reason")  # kept, set aside
    finally:
        blocked.fallback_failure_file(0).unlink(missing_ok=True)


def test_pyarrows_errors_name_the_file_and_the_disks_words(tmp_path):
    import pytest

    from dygsched.metrics.atomic import write_with

    def pyarrow_like(tmp):
        raise OSError(f"Failed to open local file '{tmp}'. Detail: [errno 28] No space left on device")

    with pytest.raises(OSError) as info:
        write_with(tmp_path / "metrics.parquet", pyarrow_like)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(tmp_path / "metrics.parquet")
    assert failure_text(info.value).splitlines()[0] == f"cannot write {tmp_path / 'metrics.parquet'}: No space left on device"
