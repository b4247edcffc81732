"""Link-prediction metrics: each event's positive pair scored against its negatives.

``EvaluationScores`` holds one phase's scores (the loss sum, ``positive [n]`` and ``negative [n, m]``
logits, and which events have an endpoint no training event touched). ``link_prediction_metrics``
gives the loss per event, average precision and ROC AUC of every positive against every negative
(``ap``, ``auc``: transductive), the same over the events with a new endpoint (``ap_inductive``,
``auc_inductive``; DyGLib's inductive setting), the share of such events, and with ``m > 1``
negatives per event TGB's mean reciprocal rank (``mrr``, ``mrr_inductive``). A negative given as
NaN (a place TGB's files leave empty) is left out of every metric.

This is the home of link-prediction evaluation: a new ranking metric (hits@k) goes here beside MRR.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dygsched.metrics.missing import MetricValue, Missing

NO_NEW_ENDPOINT = "no event of this phase has an endpoint that no training event touched"


@dataclass(frozen=True)
class EvaluationScores:
    """One phase's scores: the loss sum, ``positive [n]`` and ``negative [n, m]`` logits, and
    ``inductive [n]`` (the event has an endpoint no training event touched)."""

    loss: float
    positive: np.ndarray
    negative: np.ndarray
    inductive: np.ndarray

    @staticmethod
    def cat(parts: list[EvaluationScores]) -> EvaluationScores:
        return EvaluationScores(
            sum(p.loss for p in parts),
            np.concatenate([p.positive for p in parts]),
            np.concatenate([p.negative for p in parts]),
            np.concatenate([p.inductive for p in parts]),
        )


def ranking_metrics(positive: np.ndarray, negative: np.ndarray) -> tuple[float, float]:
    """Average precision and ROC AUC of every positive against every negative."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    negative = negative[~np.isnan(negative)]  # places an event has no negative for (TGB's files)
    scores = np.concatenate([positive, negative.reshape(-1)])
    labels = np.concatenate([np.ones(positive.size), np.zeros(negative.size)])
    return float(average_precision_score(labels, scores)), float(roc_auc_score(labels, scores))


def mean_reciprocal_rank(positive: np.ndarray, negative: np.ndarray) -> float:
    """TGB's MRR: each positive ranked among its own row of negatives, ties counted half (the mean
    of the optimistic and pessimistic ranks), ``1 / rank`` averaged over the events."""
    above = (negative > positive[:, None]).sum(1)
    tied = (negative == positive[:, None]).sum(1)
    return float(np.mean(1.0 / (1.0 + above + 0.5 * tied)))


def link_prediction_metrics(scores: EvaluationScores, with_mrr: bool) -> dict[str, MetricValue]:
    """Transductive (every event) and inductive (events with a new endpoint) AP and AUC, and TGB's MRR."""
    new = scores.inductive
    out: dict[str, MetricValue] = {"loss": scores.loss / max(scores.positive.size, 1)}
    out["ap"], out["auc"] = ranking_metrics(scores.positive, scores.negative)
    if new.any():
        out["ap_inductive"], out["auc_inductive"] = ranking_metrics(scores.positive[new], scores.negative[new])
    else:
        out["ap_inductive"] = out["auc_inductive"] = Missing(NO_NEW_ENDPOINT)
    out["inductive_share"] = float(new.mean())
    if with_mrr:
        out["mrr"] = mean_reciprocal_rank(scores.positive, scores.negative)
        out["mrr_inductive"] = (
            mean_reciprocal_rank(scores.positive[new], scores.negative[new]) if new.any() else Missing(NO_NEW_ENDPOINT)
        )
    return out
