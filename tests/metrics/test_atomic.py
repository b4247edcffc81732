"""Result files are replaced whole: a reader, or a writer killed halfway, never leaves half of one."""

import multiprocessing as mp
import os

import pandas as pd
import pytest

from dygsched.metrics.atomic import remove_stale_temporaries, write_json, write_parquet, write_with
from dygsched.metrics.runs_table import append_run, read_runs


def _die_while_writing(path):
    def write(tmp):
        with open(tmp, "w") as handle:
            handle.write('{"half": ')
            handle.flush()
            os._exit(9)  # killed mid-write: no exception handler, no cleanup

    write_with(path, write)


def test_a_writer_killed_midway_leaves_the_previous_file(tmp_path):
    path = tmp_path / "summary.json"
    write_json(path, {"status": "ok"})
    child = mp.get_context("spawn").Process(target=_die_while_writing, args=(path,))
    child.start()
    child.join(60)
    assert child.exitcode == 9
    assert path.read_text() == '{\n  "status": "ok"\n}\n'
    stale = remove_stale_temporaries(tmp_path)
    assert [p.name.startswith(".summary.json.") for p in stale] == [True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_a_failing_writer_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "metrics.parquet"
    write_parquet(path, pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError):
        write_parquet(path, pd.DataFrame({"a": [object()]}))
    assert pd.read_parquet(path)["a"].tolist() == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.parquet"]


def test_runs_table_keeps_one_row_per_run(tmp_path):
    append_run(tmp_path, {"run_id": "a", "status": "ok"})
    append_run(tmp_path, {"run_id": "b", "status": "failed", "reason": "rank 1 was killed by SIGKILL"})
    append_run(tmp_path, {"run_id": "b", "status": "ok", "epochs_completed": 4})  # resumed to the end
    runs = read_runs(tmp_path)
    assert runs["run_id"].tolist() == ["a", "b"] and runs["status"].tolist() == ["ok", "ok"]
    assert runs.set_index("run_id").loc["b", "epochs_completed"] == 4
