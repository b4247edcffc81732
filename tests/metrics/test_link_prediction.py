"""Link-prediction metrics: transductive and inductive AP/AUC, TGB's MRR."""

from __future__ import annotations

import numpy as np
import pytest

from dygsched.metrics.link_prediction import EvaluationScores, hits_at, link_prediction_metrics, mean_reciprocal_rank
from dygsched.metrics.missing import Missing


def test_mrr_ranks_each_positive_among_its_own_negatives_ties_counted_half():
    positive = np.array([0.9, 0.5, 0.1])
    negative = np.array([[0.1, 0.2], [0.7, 0.5], [0.3, 0.4]])
    # ranks 1, 1 + 1 + 0.5 = 2.5, 3
    assert mean_reciprocal_rank(positive, negative) == pytest.approx((1 + 1 / 2.5 + 1 / 3) / 3)


def test_inductive_metrics_are_those_of_the_new_endpoints_events_and_missing_without_any():
    rng = np.random.default_rng(0)
    positive, negative = rng.normal(1, 1, 200), rng.normal(0, 1, (200, 1))
    new = np.zeros(200, dtype=bool)
    new[::4] = True
    got = link_prediction_metrics(EvaluationScores(10.0, positive, negative, new), with_mrr=True)
    only_new = link_prediction_metrics(EvaluationScores(0.0, positive[new], negative[new], np.zeros(50, bool)), with_mrr=False)
    assert got["ap_inductive"] == pytest.approx(only_new["ap"]) and got["auc_inductive"] == pytest.approx(only_new["auc"])
    assert got["ap"] != pytest.approx(got["ap_inductive"]) and got["inductive_share"] == pytest.approx(0.25)
    assert got["loss"] == pytest.approx(10.0 / 200) and 0 < got["mrr"] <= 1
    assert isinstance(only_new["ap_inductive"], Missing) and "mrr" not in only_new


@pytest.mark.parametrize("tied", [False, True])
def test_mrr_and_hits_at_k_equal_tgbs_evaluator(tied):
    """TGB's ``Evaluator`` as fixed after its issues 59 (rows summed over the whole batch) and 61/81
    (ties: the mean of the optimistic and pessimistic ranks, the same in its numpy and torch paths)."""
    evaluate = pytest.importorskip("tgb.linkproppred.evaluate")
    rng = np.random.default_rng(7)
    positive, negative = rng.random(300), rng.random((300, 20))
    if tied:  # scores from a few levels: many ties, some with the positive
        positive, negative = np.round(positive * 4) / 4, np.round(negative * 4) / 4
    for k in (1, 3, 10):
        evaluator = evaluate.Evaluator(name="tgbl-wiki", k_value=k)
        # TGB evaluates one positive at a time; the mean over events is its reported figure
        theirs = [
            evaluator.eval({"y_pred_pos": positive[i : i + 1], "y_pred_neg": negative[i : i + 1], "eval_metric": ["mrr"]})
            for i in range(positive.size)
        ]
        assert mean_reciprocal_rank(positive, negative) == pytest.approx(np.mean([r["mrr"] for r in theirs]))
        assert hits_at(positive, negative, k) == pytest.approx(np.mean([r[f"hits@{k}"] for r in theirs]))
        batched = evaluator.eval({"y_pred_pos": positive, "y_pred_neg": negative, "eval_metric": ["mrr"]})
        assert mean_reciprocal_rank(positive, negative) == pytest.approx(float(batched["mrr"]))
    scores = EvaluationScores(0.0, positive, negative, np.zeros(positive.size, dtype=bool))
    metrics = link_prediction_metrics(scores, with_mrr=True, hits_k=5)
    assert metrics["hits@5"] == pytest.approx(hits_at(positive, negative, 5))
    assert isinstance(metrics["hits@5_inductive"], Missing)


def test_hits_at_k_counts_a_tie_half_as_tgb_does():
    positive, negative = np.array([0.5]), np.array([[0.5, 0.5, 0.9]])
    # one above, two tied: rank 1 + (1 + 3) / 2 = 3
    assert hits_at(positive, negative, 3) == 1.0 and hits_at(positive, negative, 2) == 0.0
    assert mean_reciprocal_rank(positive, negative) == pytest.approx(1 / 3)


def test_per_batch_ap_is_the_mean_of_each_batchs_ap_as_tgl_and_dyglib_report_it():
    from sklearn.metrics import average_precision_score, roc_auc_score

    positive = np.array([1.0, 1.0, 0.0, 0.2, 0.9])
    negative = np.array([[1.0], [0.0], [0.5], [0.1], [0.3]])  # ties, as EdgeBank's 0/1 scores make
    batch = np.array([0, 0, 0, 1, 1])
    scores = EvaluationScores(0.0, positive, negative, np.array([True, False, True, True, False]), batch)
    pooled = link_prediction_metrics(scores, with_mrr=False)
    per_batch = link_prediction_metrics(scores, with_mrr=False, average="per_batch")

    def figures(rows):
        labels = np.r_[np.ones(rows.sum()), np.zeros(rows.sum())]
        values = np.r_[positive[rows], negative[rows, 0]]
        return average_precision_score(labels, values), roc_auc_score(labels, values)

    first, second = figures(batch == 0), figures(batch == 1)
    assert per_batch["ap"] == pytest.approx((first[0] + second[0]) / 2)
    assert per_batch["auc"] == pytest.approx((first[1] + second[1]) / 2)
    assert per_batch["ap"] != pytest.approx(pooled["ap"])
    new = np.array([True, False, True, True, False])  # the inductive subset averaged over the batches it has
    assert per_batch["ap_inductive"] == pytest.approx((figures((batch == 0) & new)[0] + figures((batch == 1) & new)[0]) / 2)
    with pytest.raises(ValueError, match="each event's batch"):
        link_prediction_metrics(EvaluationScores(0.0, positive, negative, new), with_mrr=False, average="per_batch")
