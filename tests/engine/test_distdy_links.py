"""DistDy's link mini-batches (``dygsched.engine.distdy.links``): which pairs, which targets, whose rank."""

from __future__ import annotations

import numpy as np

from dygsched.engine.distdy.links import PairBatch, home_ranks, pair_plan


def test_a_target_is_computed_by_its_holder_at_tau_else_its_last_holder_else_by_its_id():
    targets = np.array([10, 11, 12, 13])
    owners = np.array(
        [
            [0, 1, -1, -1],  # oldest snapshot of the window
            [1, -1, 0, -1],
            [1, -1, -1, -1],  # tau
        ]
    )
    # 10: held at tau by 1; 11: last held by 1 (oldest); 12: last held by 0; 13: never held, 13 mod 3
    assert home_ranks(owners, targets, 3).tolist() == [1, 1, 0, 1]


def test_a_pair_batch_reads_its_pairs_and_negatives_through_its_sorted_targets():
    links = np.array([[5, 1, 7, 3, 1], [2, 9, 2, 4, 4]])
    negatives = np.array([[0, 8, 8, 6, 2], [9, 9, 1, 0, 5]])
    batch = PairBatch.draw(links, negatives, 3, seed=0, epoch=1, tau=4, b=0)
    again = PairBatch.draw(links, negatives, 3, seed=0, epoch=1, tau=4, b=0)
    other = PairBatch.draw(links, negatives, 3, seed=0, epoch=1, tau=4, b=1)
    assert batch.count == 3 and np.array_equal(batch.targets, np.unique(batch.targets))
    pairs = batch.targets[batch.pairs]
    chosen = [int(np.flatnonzero((links[0] == s) & (links[1] == d))[0]) for s, d in pairs.T]
    assert chosen == sorted(set(chosen))  # distinct pairs, in the snapshot's order
    assert np.array_equal(batch.targets[batch.negatives], negatives[:, chosen])  # each pair keeps its negatives
    assert set(batch.targets) == set(pairs.reshape(-1)) | set(negatives[:, chosen].reshape(-1))
    assert np.array_equal(again.pairs, batch.pairs) and np.array_equal(again.targets, batch.targets)
    assert PairBatch.draw(links, negatives, 10, seed=0, epoch=1, tau=4, b=0).count == 5  # at most every pair
    assert not np.array_equal(other.targets, batch.targets) or not np.array_equal(other.pairs, batch.pairs)


def test_each_pair_is_scored_once_by_its_source_home_with_its_destinations_received():
    """Over the ranks every pair is scored once, where its source was computed; a rank receives exactly
    the remote destinations it reads, and what one rank sends another receives."""
    links = np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]])
    negatives = np.array([[2, 2, 0, 0, 3, 1]])
    batch = PairBatch.draw(links, negatives, 6, seed=3, epoch=0, tau=0, b=0)
    home = batch.targets % 2
    plans = [pair_plan(batch, home, rank, 2) for rank in (0, 1)]
    scored = np.sort(np.concatenate([plan.mine for plan in plans]))
    assert scored.tolist() == list(range(batch.count))
    for rank, plan in enumerate(plans):
        assert (home[batch.pairs[0, plan.mine]] == rank).all()
        owned = int((home == rank).sum())
        reads = np.concatenate([batch.pairs[1, plan.mine], batch.negatives[:, plan.mine].reshape(-1)])
        assert sum(plan.recv_counts) == np.unique(reads[home[reads] != rank]).size
        assert (plan.dst_rows.numpy() < owned + sum(plan.recv_counts)).all()
    assert plans[0].send_counts[1] == plans[1].recv_counts[0] and plans[1].send_counts[0] == plans[0].recv_counts[1]
