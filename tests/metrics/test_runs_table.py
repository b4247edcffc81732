import multiprocessing as mp

import pandas as pd

from dygsched.metrics.runs_table import append_run, flatten, read_runs


def _append_many(args):
    results_dir, worker = args
    for i in range(10):
        append_run(results_dir, {"run_id": f"w{worker}-{i}", "status": "ok", "eval": {"metric": "mse", "value": 0.5}})


def test_concurrent_appends_keep_every_row(tmp_path):
    with mp.get_context("spawn").Pool(4) as pool:
        pool.map(_append_many, [(tmp_path, w) for w in range(4)])
    runs = read_runs(tmp_path)
    assert len(runs) == 40 and runs["run_id"].is_unique
    assert set(runs.columns) >= {"run_id", "status", "eval.metric", "eval.value"}
    assert not list(tmp_path.glob("*.tmp"))


def test_flatten_nested_summary():
    assert flatten({"a": 1, "b": {"c": 2, "d": {"e": 3}}}) == {"a": 1, "b.c": 2, "b.d.e": 3}


def test_an_older_runs_one_memory_figure_reads_under_a_name_that_says_it_is_either(tmp_path):
    pd.DataFrame({"run_id": ["old"], "peak_mem_bytes": [123]}).to_parquet(tmp_path / "runs.parquet")
    append_run(tmp_path, {"run_id": "new", "status": "ok", "peak_rss_bytes": 456})
    runs = read_runs(tmp_path).set_index("run_id")
    assert "peak_mem_bytes" not in runs.columns
    assert runs.loc["old", "peak_mem_bytes_gpu_or_rss"] == 123 and pd.isna(runs.loc["old", "peak_rss_bytes"])
    assert runs.loc["new", "peak_rss_bytes"] == 456
