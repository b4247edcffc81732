"""A generated trade stream shaped like TGB's ``tgbn-trade``, with its node affinity labels.

TGB's ``tgbn-trade`` (UN trade data): 255 nations, a weighted edge per (exporter, importer, year)
over 32 years, and at each year each nation's label: the share of its trade that goes to each
other nation the next year; the task is to rank those shares (NDCG@10). This generator draws a
stream of that shape, seeded and vectorised per period:

* **Affinities.** Nation ``u`` has a vector ``a_u`` over the other nations, drawn from a Dirichlet
  law whose mean follows the nations' sizes (a Zipf law, ``size_exponent``: nations trade more with
  large economies), sparse where ``concentration`` is small. Each period it drifts:
  ``a_u <- (1 - drift) a_u + drift d`` with a fresh Dirichlet draw ``d``.
* **Trade.** Each period, nation ``u`` trades with ``1 + Poisson(partners - 1)`` partners (at most
  all others) drawn from ``a_u`` without replacement; the edge's weight is the partner's affinity
  times the partner count, times log-normal noise (``noise``), so weights are about 1.
* **Time.** Period ``y`` is the time ``start + y`` (TGB's years); its edges share that timestamp.
* **Labels.** At the time of period ``y`` (every period but the last), each nation that trades in
  period ``y + 1`` carries its next period's trade shares (weights normalised to sum to 1), as TGB
  labels its nations. So what a label asks is where the next period's trade goes, knowing every
  period up to this one: the drift is what makes it uncertain, and a forecast of the last period's
  shares (TGB's persistent forecast) is the floor a model must beat.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from dygsched.data.event_labels import AffinityLabels
from dygsched.data.events import EventStream, events_from_arrays
from dygsched.errors import DataError


@dataclass(frozen=True)
class TradeStreamSource:
    """A generated ``tgbn-trade``-like stream with node affinity labels (see the module)."""

    num_nodes: int = 255
    num_periods: int = 32
    partners: float = 16.0
    concentration: float = 0.5
    size_exponent: float = 1.0
    drift: float = 0.15
    noise: float = 0.3
    start: float = 1986.0
    seed: int = 0
    name: str = "trade_like"

    def _check(self) -> None:
        def fail(problem: str) -> None:
            raise DataError(f"dataset '{self.name}': {problem}")

        if self.num_nodes < 3:
            fail(f"a trade stream needs at least 3 nations, got {self.num_nodes}")
        if self.num_periods < 3:
            fail(f"a trade stream needs at least 3 periods (labels look one period ahead), got {self.num_periods}")
        if not 1 <= self.partners <= self.num_nodes - 1:
            fail(f"partners must be between 1 and num_nodes - 1 ({self.num_nodes - 1}), got {self.partners}")
        if not (self.concentration > 0 and self.size_exponent >= 0 and 0 <= self.drift <= 1 and self.noise >= 0):
            fail("concentration must be positive, size_exponent and noise 0 or more, drift in [0, 1]")

    def load(self) -> EventStream:
        self._check()
        n, periods = self.num_nodes, self.num_periods
        rng = np.random.default_rng(self.seed)
        sizes = 1.0 / np.arange(1, n + 1) ** self.size_exponent
        sizes = sizes[rng.permutation(n)] / sizes.sum()
        prior = np.maximum(self.concentration * (n - 1) * np.broadcast_to(sizes, (n, n)).copy(), 1e-3)
        np.fill_diagonal(prior, 0.0)
        affinity = self._dirichlet(rng, prior)
        src, dst, times, weights = [], [], [], []
        shares: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # each period's (exporter, importer, share)
        for period in range(periods):
            if period:
                affinity = (1 - self.drift) * affinity + self.drift * self._dirichlet(rng, prior)
            u, v, w = self._trade(rng, affinity)
            src.append(u)
            dst.append(v)
            weights.append(w)
            times.append(np.full(u.size, self.start + period))
            total = np.bincount(u, weights=w, minlength=n)
            shares.append((u, v, w / total[u]))
        stream = events_from_arrays(
            self.name, np.concatenate(src), np.concatenate(dst), np.concatenate(times), np.concatenate(weights), n
        )
        # the label at period y's time: each trading nation's shares in period y + 1
        label_times = np.concatenate([np.full(shares[y + 1][0].size, self.start + y) for y in range(periods - 1)])
        exporters, importers, values = (np.concatenate([shares[y + 1][i] for y in range(periods - 1)]) for i in range(3))
        labels = AffinityLabels.from_entries(label_times, exporters, importers, values, n)
        return dataclasses.replace(stream, affinity=labels)

    def _dirichlet(self, rng: np.random.Generator, alpha: np.ndarray) -> np.ndarray:
        """One Dirichlet draw per row of ``alpha`` (zeros stay zero)."""
        draws = rng.gamma(np.where(alpha > 0, alpha, 1.0)) * (alpha > 0)
        return draws / draws.sum(axis=1, keepdims=True)

    def _trade(self, rng: np.random.Generator, affinity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One period's edges: each nation's partners drawn from its affinity without replacement
        (the largest of ``log a + Gumbel``), weighted by affinity and noise."""
        n = self.num_nodes
        counts = np.minimum(1 + rng.poisson(self.partners - 1, n), n - 1)
        keys = np.log(np.maximum(affinity, 1e-300)) + rng.gumbel(size=(n, n))
        keys[affinity <= 0] = -np.inf
        ranked = np.argsort(-keys, axis=1, kind="stable")
        take = np.arange(n)[None, :] < counts[:, None]
        u = np.repeat(np.arange(n), counts)
        v = ranked[take]
        w = affinity[u, v] * counts[u] * np.exp(self.noise * rng.standard_normal(u.size))
        return u, v, w.astype(np.float32)
