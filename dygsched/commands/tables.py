"""The tables ``dygsched predict`` and ``embed`` write, one layout for every model family.

Link scores: one row per scored pair, the positives and their negatives together.

| column | what |
| --- | --- |
| ``pair`` | the positive's number in the phase (0, 1, ...); its negatives carry the same number |
| ``negative`` | -1 for the positive pair itself, ``k`` for its ``k``-th negative |
| ``src``, ``dst`` | the pair's node ids, as in the user's file |
| ``label`` | 1 for the positive, 0 for a negative |
| ``score`` | the model's logit (EdgeBank: its 0/1 memory) |
| ``inductive`` | the positive has an endpoint that training never saw |

Embeddings: one row per node and chosen snapshot or time, ``node`` and ``dim_0 .. dim_{d-1}``.

``link_scores`` puts a link table back into the arrays the run's metrics are computed from
(``dygsched.metrics.link_prediction``), so the run's AP is the table's AP.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dygsched.metrics.link_prediction import EvaluationScores


def link_rows(
    ids: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    positive: np.ndarray,
    negative_src: np.ndarray,
    negative_dst: np.ndarray,
    negative: np.ndarray,
    inductive: np.ndarray,
    first_pair: int = 0,
) -> pd.DataFrame:
    """``P`` positives (``src``, ``dst``: node rows; ``positive``: scores) and their ``m`` negatives
    each (``negative_src``, ``negative_dst``, ``negative``: ``[P, m]``), as rows (module docstring)."""
    count, m = negative.shape
    pair = np.arange(first_pair, first_pair + count)
    positives = pd.DataFrame(
        {
            "pair": pair,
            "negative": np.full(count, -1),
            "src": ids[src],
            "dst": ids[dst],
            "label": np.ones(count, dtype=np.int8),
            "score": positive.astype(np.float64),
            "inductive": inductive.astype(bool),
        }
    )
    negatives = pd.DataFrame(
        {
            "pair": np.repeat(pair, m),
            "negative": np.tile(np.arange(m), count),
            "src": ids[negative_src.reshape(-1)],
            "dst": ids[negative_dst.reshape(-1)],
            "label": np.zeros(count * m, dtype=np.int8),
            "score": negative.reshape(-1).astype(np.float64),
            "inductive": np.repeat(inductive.astype(bool), m),
        }
    )
    frame = pd.concat([positives, negatives], ignore_index=True)
    return frame.sort_values(["pair", "negative"], kind="stable").reset_index(drop=True)


def link_scores(frame: pd.DataFrame) -> EvaluationScores:
    """A link table's positives ``[P]`` and negatives ``[P, m]`` in pair order (one sampler's rows),
    as the run's evaluation holds them; the loss is not recomputed (NaN)."""
    frame = frame.sort_values(["pair", "negative"], kind="stable")
    positives = frame[frame["negative"] < 0]
    negatives = frame[frame["negative"] >= 0]
    count = len(positives)
    m = len(negatives) // max(count, 1)
    return EvaluationScores(
        float("nan"),
        positives["score"].to_numpy(),
        negatives["score"].to_numpy().reshape(count, m),
        positives["inductive"].to_numpy(),
    )


def embedding_frame(key: str, value: float | int, ids: np.ndarray, embeddings: np.ndarray) -> pd.DataFrame:
    """``embeddings`` (``[N, d]``, one row per node) at ``key = value`` (a snapshot or a time)."""
    frame = pd.DataFrame(embeddings.astype(np.float32), columns=[f"dim_{i}" for i in range(embeddings.shape[1])])
    frame.insert(0, "node", ids)
    frame.insert(0, key, value)
    return frame
