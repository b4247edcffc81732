"""Link-prediction metrics: each event's positive pair scored against its negatives.

``EvaluationScores`` holds one phase's scores (the loss sum, ``positive [n]`` and ``negative [n, m]``
logits, and which events have an endpoint no training event touched). ``link_prediction_metrics``
gives the loss per event, average precision and ROC AUC of every positive against every negative
(``ap``, ``auc``: transductive), the same over the events with a new endpoint (``ap_inductive``,
``auc_inductive``; DyGLib's inductive setting), the share of such events, and with ``m > 1``
negatives per event TGB's mean reciprocal rank and hits@k (``mrr``, ``hits@10``, and their
``_inductive`` variants), exactly as TGB's ``Evaluator`` computes them. A negative given as NaN (a
place TGB's files leave empty) is left out of every metric.

AP and AUC are pooled over the phase's pairs by default (``average="pooled"``); TGL, TGN's code and
DyGLib compute them per batch and report the mean over batches (``average="per_batch"``,
``eval.average``), which weighs a small batch as much as a full one and, with tied scores (EdgeBank's
0/1), can read a point or more away from the pooled figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dygsched.metrics.missing import MetricValue, Missing

NO_NEW_ENDPOINT = "no event of this phase has an endpoint that no training event touched"


@dataclass(frozen=True)
class EvaluationScores:
    """One phase's scores: the loss sum, ``positive [n]`` and ``negative [n, m]`` logits, and
    ``inductive [n]`` (the event has an endpoint no training event touched) and ``batch [n]`` (the
    global batch each event was scored in; None where no batch is known)."""

    loss: float
    positive: np.ndarray
    negative: np.ndarray
    inductive: np.ndarray
    batch: np.ndarray | None = None

    @staticmethod
    def cat(parts: list[EvaluationScores]) -> EvaluationScores:
        return EvaluationScores(
            sum(p.loss for p in parts),
            np.concatenate([p.positive for p in parts]),
            np.concatenate([p.negative for p in parts]),
            np.concatenate([p.inductive for p in parts]),
            None if any(p.batch is None for p in parts) else np.concatenate([p.batch for p in parts]),
        )


def ranking_metrics(positive: np.ndarray, negative: np.ndarray) -> tuple[float, float]:
    """Average precision and ROC AUC of every positive against every negative."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    negative = negative[~np.isnan(negative)]  # places an event has no negative for (TGB's files)
    scores = np.concatenate([positive, negative.reshape(-1)])
    labels = np.concatenate([np.ones(positive.size), np.zeros(negative.size)])
    return float(average_precision_score(labels, scores)), float(roc_auc_score(labels, scores))


def ranks(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """TGB's rank of each positive among its own row of negatives: ``1 + (optimistic + pessimistic) / 2``
    (optimistic: negatives scored above it; pessimistic: negatives scored at least as high), so a tie
    counts half. Row-wise on a batch (TGB's issue 59: its numpy branch once summed over the whole
    batch); NaN negatives (places TGB's files leave empty) rank below every positive."""
    above = (negative > positive[:, None]).sum(1)
    at_least = (negative >= positive[:, None]).sum(1)
    return 1.0 + 0.5 * (above + at_least)


def mean_reciprocal_rank(positive: np.ndarray, negative: np.ndarray) -> float:
    """TGB's MRR: ``1 / rank`` averaged over the events (``ranks``)."""
    return float(np.mean(1.0 / ranks(positive, negative)))


def hits_at(positive: np.ndarray, negative: np.ndarray, k: int) -> float:
    """TGB's hits@k: the share of events whose rank (``ranks``, ties counted half) is at most ``k``."""
    return float(np.mean(ranks(positive, negative) <= k))


def per_batch_ranking_metrics(positive: np.ndarray, negative: np.ndarray, batch: np.ndarray) -> tuple[float, float]:
    """AP and ROC AUC of each batch's positives against its negatives, averaged over the batches."""
    figures = [ranking_metrics(positive[batch == b], negative[batch == b]) for b in np.unique(batch)]
    return float(np.mean([ap for ap, _ in figures])), float(np.mean([auc for _, auc in figures]))


AVERAGES = ("pooled", "per_batch")  # eval.average


def link_metric_names(ranking: bool, hits_k: int, labels: tuple[str, ...] | None = None) -> frozenset[str]:
    """The names ``link_prediction_metrics`` reports: with ``ranking`` (several negatives per positive)
    MRR and hits@k too; with sampler ``labels`` (any rule but TGL's alone) each name once per label,
    ``ap[historical]``."""
    hits = f"hits@{hits_k}"
    names = {"loss", "ap", "auc", "ap_inductive", "auc_inductive", "inductive_share"}
    if ranking:
        names |= {"mrr", "mrr_inductive", hits, f"{hits}_inductive"}
    if labels is None:
        return frozenset(names)
    return frozenset(f"{name}[{label}]" for name in names for label in labels)


def sampler_label(sampler: str, pool: str) -> str:
    """What a metric's name says of its negatives: the sampler, and the random sampler's pool when
    it is not all nodes (``random-destinations``)."""
    return f"{sampler}-{pool}" if sampler == "random" and pool != "all" else sampler


def link_prediction_metrics(
    scores: EvaluationScores, with_mrr: bool, hits_k: int = 10, average: str = "pooled"
) -> dict[str, MetricValue]:
    """Transductive (every event) and inductive (events with a new endpoint) AP and AUC, pooled or
    averaged per batch (``average``), and TGB's MRR and hits@k (``hits@10`` by default)."""
    if average not in AVERAGES:
        raise ValueError(average)
    if average == "per_batch" and scores.batch is None:
        raise ValueError("per-batch AP needs each event's batch")
    new = scores.inductive

    def ranking(rows: np.ndarray | slice) -> tuple[float, float]:
        if average == "pooled":
            return ranking_metrics(scores.positive[rows], scores.negative[rows])
        assert scores.batch is not None
        return per_batch_ranking_metrics(scores.positive[rows], scores.negative[rows], scores.batch[rows])

    out: dict[str, MetricValue] = {"loss": scores.loss / max(scores.positive.size, 1)}
    out["ap"], out["auc"] = ranking(slice(None))
    if new.any():
        out["ap_inductive"], out["auc_inductive"] = ranking(new)
    else:
        out["ap_inductive"] = out["auc_inductive"] = Missing(NO_NEW_ENDPOINT)
    out["inductive_share"] = float(new.mean())
    if with_mrr:
        hits = f"hits@{hits_k}"
        out["mrr"] = mean_reciprocal_rank(scores.positive, scores.negative)
        out[hits] = hits_at(scores.positive, scores.negative, hits_k)
        if new.any():
            out["mrr_inductive"] = mean_reciprocal_rank(scores.positive[new], scores.negative[new])
            out[f"{hits}_inductive"] = hits_at(scores.positive[new], scores.negative[new], hits_k)
        else:
            out["mrr_inductive"] = out[f"{hits}_inductive"] = Missing(NO_NEW_ENDPOINT)
    return out
