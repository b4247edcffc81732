"""A user's own CSV through ``dygsched run``: the keys that fix a wrong column, users and items,
dates, and a memory model under a snapshot strategy (issue 57's own-data stories)."""

import numpy as np
import pandas as pd

from tests.cli_process import run_dygsched


def ratings_csv(tmp_path, dates=True):
    """Users 0..59 rating items 0..19 (both numbered from 0), dated, under the user's own column names."""
    rng = np.random.default_rng(0)
    count = 400
    seconds = np.sort(rng.uniform(0, 20 * 86_400, count))
    when = pd.Timestamp("2021-03-01") + pd.to_timedelta(seconds, unit="s")
    frame = pd.DataFrame(
        {
            "user": rng.integers(0, 60, count),
            "item": rng.zipf(1.5, count) % 20,
            "when": when.strftime("%Y-%m-%dT%H:%M:%S") if dates else seconds,
            "rating": rng.integers(1, 6, count),
        }
    )
    path = tmp_path / "ratings.csv"
    frame.to_csv(path, index=False)
    return path


def dygsched(tmp_path, *args):
    return run_dygsched("run", *args, f"results_dir={tmp_path / 'results'}", timeout=120, cwd=tmp_path)


def test_a_wrong_column_names_the_keys_that_fix_it(tmp_path):
    done = dygsched(tmp_path, "dataset=events", f"dataset.path={ratings_csv(tmp_path)}", "model=tgn", "sched=single")
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("dygsched: error: ") and "it has: user, item, when, rating" in line
    assert "dataset.src_col=COLUMN dataset.dst_col=COLUMN dataset.time_col=COLUMN" in line
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_users_and_items_are_warned_about_then_kept_apart_and_dates_reported(tmp_path):
    # world_size=2 with the one-process reference is refused after the data is read (stage 4), so
    # the data's lines show without training a run
    own = [f"dataset.path={ratings_csv(tmp_path)}", "dataset.src_col=user", "dataset.dst_col=item", "dataset.time_col=when"]
    merged = dygsched(tmp_path, "dataset=events", *own, "model=tgn", "sched=single", "world_size=2")
    assert "dates from 2021-03-01T" in merged.stdout and "read as seconds since 1970-01-01 UTC" in merged.stdout
    assert "dataset.bipartite=true keeps sources and destinations apart" in merged.stdout
    apart = dygsched(tmp_path, "dataset=events", *own, "dataset.bipartite=true", "model=tgn", "sched=single", "world_size=2")
    assert "sources and" in apart.stdout and "as two id spaces (bipartite=true)" in apart.stdout
    assert "dataset.bipartite=true keeps" not in apart.stdout
    assert apart.returncode == 1 and "set world_size=1" in apart.stderr


def test_a_memory_model_under_a_snapshot_strategy_names_the_strategies_that_train_it(tmp_path):
    done = dygsched(tmp_path, "dataset=events", "model=tgn")  # sched=psg, the default
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert "model=tgn is a memory model for event streams, which sched=psg does not train" in line
    for name in ("single", "depcache", "depcomm", "sven"):
        assert name in line
    assert "set dataset.kind" not in line
