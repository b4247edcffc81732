"""The generator of JODIE-shaped user-item streams: sizes, ids, repeats, bursts, features, presets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dygsched.data.bipartite import PRESETS, PUBLISHED_REPEAT_RATIO, BipartiteStreamSource, stream_statistics
from dygsched.errors import DataError

SMALL = {"num_users": 200, "num_items": 40, "num_events": 5_000}


def test_sizes_ids_and_time_order():
    stream = BipartiteStreamSource(**SMALL, edge_dim=6, seed=3).load()
    assert (stream.num_events, stream.num_nodes, stream.edge_dim) == (5_000, 240, 6)
    assert stream.src.unique().tolist() == list(range(200))  # every user has an event
    assert int(stream.dst.min()) >= 200 and int(stream.dst.max()) < 240  # items numbered after the users
    assert bool((stream.t[1:] >= stream.t[:-1]).all()) and float(stream.t[-1]) == pytest.approx(30 * 86_400)


def test_a_seed_gives_one_stream():
    a, b, c = (BipartiteStreamSource(**SMALL, edge_dim=2, seed=s).load() for s in (1, 1, 2))
    assert torch.equal(a.src, b.src) and torch.equal(a.dst, b.dst) and torch.equal(a.edge_features, b.edge_features)
    assert not torch.equal(a.dst, c.dst)


def test_returning_users_raise_the_repeat_ratio():
    ratios = [
        stream_statistics(BipartiteStreamSource(**SMALL, repeat_probability=p).load())["repeat_ratio"] for p in (0.0, 0.5, 0.9)
    ]
    assert ratios[0] < ratios[1] < ratios[2] and ratios[2] > 0.9


def test_bursts_keep_their_session_user_and_come_close_together():
    stream = BipartiteStreamSource(**SMALL, burst_probability=0.6, burst_gap=0.01).load()
    same_user = (stream.src[1:] == stream.src[:-1]).float().mean()
    quiet = BipartiteStreamSource(**SMALL, burst_probability=0.0).load()
    assert same_user > 0.6 > (quiet.src[1:] == quiet.src[:-1]).float().mean()


def test_features_point_at_their_item():
    stream = BipartiteStreamSource(**SMALL, edge_dim=16, feature_noise=0.5).load()
    features, dst = stream.edge_features.numpy(), stream.dst.numpy()
    a, b = np.bincount(dst).argsort()[-2:]  # the two busiest items
    centre_a, centre_b = features[dst == a].mean(axis=0), features[dst == b].mean(axis=0)
    assert (
        np.linalg.norm(features[dst == a] - centre_a, axis=1).mean()
        < np.linalg.norm(features[dst == a] - centre_b, axis=1).mean()
    )


def test_the_wikipedia_preset_has_the_published_shape():
    stream = BipartiteStreamSource(preset="wikipedia").load()
    stats = stream_statistics(stream)
    sizes = PRESETS["wikipedia"]
    assert (stats["events"], stats["sources"], stats["destinations"]) == (
        sizes["num_events"],
        sizes["num_users"],
        sizes["num_items"],
    )
    assert stream.edge_dim == 172
    assert stats["repeat_ratio"] == pytest.approx(PUBLISHED_REPEAT_RATIO["wikipedia"], abs=0.03)


def test_a_size_given_beside_a_preset_is_kept(compose):
    """``dataset=wikipedia_like dataset.num_events=...`` gets those events (a replay of issue 57's story:
    the preset used to overwrite them silently); the preset's other sizes stay."""
    source = compose("dataset=wikipedia_like", "dataset.num_events=200000").dataset.build("dataset").resolved()
    assert (source.num_events, source.num_users, source.edge_dim) == (200_000, 8_227, 172)
    with pytest.raises(DataError, match=r"num_events \(3000\) must be at least num_users \(8227\)"):
        BipartiteStreamSource(preset="wikipedia", num_events=3_000).load()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"preset": "lastfm"}, "unknown preset 'lastfm'"),
        ({"num_events": 10, "num_users": 20}, "at least num_users"),
        ({"repeat_probability": 1.0}, "repeat_probability must be in"),
        ({"edge_dim": -1}, "edge_dim must be"),
        ({"burst_probability": 0.9, "num_users": 100, "num_events": 150}, "sessions cannot give each of 100 users"),
    ],
)
def test_impossible_settings_are_refused_in_one_line(options, message):
    with pytest.raises(DataError, match=message):
        BipartiteStreamSource(**{**SMALL, **options}).load()
