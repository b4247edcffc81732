"""Two id spaces (users and items) or one: ``dataset.bipartite`` and the rule that warns."""

import logging

import numpy as np
import pandas as pd
import pytest

from dygsched.data.edgelist import EdgeListSource
from dygsched.data.id_spaces import MIN_PAIRS, bipartite_ids, bipartite_suspicion
from dygsched.errors import DataError


def ratings(users=202, items=80, events=1500, seed=0):
    """Users and items both numbered from 0, as a hand-written ratings file numbers them."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, users, events), rng.zipf(1.5, events) % items


def test_two_id_spaces_keep_users_and_items_apart():
    ids = bipartite_ids(np.array([5, 7, 5]), np.array([5, 2, 9]))
    assert ids.num_sources == 2 and ids.num_nodes == 5  # users 5, 7; items 2, 5, 9
    assert ids.src.tolist() == [0, 1, 0] and ids.dst.tolist() == [3, 2, 4]  # items after users, each sorted
    assert ids.node_ids.tolist() == [5, 7, 2, 5, 9]  # each node's id in its own column


def test_overlapping_users_and_items_look_bipartite():
    users, items = ratings()
    assert "go both ways" in bipartite_suspicion(users, items)


def test_people_answering_people_do_not(shipped_data):
    for name in ("collegemsg.csv", "enron_edges.csv"):
        frame = pd.read_csv(shipped_data / name)
        assert bipartite_suspicion(frame["src"].to_numpy(), frame["dst"].to_numpy()) is None, name


def test_disjoint_numbering_and_small_files_are_not_judged():
    users, items = ratings()
    assert bipartite_suspicion(users, items + 1000) is None  # already two spaces: nothing is merged
    assert bipartite_suspicion(np.arange(MIN_PAIRS - 1), np.arange(MIN_PAIRS - 1)[::-1].copy()) is None


def write(tmp_path, users, items):
    path = tmp_path / "ratings.csv"
    pd.DataFrame({"src": users, "dst": items, "t": np.arange(users.size)}).to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("kind", ["events", "snapshots"])
def test_bipartite_true_counts_users_plus_items(tmp_path, kind):
    users, items = ratings()
    path = write(tmp_path, users, items)
    merged = EdgeListSource(path=path, kind=kind, bipartite=False).load()
    apart = EdgeListSource(path=path, kind=kind, bipartite=True).load()
    assert merged.num_nodes == len(np.union1d(users, items))
    assert apart.num_nodes == len(np.unique(users)) + len(np.unique(items))
    if kind == "events":
        sources = apart.src.unique()
        assert int(sources.max()) < len(np.unique(users)) <= int(apart.dst.min())
        assert apart.node_ids[: len(np.unique(users))].tolist() == np.unique(users).tolist()


def test_the_warning_names_both_settings_and_false_silences_it(tmp_path, caplog):
    path = write(tmp_path, *ratings())
    with caplog.at_level(logging.WARNING, logger="dygsched"):
        EdgeListSource(path=path, kind="events").load()
    assert "dataset.bipartite=true" in caplog.text and "dataset.bipartite=false" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dygsched"):
        EdgeListSource(path=path, kind="events", bipartite=False).load()
        EdgeListSource(path=path, kind="events", bipartite=True).load()
    assert "bipartite" not in caplog.text


def test_bipartite_with_num_nodes_is_refused(tmp_path):
    path = write(tmp_path, *ratings())
    with pytest.raises(DataError, match="num_nodes=null"):
        EdgeListSource(path=path, kind="events", bipartite=True, num_nodes=400).load()
