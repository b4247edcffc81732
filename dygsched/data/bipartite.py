"""Bipartite interaction streams shaped like JODIE's datasets, generated (seeded, vectorised).

Users interact with items (JODIE's Wikipedia: editors and pages; REDDIT: posters and
subreddits). The shape those streams have, and this generator draws:

* **Heavy-tailed activity.** Each user's share of the events follows a Zipf law
  (``user_exponent``); every user has at least one event, as in JODIE's streams (which keep
  users with activity).
* **Popular items.** A user's new item is drawn from a Zipf law over the items (``item_exponent``).
* **Returning users.** With probability ``repeat_probability`` an event returns to an item the
  user interacted with before, more likely a recent one (``recency``: the chance of each step
  back); the share of events whose (user, item) pair was seen before is the repeat ratio JODIE
  reports (61% for Wikipedia, 79% for REDDIT).
* **Bursts.** With probability ``burst_probability`` an event continues its predecessor's
  session: the same user, ``burst_gap`` times the usual gap later.
* **Edge features** (``edge_dim`` > 0): an item's own direction plus noise, so they carry
  information about the destination, as JODIE's LIWC text features do about a page.
* **State labels** (node property prediction, ``task=node``): a user returning after a long
  silence is flagged (``event_labels.churn_labels``), ``label_rate`` of the events (Wikipedia's
  published rate, 217 banned users in 157,474 edits, is 0.14%; REDDIT's 366 in 672,447 is
  0.054%), the score's noise ``label_noise``; drawn apart from the events, so the events are
  those of a stream without labels.

Ids: users ``0 .. U-1``, items ``U .. U+I-1``. Times span ``duration`` seconds (30 days by
default, about the span of both of JODIE's streams). Nothing is a per-event Python object: the
draws, the session fill and the repeat lookup are array operations, so REDDIT's 672,447 events
take seconds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dygsched.data.event_labels import churn_labels
from dygsched.data.events import EventStream, events_from_arrays
from dygsched.errors import DataError

# the sizes JODIE's paper gives (users, items, events), the feature width of TGL's copies, and
# the return probability that brings the repeat ratio to the published one (measured, docs/data.md)
PRESETS: dict[str, dict[str, float]] = {
    "wikipedia": {
        "num_users": 8_227,
        "num_items": 1_000,
        "num_events": 157_474,
        "edge_dim": 172,
        "repeat_probability": 0.31,
        "label_rate": 217 / 157_474,
    },
    "reddit": {
        "num_users": 10_000,
        "num_items": 984,
        "num_events": 672_447,
        "edge_dim": 172,
        "repeat_probability": 0.5,
        "label_rate": 366 / 672_447,
    },
}
# what JODIE's paper reports for them: the share of interactions that repeat an earlier (user, item) pair
PUBLISHED_REPEAT_RATIO = {"wikipedia": 0.61, "reddit": 0.79}
DEFAULT_LABEL_RATE = 0.02  # a generated stream's share of labelled events without a preset: a few per batch at test sizes
FEATURE_CHUNK = 65_536  # events whose features are drawn at once (bounds the float64 temporaries)


@dataclass(frozen=True)
class BipartiteStreamSource:
    """A generated user-item stream; ``preset`` (``wikipedia`` or ``reddit``) sets the sizes."""

    preset: str | None = None
    num_users: int = 1_000
    num_items: int = 100
    num_events: int = 20_000
    edge_dim: int = 0
    user_exponent: float = 1.0
    item_exponent: float = 1.1
    repeat_probability: float = 0.5
    recency: float = 0.5
    burst_probability: float = 0.3
    burst_gap: float = 0.05
    duration: float = 30 * 86_400.0
    feature_noise: float = 1.0
    label_rate: float | None = None  # the share of events labelled 1 (event_labels.churn_labels); None: the preset's, else 0.02
    label_noise: float = 1.0  # the noise on the label rule's score (log silence): 0 labels by the silence alone
    seed: int = 0
    name: str = "bipartite"

    def resolved(self) -> BipartiteStreamSource:
        """This source with its preset's values in place of the generator's defaults: a field given
        beside the preset (``dataset=wikipedia_like dataset.num_events=3000``) keeps its value."""
        if self.preset is None:
            return self
        if self.preset not in PRESETS:
            raise DataError(f"dataset '{self.name}': unknown preset '{self.preset}' (choose from {', '.join(PRESETS)})")
        defaults = {field.name: field.default for field in dataclasses.fields(BipartiteStreamSource)}
        values: dict[str, Any] = {
            key: float(value) if key == "label_rate" else type(getattr(self, key))(value)
            for key, value in PRESETS[self.preset].items()
            if getattr(self, key) == defaults[key]
        }
        return dataclasses.replace(self, preset=None, **values)

    @property
    def rate(self) -> float:
        """The share of events labelled 1."""
        return DEFAULT_LABEL_RATE if self.label_rate is None else float(self.label_rate)

    def _check(self, users: int, items: int, events: int, edge_dim: int) -> None:
        def fail(problem: str) -> None:
            raise DataError(f"dataset '{self.name}': {problem}")

        if users < 1 or items < 1:
            fail(f"a bipartite stream needs users and items, got {users} and {items}")
        if events < users:
            fail(f"num_events ({events}) must be at least num_users ({users}): every user has an event")
        if edge_dim < 0:
            fail(f"edge_dim must be 0 or more, got {edge_dim}")
        for key in ("repeat_probability", "burst_probability"):
            if not 0 <= getattr(self, key) < 1:
                fail(f"{key} must be in [0, 1), got {getattr(self, key)}")
        if not 0 <= self.recency < 1:
            fail(f"recency must be in [0, 1), got {self.recency}")
        if not (self.duration > 0 and self.burst_gap > 0 and self.user_exponent >= 0 and self.item_exponent >= 0):
            fail("duration and burst_gap must be positive, the exponents 0 or more")
        if not 0 <= self.rate < 1 or not self.label_noise >= 0:
            fail(f"label_rate must be in [0, 1) and label_noise 0 or more, got {self.rate} and {self.label_noise}")

    def load(self) -> EventStream:
        if self.preset is not None:
            return self.resolved().load()
        users_n, items_n, events_n, edge_dim = self.num_users, self.num_items, self.num_events, self.edge_dim
        self._check(users_n, items_n, events_n, edge_dim)
        rng = np.random.default_rng(self.seed)
        burst = rng.random(events_n) < self.burst_probability  # continues the session before it
        burst[0] = False
        users = self._users(rng, users_n, burst)
        times = self._times(rng, burst)
        items = self._items(rng, users, items_n)
        features = self._features(rng, items, items_n, edge_dim) if edge_dim else None
        stream = events_from_arrays(self.name, users, items + users_n, times, None, users_n + items_n, features)
        labels = churn_labels(stream.src.numpy(), stream.t.numpy(), self.rate, self.label_noise, self.seed)
        return dataclasses.replace(stream, labels=torch.from_numpy(labels))

    def _users(self, rng: np.random.Generator, users_n: int, burst: np.ndarray) -> np.ndarray:
        """Each session's user from the activity law, every user starting one; a burst event
        keeps its session's user."""
        starts = np.flatnonzero(~burst)
        if starts.size < users_n:
            raise DataError(f"dataset '{self.name}': {starts.size} sessions cannot give each of {users_n} users an event")
        weights = 1.0 / np.arange(1, users_n + 1) ** self.user_exponent
        ranked = rng.permutation(users_n)  # which user is the most active is random
        drawn = ranked[rng.choice(users_n, starts.size - users_n, p=weights / weights.sum())]
        users = np.empty(burst.size, dtype=np.int64)
        users[starts] = rng.permutation(np.concatenate([np.arange(users_n), drawn]))
        return users[np.maximum.accumulate(np.where(burst, 0, np.arange(burst.size)))]

    def _times(self, rng: np.random.Generator, burst: np.ndarray) -> np.ndarray:
        gaps = rng.exponential(1.0, burst.size)
        gaps[burst] *= self.burst_gap
        times = np.cumsum(gaps)
        return (times - times[0]) / max(times[-1] - times[0], 1e-12) * self.duration

    def _items(self, rng: np.random.Generator, users: np.ndarray, items_n: int) -> np.ndarray:
        """New items from the popularity law; returns to one of the user's earlier new items,
        ``k`` steps back with probability ``(1 - recency) recency^k`` (capped at the first)."""
        order = np.argsort(users, kind="stable")  # each user's events, in time order
        sorted_users = users[order]
        first = np.r_[True, sorted_users[1:] != sorted_users[:-1]]
        is_new = first | (rng.random(users.size) >= self.repeat_probability)
        weights = 1.0 / np.arange(1, items_n + 1) ** self.item_exponent
        popular = rng.permutation(items_n)
        new_items = popular[rng.choice(items_n, int(is_new.sum()), p=weights / weights.sum())]
        count = np.cumsum(is_new)  # new events so far, all users, this one included
        start = np.maximum.accumulate(np.where(first, np.arange(users.size), 0))
        earliest = count[start] - 1  # the user's first new event's ordinal
        back = rng.geometric(1.0 - self.recency, users.size) - 1 if self.recency > 0 else np.zeros(users.size, np.int64)
        latest = count - 1
        ordinal = np.where(is_new, latest, np.maximum(latest - back, earliest))
        items = np.empty_like(users)
        items[order] = new_items[ordinal]
        return items

    def _features(self, rng: np.random.Generator, items: np.ndarray, items_n: int, edge_dim: int) -> np.ndarray:
        directions = rng.standard_normal((items_n, edge_dim), dtype=np.float32)
        features = np.empty((items.size, edge_dim), dtype=np.float32)
        for lo in range(0, items.size, FEATURE_CHUNK):
            hi = min(lo + FEATURE_CHUNK, items.size)
            noise = rng.standard_normal((hi - lo, edge_dim), dtype=np.float32)
            features[lo:hi] = directions[items[lo:hi]] + self.feature_noise * noise
        return features


def stream_statistics(stream: EventStream) -> dict[str, float]:
    """The shape of a stream, to set beside a published one: sizes, degrees, repeats, bursts."""
    src, dst = stream.src.numpy(), stream.dst.numpy()
    pairs = src.astype(np.int64) * stream.num_nodes + dst
    _, first_seen = np.unique(pairs, return_index=True)
    src_degree = np.bincount(src)
    src_degree = src_degree[src_degree > 0]
    dst_degree = np.bincount(dst)
    dst_degree = dst_degree[dst_degree > 0]
    gaps = np.diff(stream.t.numpy())
    return {
        "events": float(stream.num_events),
        "sources": float(src_degree.size),
        "destinations": float(dst_degree.size),
        "mean_source_degree": float(src_degree.mean()),
        "max_source_share": float(src_degree.max() / stream.num_events),
        "mean_destination_degree": float(dst_degree.mean()),
        "max_destination_share": float(dst_degree.max() / stream.num_events),
        "repeat_ratio": 1.0 - first_seen.size / stream.num_events,
        "zero_gap_share": float((gaps == 0).mean()) if gaps.size else 0.0,
        "span_days": float((stream.t[-1] - stream.t[0]) / 86_400.0),
    }
