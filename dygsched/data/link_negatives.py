"""One-vs-many negatives, generated once and stored: TGB's protocol for snapshot data, as UTG uses it.

``eval.one_vs_many=m`` ranks every validation and test positive ``(u, v)`` of a snapshot ``t``
against ``m`` fixed negative destinations, by TGB's ``hist_rnd`` rule (TGB's
``NegativeEdgeSampler`` generator, which UTG's ``dtdg_neg_generator`` repeats):

* up to ``m / 2`` historical negatives: destinations ``u`` reached in training, less ``u``'s
  positives in ``t``, drawn without replacement;
* the rest random: destinations drawn without replacement from every node but ``u``'s positives in
  ``t`` and its whole historical set (TGB's and UTG's candidate range is every node id); where fewer
  candidates exist than asked for, all of them.

The positives are the link targets (``dygsched.data.link_targets.link_events``: each snapshot's
distinct pairs, timed by the target snapshot's index), the same for a snapshot model and for an
event model given the cut stream, so their MRR, hits@k, AP and AUC are over the same pairs.
The negatives are drawn once for a dataset, cut, split and seed (``numpy``'s generator seeded
by ``seed`` and the positive's place) and written in TGB's own file format
(``<prefix>_val_ns.pkl``, ``<prefix>_test_ns.pkl``: a dictionary from ``(source, destination,
time)`` to the array of negative destinations, ids as the source file's) into the cache, where
every later run with the same data reads them (``dygsched.data.tgb_negatives``, the reader of
TGB's files). The file's name holds a digest of the positives, the split and the settings, so a
changed cut or split makes new files and never reads another's.

Memory: ``4 m`` bytes per evaluated positive while generating (int32), 8 in the files
(TGB's int64 arrays); docs/measurements.md has the figures for Wikipedia's and REDDIT's sizes.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import numpy as np
import torch

from dygsched.data.events import EventStream
from dygsched.data.tgb_negatives import PHASE_FILES
from dygsched.errors import ConfigError

HISTORICAL_SHARE = 0.5  # TGB's hist_ratio


def _digest(events: EventStream, phases: dict[str, tuple[int, int]], count: int, seed: int) -> str:
    digest = hashlib.sha256()
    for tensor in (events.src, events.dst, events.t):
        digest.update(tensor.numpy().tobytes())
    digest.update(repr((sorted(phases.items()), count, seed, HISTORICAL_SHARE)).encode())
    return digest.hexdigest()[:16]


def generate(
    events: EventStream, train_stop: int, phases: dict[str, tuple[int, int]], count: int, seed: int
) -> dict[str, np.ndarray]:
    """Each phase's negatives, ``[positives, count]`` node indices (int32), by TGB's ``hist_rnd``
    rule; ``-1`` where a positive has fewer candidates than ``count``. ``train_stop``: the events
    before it are training's (the historical pool); ``phases``: each phase's event range."""
    if count < 1:
        raise ConfigError(f"eval.one_vs_many must be at least 1 negative per positive, got {count}")
    n = events.num_nodes
    src, dst = events.src.numpy(), events.dst.numpy()
    historical = np.unique(src[:train_stop].astype(np.int64) * n + dst[:train_stop])  # sorted keys u * n + v
    hist_start = np.searchsorted(historical, np.arange(n + 1, dtype=np.int64) * n)  # each source's slice
    wanted_hist = int(count * HISTORICAL_SHARE)
    out = {}
    for phase, (first, stop) in phases.items():
        times = events.t.numpy()[first:stop]
        table = np.full((stop - first, count), -1, dtype=np.int32)
        # the positives of one source in one snapshot share their candidates: one pass per (source, snapshot)
        keys = np.stack([times, src[first:stop]])
        order = np.lexsort(keys)
        bounds = np.flatnonzero(np.diff(keys[:, order], axis=1).any(axis=0)) + 1
        for group in np.split(order, bounds):
            u = int(src[first + group[0]])
            positives = np.unique(dst[first + group])
            seen = historical[hist_start[u] : hist_start[u + 1]] - u * n
            hist_pool = np.setdiff1d(seen, positives, assume_unique=True)
            excluded = np.union1d(seen, positives)
            for row in group:
                generator = np.random.default_rng([seed, first + int(row), 41])
                take = min(wanted_hist, hist_pool.size)
                chosen = generator.choice(hist_pool, size=take, replace=False) if take else hist_pool[:0]
                rest = min(count - take, n - excluded.size)
                if rest > 0:
                    chosen = np.concatenate([chosen, _outside(generator, excluded, n, rest)])
                table[row, : chosen.size] = chosen
        out[phase] = table
    return out


def _outside(generator: np.random.Generator, excluded: np.ndarray, n: int, size: int) -> np.ndarray:
    """``size`` distinct node indices in ``[0, n)`` outside the sorted ``excluded``, uniformly."""
    free = n - excluded.size
    picks = generator.choice(free, size=size, replace=False)  # ranks among the free nodes
    # the k-th free node is k plus the number of excluded nodes at or below it
    return picks + np.searchsorted(excluded - np.arange(excluded.size), picks, side="right")


def stored(
    events: EventStream,
    train_stop: int,
    phases: dict[str, tuple[int, int]],
    count: int,
    seed: int,
    folder: Path,
) -> Path:
    """The prefix of this data's stored negatives in ``folder``, generated and written first where
    they are not there yet (``tgb_negatives``'s file format; written whole or not at all)."""
    prefix = folder / f"{events.name}-{_digest(events, phases, count, seed)}"
    files = {phase: Path(PHASE_FILES[phase].format(prefix=str(prefix))) for phase in phases}
    if all(path.is_file() for path in files.values()):
        return prefix
    ids = (events.node_ids if events.node_ids is not None else torch.arange(events.num_nodes)).numpy()
    folder.mkdir(parents=True, exist_ok=True)
    for phase, table in generate(events, train_stop, phases, count, seed).items():
        first, stop = phases[phase]
        keys = zip(
            ids[events.src[first:stop].numpy()].tolist(),
            ids[events.dst[first:stop].numpy()].tolist(),
            events.t[first:stop].tolist(),
        )
        content = {key: ids[row[row >= 0]] for key, row in zip(keys, table)}
        partial = files[phase].with_suffix(f".{os.getpid()}.partial")  # ranks that generate at once write apart
        with open(partial, "wb") as handle:
            pickle.dump(content, handle, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(files[phase])
    return prefix


def stored_in_cache(events: EventStream, train_stop: int, phases: dict[str, tuple[int, int]], count: int, seed: int) -> Path:
    """``stored`` in the cache's ``negatives`` folder (``dygsched.data.catalog.cache_dir``): what every run reads."""
    from dygsched.data.catalog import cache_dir

    return stored(events, train_stop, phases, count, seed, cache_dir() / "negatives")
