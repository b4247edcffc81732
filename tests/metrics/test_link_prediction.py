"""Link-prediction metrics: transductive and inductive AP/AUC, TGB's MRR."""

from __future__ import annotations

import numpy as np
import pytest

from dygsched.metrics.link_prediction import EvaluationScores, link_prediction_metrics, mean_reciprocal_rank
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
