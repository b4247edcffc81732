"""Node property prediction metrics on event streams (``task=node``): DyGLib's and TGB's.

* **State labels** (dynamic node classification, DyGLib's protocol): every scored event's score
  for its source's state label; ``auc`` is the ROC AUC over the phase's events (DyGLib's
  ``roc_auc_score``), ``ap`` their average precision (the positives are rare: 0.14% on Wikipedia),
  ``loss`` the mean binary cross-entropy. A phase whose events are all of one class has no AUC or AP:
  they are recorded as missing, with the reason, never as 0 or 0.5.
* **Node affinities** (TGB's ``tgbn-*``): each labelled row's predicted affinity vector against
  its true one; ``ndcg@10`` is TGB's: ``Evaluator.eval`` (sklearn's ``ndcg_score`` with ``k=10``,
  ties in the prediction averaged over their orderings) on each label time's rows, averaged over the
  phase's label times as TGB's examples average it. ``ndcg_rows`` computes the per-row scores that
  ``ndcg_score`` averages, so ranks can score their own rows and send one number per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dygsched.metrics.missing import MetricValue, Missing

NDCG_K = 10  # TGB's Evaluator: ndcg_score(..., k=10)
STATE_LABEL_METRICS = frozenset({"loss", "auc", "ap"})


def affinity_metric_names(k: int = NDCG_K) -> frozenset[str]:
    return frozenset({"loss", f"ndcg@{k}"})


@dataclass(frozen=True)
class StateLabelScores:
    """One phase's scored events: each one's ``score`` (a logit or a probability: AUC and AP read
    its order only), its 0/1 ``label``, and the summed loss."""

    loss: float
    score: np.ndarray
    label: np.ndarray

    @staticmethod
    def cat(parts: list[StateLabelScores]) -> StateLabelScores:
        return StateLabelScores(
            sum(p.loss for p in parts), np.concatenate([p.score for p in parts]), np.concatenate([p.label for p in parts])
        )


def state_label_metrics(scores: StateLabelScores, loss: MetricValue | None = None) -> dict[str, MetricValue]:
    """``loss`` (the mean over the events, or the one given), ``auc`` and ``ap`` of the labels."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    count = int(scores.label.size)
    metrics: dict[str, MetricValue] = {
        "loss": loss if loss is not None else (scores.loss / count if count else Missing("no event"))
    }
    positives = int(scores.label.sum())
    if count == 0 or positives in (0, count):
        reason = Missing(
            f"every scored event's label is {int(scores.label[0]) if count else '-'}: AUC and AP need both classes"
            if count
            else "no event was scored"
        )
        metrics.update(auc=reason, ap=reason)
        return metrics
    metrics["auc"] = float(roc_auc_score(scores.label, scores.score))
    metrics["ap"] = float(average_precision_score(scores.label, scores.score))
    return metrics


def ndcg_rows(y_true: np.ndarray, y_score: np.ndarray, k: int = NDCG_K) -> np.ndarray:
    """Each row's NDCG@k, as sklearn's ``ndcg_score`` computes it before averaging: the DCG of
    ``y_true`` in the order of ``y_score`` (a tied group of scores shares its members' mean gain over
    its ranks' discounts, ``1 / log2(rank + 1)``, zero past rank ``k``), over the ideal DCG; 0 for a
    row whose ideal is 0."""
    y_true, y_score = np.asarray(y_true, dtype=np.float64), np.asarray(y_score, dtype=np.float64)
    if y_true.shape != y_score.shape or y_true.ndim != 2:
        raise ValueError(f"y_true and y_score must be [rows, classes] of one shape, got {y_true.shape} and {y_score.shape}")
    rows, width = y_true.shape
    if rows == 0:
        return np.zeros(0)
    discount = 1.0 / np.log2(np.arange(width) + 2.0)
    discount[k:] = 0.0
    order = np.argsort(-y_score, axis=1, kind="stable")
    taken = np.arange(rows)[:, None]
    scores, gains = y_score[taken, order], y_true[taken, order]
    # tied groups in each row's order: a new group where the score changes, and at every row's start
    starts = np.ones((rows, width), dtype=bool)
    starts[:, 1:] = scores[:, 1:] != scores[:, :-1]
    flat_starts = np.flatnonzero(starts.reshape(-1))
    sizes = np.diff(np.r_[flat_starts, rows * width])
    means = np.add.reduceat(gains.reshape(-1), flat_starts) / sizes
    per_position = np.repeat(means, sizes).reshape(rows, width)
    dcg = (per_position * discount).sum(axis=1)
    ideal = (-np.sort(-y_true, axis=1) * discount).sum(axis=1)
    out = np.zeros(rows)
    relevant = ideal != 0
    out[relevant] = dcg[relevant] / ideal[relevant]
    return out


@dataclass(frozen=True)
class AffinityScores:
    """One phase's scored label rows: each row's NDCG, its label time (an index), and the summed loss."""

    loss: float
    ndcg: np.ndarray
    label_time: np.ndarray

    @staticmethod
    def cat(parts: list[AffinityScores]) -> AffinityScores:
        return AffinityScores(
            sum(p.loss for p in parts), np.concatenate([p.ndcg for p in parts]), np.concatenate([p.label_time for p in parts])
        )


def affinity_metrics(scores: AffinityScores, k: int = NDCG_K, loss: MetricValue | None = None) -> dict[str, MetricValue]:
    """``ndcg@k``: each label time's mean row NDCG (TGB's ``Evaluator`` on that time's rows), averaged
    over the label times; ``loss``: the mean cross-entropy per row (or the one given)."""
    rows = int(scores.ndcg.size)
    if rows == 0:
        missing = Missing("no label time falls in this phase")
        return {"loss": missing, f"ndcg@{k}": missing}
    times, inverse = np.unique(scores.label_time, return_inverse=True)
    per_time = np.bincount(inverse, weights=scores.ndcg) / np.bincount(inverse)
    return {"loss": loss if loss is not None else scores.loss / rows, f"ndcg@{k}": float(per_time.mean())}
