import numpy as np
import pytest
import torch

from dygsched.data.events import EventStream
from dygsched.data.link_negatives import _outside, generate, stored
from dygsched.data.tgb_negatives import read_phase_negatives
from dygsched.errors import ConfigError


def stream() -> EventStream:
    """Training: 0 -> 1, 2, 3 and 4 -> 5; validation at t=5: 0 -> 1, 0 -> 6; test at t=6: 4 -> 5, 7 -> 0."""
    src = [0, 0, 0, 4, 0, 0, 4, 7]
    dst = [1, 2, 3, 5, 1, 6, 5, 0]
    t = [1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 6.0, 6.0]
    return EventStream("toy", torch.tensor(src), torch.tensor(dst), torch.tensor(t), 12)


PHASES = {"val": (4, 6), "test": (6, 8)}


def test_half_historical_less_the_snapshots_positives_then_random_outside_both():
    drawn = generate(stream(), train_stop=4, phases=PHASES, count=6, seed=0)
    val = drawn["val"]
    for row, positive in ((0, 1), (1, 6)):
        negatives = val[row]
        assert (negatives >= 0).all() and len(set(negatives.tolist())) == 6
        # source 0 reached 1, 2, 3 in training; its positives at t=5 are 1 and 6: historical ones are 2 and 3
        assert set(negatives[:2].tolist()) == {2, 3}
        assert not {1, 6} & set(negatives.tolist())  # never a positive of the snapshot
        assert not {1, 2, 3} & set(negatives[2:].tolist())  # random ones avoid the whole historical set
        assert positive not in negatives
    test = drawn["test"]
    assert 5 not in test[0] and test[0][0] != 5  # 4 -> 5 is historical and positive: no historical negative left
    assert 0 not in test[1]


def test_a_positive_with_fewer_candidates_than_asked_gets_them_all():
    drawn = generate(stream(), train_stop=4, phases=PHASES, count=20, seed=0)["val"]
    row = drawn[0]
    kept = row[row >= 0]
    assert sorted(kept.tolist()) == [0, 2, 3, 4, 5, 7, 8, 9, 10, 11]  # every node but 1 and 6
    assert (row[kept.size :] == -1).all()


def test_the_draws_depend_on_the_seed_and_not_on_the_run():
    a = generate(stream(), 4, PHASES, 6, seed=1)
    assert all(np.array_equal(a[p], generate(stream(), 4, PHASES, 6, seed=1)[p]) for p in PHASES)
    assert not np.array_equal(a["test"], generate(stream(), 4, PHASES, 6, seed=2)["test"])
    with pytest.raises(ConfigError, match="at least 1 negative"):
        generate(stream(), 4, PHASES, 0, seed=1)


def test_outside_draws_distinct_nodes_uniformly_among_the_free_ones():
    generator = np.random.default_rng(0)
    excluded = np.array([0, 3, 4, 9])
    counts = np.zeros(10)
    for _ in range(3000):
        picks = _outside(generator, excluded, 10, 3)
        assert len(set(picks.tolist())) == 3 and not set(picks.tolist()) & {0, 3, 4, 9}
        counts[picks] += 1
    free = counts[[1, 2, 5, 6, 7, 8]]
    assert np.allclose(free / free.sum(), 1 / 6, atol=0.02)


def test_stored_files_are_written_once_in_tgbs_format_and_read_back(tmp_path):
    prefix = stored(stream(), 4, PHASES, 6, 0, tmp_path)
    written = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert sorted(written) == [f"{prefix.name}_test_ns.pkl", f"{prefix.name}_val_ns.pkl"]
    assert stored(stream(), 4, PHASES, 6, 0, tmp_path) == prefix
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == written  # read, not drawn again
    fixed = read_phase_negatives(prefix, stream(), PHASES)
    assert np.array_equal(fixed["val"].destinations.numpy(), generate(stream(), 4, PHASES, 6, 0)["val"])
    assert stored(stream(), 4, PHASES, 7, 0, tmp_path) != prefix  # another setting: other files
