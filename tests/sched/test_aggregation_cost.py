"""The aggregation cost curve (REAL appendix B): least-squares fit and the full-or-diff choice (no torch)."""

from __future__ import annotations

import numpy as np
import pytest

from dygsched.sched.aggregation_cost import DIFF_MESSAGE_COST, ConvCostCurve, choose_path, fit_cost_curve


def test_predict_is_the_papers_formula() -> None:
    curve = ConvCostCurve(a0=2.0, a1=3.0, a2=4.0, a3=5.0)
    assert curve.predict(10, 2.0) == 2 * 10 + 3 * 2 + 4 / 2 + 5


def test_fit_recovers_the_coefficients_of_synthetic_timings() -> None:
    true = ConvCostCurve(a0=3e-8, a1=2e-5, a2=4e-4, a3=1e-4)
    nodes = [1e4, 1e4, 1e4, 1e5, 1e5, 1e5, 1e6, 1e6]
    degrees = [0.5, 4.0, 32.0, 1.0, 8.0, 64.0, 2.0, 16.0]
    seconds = [true.predict(n, d) for n, d in zip(nodes, degrees, strict=True)]
    fitted = fit_cost_curve(nodes, degrees, seconds)
    for name in ("a0", "a1", "a2", "a3"):
        assert getattr(fitted, name) == pytest.approx(getattr(true, name), rel=1e-6)

    rng = np.random.default_rng(0)
    noisy = [t * (1 + 0.01 * rng.standard_normal()) for t in seconds]
    fitted = fit_cost_curve(nodes, degrees, noisy)
    for n, d in zip(nodes, degrees, strict=True):
        assert fitted.predict(n, d) == pytest.approx(true.predict(n, d), rel=0.05)


def test_fit_rejects_degenerate_timings() -> None:
    with pytest.raises(ValueError, match="vary both the node count and the degree"):
        fit_cost_curve([100, 100, 100, 100], [1, 2, 4, 8], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="positive"):
        fit_cost_curve([1, 2, 3, 4], [0, 1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="one length"):
        fit_cost_curve([1, 2], [1, 2, 3], [1, 2])


def test_choose_path_prefers_the_cheaper_prediction_and_few_messages():
    per_node = ConvCostCurve(a0=1.0, a1=0.0, a2=0.0, a3=0.0)  # cost grows with rows
    assert choose_path(per_node, num_nodes=100, full_messages=500, rows=10, messages=20) == "diff"
    # fewer rows, but its messages cost as much as the full graph's (DIFF_MESSAGE_COST each): full
    assert choose_path(per_node, num_nodes=100, full_messages=500, rows=10, messages=int(500 / DIFF_MESSAGE_COST)) == "full"
    assert choose_path(per_node, num_nodes=100, full_messages=500, rows=0, messages=0) == "diff"  # nothing changed
    sparse_penalty = ConvCostCurve(a0=0.0, a1=0.0, a2=10.0, a3=0.0)  # cost dominated by sparsity (a2 / d)
    assert choose_path(sparse_penalty, num_nodes=100, full_messages=500, rows=50, messages=50) == "full"
