"""Whether an edge list's sources and destinations are one id space or two (users and items).

``dataset.bipartite`` says it:

* ``true``: sources and destinations are two id spaces (users and items, as in Wikipedia, Reddit,
  MOOC and most interaction logs): user 3 and item 3 are different nodes. Each side is compacted
  on its own, in sorted order of its ids; the sources are nodes ``0 .. U-1`` and the destinations
  ``U .. U+I-1`` (JODIE's numbering, items after users), and ``node_ids`` maps every node back to
  its id in its own column.
* ``false``: one id space (people messaging people): id 3 is one node wherever it appears.
* ``null`` (the default): one id space, and the file is judged by :func:`bipartite_suspicion`;
  when it looks like two id spaces read as one, a warning names both settings.

**The rule** (a file "looks bipartite"): some id is both a source and a destination (otherwise
one id space and two give the same graph, and nothing is merged), the file has at least
``MIN_PAIRS`` distinct pairs of different ids, and no more of them are answered in both
directions (``a -> b`` and ``b -> a``) than ``CHANCE_FACTOR`` times chance, where chance is what
that many pairs drawn at random among those ids would show (``P * P / (N * (N - 1))`` for ``P``
pairs on ``N`` ids). A user and an item that share a number answer each other only by
coincidence, while people who message, mail or call each other answer far above chance (SNAP's
CollegeMsg: 12,916 answered pairs against 114 by chance; Enron's e-mails: 786 against 70). A graph
stored with each contact once (SocioPatterns' SFHH, ``src < dst``) or one without answers at all
(citations) looks bipartite by this rule; its config says ``bipartite: false``, which the shipped
ones do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_PAIRS = 50  # fewer distinct pairs tell too little to judge
CHANCE_FACTOR = 2.0  # answered pairs up to this many times chance: no more than coincidence


@dataclass(frozen=True)
class BipartiteIds:
    """Sources ``0 .. num_sources-1`` and destinations after them; ``node_ids``: each node's id in its own column."""

    src: np.ndarray
    dst: np.ndarray
    node_ids: np.ndarray
    num_sources: int

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.size)


def bipartite_ids(src: np.ndarray, dst: np.ndarray) -> BipartiteIds:
    """Two id spaces: each side compacted on its own, the destinations numbered after the sources."""
    sources, src_nodes = np.unique(src, return_inverse=True)
    destinations, dst_nodes = np.unique(dst, return_inverse=True)
    return BipartiteIds(
        src=src_nodes.astype(np.int64),
        dst=(dst_nodes + sources.size).astype(np.int64),
        node_ids=np.concatenate([sources, destinations]).astype(np.int64),
        num_sources=int(sources.size),
    )


def bipartite_suspicion(src: np.ndarray, dst: np.ndarray) -> str | None:
    """Why the ids look like two id spaces read as one (see the module's rule), or None."""
    shared = np.intersect1d(src, dst)
    if shared.size == 0:
        return None
    apart = src != dst
    pairs = np.unique(np.stack([src[apart], dst[apart]], axis=1), axis=0)
    count = int(pairs.shape[0])
    if count < MIN_PAIRS:
        return None
    ids = int(np.union1d(src, dst).size)
    values, compact = np.unique(pairs, return_inverse=True)  # small numbers, so a pair is one int64
    compact = compact.reshape(pairs.shape).astype(np.int64)
    width = int(values.size)
    forward = compact[:, 0] * width + compact[:, 1]
    backward = compact[:, 1] * width + compact[:, 0]
    answered = int(np.isin(backward, forward).sum())
    chance = count * count / (ids * (ids - 1))
    if answered > CHANCE_FACTOR * chance:
        return None
    return (
        f"{shared.size:,} ids are both sources and destinations, yet only {answered:,} of its {count:,} pairs "
        f"go both ways ({chance:,.0f} by chance), as when users and items are numbered apart"
    )
