"""FlareDTDG's temporal decay: how many chunks each decayed block of a window keeps.

A window of ``W = K + m`` snapshots holds the ``K`` most recent in full and ``m`` older ones
decayed; decayed block ``j = 1 .. m`` (``j = 1`` the newest of them) keeps the nodes of the first
``N_j`` of the rank's ``C`` chunks, in the epoch's survival order, so blocks are nested
(``N_1 >= ... >= N_m``). Schedules:

* ``paper`` (FlareDTDG section 3.2): ``beta = alpha^(1/m)``, ``N_0 = C``, ``N_j = floor(beta N_{j-1})``;
  the oldest keeps about ``alpha C``.
* ``artifact`` (the authors' code): ``M = ceil(alpha C)``, ``N_j = min(M, ceil(M^((m-j)/(m-1))))``;
  the newest decayed block keeps ``M``, the oldest 1.
* an explicit list of ``m`` non-increasing counts.

With ``alpha > 0`` every ``N_j`` is at least 1; ``alpha = 0`` keeps nothing (Recent-Only), ``K = W``
has no decayed block (Full-History). Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dygsched.errors import ConfigError

SCHEDULES = ("paper", "artifact")


def decay_counts(schedule: str | Sequence[int], chunks: int, decayed: int, alpha: float) -> list[int]:
    """``[N_1, ..., N_m]`` for ``m = decayed`` blocks of a rank's ``chunks`` chunks."""
    if chunks < 1:
        raise ConfigError(f"the decay needs at least one chunk per rank, got {chunks}")
    if decayed < 0:
        raise ConfigError(f"the number of decayed blocks must be 0 or more, got {decayed}")
    if not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"alpha (the oldest block's retention ratio) must lie in [0, 1], got {alpha}")
    if not isinstance(schedule, str):
        counts = [int(c) for c in schedule]
        if len(counts) != decayed:
            raise ConfigError(f"an explicit decay schedule needs one count per decayed block ({decayed}), got {len(counts)}")
        if any(c < 0 or c > chunks for c in counts) or any(a < b for a, b in zip(counts, counts[1:])):
            raise ConfigError(f"an explicit decay schedule must be non-increasing counts in [0, {chunks}], got {counts}")
        return counts
    if schedule not in SCHEDULES:
        raise ConfigError(f"unknown decay schedule '{schedule}' (choose from {', '.join(SCHEDULES)}, or a list of counts)")
    if decayed == 0:
        return []
    if alpha == 0.0:
        return [0] * decayed
    if schedule == "paper":
        beta = alpha ** (1.0 / decayed)
        counts, previous = [], chunks
        for _ in range(decayed):
            previous = max(1, math.floor(beta * previous))
            counts.append(previous)
        return counts
    keep = math.ceil(alpha * chunks)
    if decayed == 1:
        return [keep]
    return [min(keep, max(1, math.ceil(keep ** ((decayed - j) / (decayed - 1))))) for j in range(1, decayed + 1)]
