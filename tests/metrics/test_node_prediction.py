"""Node property prediction's metrics: NDCG@10 equal to TGB's Evaluator, AUC and AP as DyGLib's, and
nothing measured is reported as a number."""

from __future__ import annotations

import numpy as np
import pytest

from dygsched.metrics.missing import Missing
from dygsched.metrics.node_prediction import (
    AffinityScores,
    StateLabelScores,
    affinity_metrics,
    ndcg_rows,
    state_label_metrics,
)


def cases(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Sparse affinity rows against continuous scores, scores with many ties (a persistent forecast's
    zeros), rows with no relevance at all, and one row alone."""
    rng = np.random.default_rng(seed)
    out = []
    for trial in range(60):
        rows, width = int(rng.integers(1, 8)), int(rng.integers(2, 60))
        y_true = rng.random((rows, width)) * (rng.random((rows, width)) < 0.3)
        if trial % 7 == 0:
            y_true[0] = 0.0
        y_score = rng.integers(0, 3, (rows, width)).astype(float) if trial % 2 else rng.standard_normal((rows, width))
        out.append((y_true, y_score))
    return out


def test_each_rows_ndcg_averages_to_sklearns_ndcg_score():
    from sklearn.metrics import ndcg_score

    for y_true, y_score in cases(0):
        assert ndcg_rows(y_true, y_score).mean() == pytest.approx(ndcg_score(y_true, y_score, k=10), abs=1e-12)
        for row in range(y_true.shape[0]):
            assert ndcg_rows(y_true[row : row + 1], y_score[row : row + 1])[0] == pytest.approx(
                ndcg_score(y_true[row : row + 1], y_score[row : row + 1], k=10), abs=1e-12
            )


def test_ndcg_equals_tgbs_evaluator():
    """TGB's Evaluator (the tgb extra) scores a label time's rows: our per-row NDCG averages to it."""
    evaluate = pytest.importorskip("tgb.nodeproppred.evaluate", reason="py-tgb is the tgb extra")
    evaluator = evaluate.Evaluator(name="tgbn-trade")
    for y_true, y_score in cases(1):
        theirs = evaluator.eval({"y_true": y_true, "y_pred": y_score, "eval_metric": ["ndcg"]})["ndcg"]
        assert ndcg_rows(y_true, y_score).mean() == pytest.approx(theirs, abs=1e-12)


def test_the_phase_figure_averages_label_times_as_tgbs_examples_do():
    """TGB's examples average the Evaluator's figure over label times, whatever each time's row count."""
    scores = AffinityScores(6.0, np.array([1.0, 0.0, 0.0, 0.5]), np.array([3, 3, 3, 7]))
    found = affinity_metrics(scores)
    assert found["ndcg@10"] == pytest.approx((1 / 3 + 0.5) / 2) and found["loss"] == pytest.approx(1.5)
    nothing = affinity_metrics(AffinityScores(0.0, np.zeros(0), np.zeros(0, np.int64)))
    assert all(isinstance(value, Missing) for value in nothing.values())


def test_auc_and_ap_are_dyglibs_and_missing_where_one_class_is_absent():
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(2)
    label = (rng.random(200) < 0.1).astype(np.uint8)
    score = rng.standard_normal(200) + label
    found = state_label_metrics(StateLabelScores(20.0, score, label))
    assert found["auc"] == roc_auc_score(label, score) and found["ap"] == average_precision_score(label, score)
    assert found["loss"] == pytest.approx(0.1)
    none = state_label_metrics(StateLabelScores(3.0, score[:5], np.zeros(5, np.uint8)))
    assert isinstance(none["auc"], Missing) and isinstance(none["ap"], Missing) and "both classes" in none["auc"].reason
    assert none["loss"] == pytest.approx(0.6)
