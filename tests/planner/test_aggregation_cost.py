"""The aggregation cost curve (REAL appendix B): least-squares fit and the full-or-diff choice (no torch)."""

from __future__ import annotations

import numpy as np
import pytest

from dygsched.planner.aggregation_cost import (
    DIFF_MESSAGE_COST,
    ChainStep,
    ConvCostCurve,
    OrderCosts,
    ProjectionCost,
    choose_path,
    choose_projection_first,
    fit_cost_curve,
    fit_projection_cost,
    predict_chain_seconds,
)


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


def test_fit_projection_cost_recovers_a_line_and_rejects_one_size() -> None:
    macs = [1e6, 4e6, 1.6e7]
    fitted = fit_projection_cost(macs, [2e-9 * m + 1e-4 for m in macs])
    assert fitted.per_mac == pytest.approx(2e-9) and fitted.overhead == pytest.approx(1e-4)
    assert fitted.predict(0, 8, 8) == 0.0  # nothing to project costs nothing
    with pytest.raises(ValueError, match="2 distinct sizes"):
        fit_projection_cost([1e6, 1e6], [1.0, 1.1])


# one chain: its first snapshot whole (100 rows, 600 messages), then a step rewriting 40 rows
# with 80 messages, 5 of whose input rows changed
CHAIN = [ChainStep(True, 100, 600, 100), ChainStep(False, 40, 80, 5)]


def test_predicted_chain_seconds_by_hand() -> None:
    per_row = ConvCostCurve(a0=1.0, a1=0.0, a2=0.0, a3=0.0)  # one second per aggregated row
    per_mac = ProjectionCost(per_mac=0.01, overhead=0.0)
    # case 1: 100 + DIFF_MESSAGE_COST * 40 rows aggregated; 100 + 5 rows of 2 x 3 projected
    assert predict_chain_seconds(CHAIN, per_row, per_mac, 2, 3, True) == pytest.approx(100 + DIFF_MESSAGE_COST * 40 + 0.06 * 105)
    # case 2: the same aggregation; the 40 rewritten rows projected instead of the 5 changed ones
    assert predict_chain_seconds(CHAIN, per_row, per_mac, 2, 3, False) == pytest.approx(100 + DIFF_MESSAGE_COST * 40 + 0.06 * 140)


def test_the_order_follows_the_timed_costs() -> None:
    def costs(per_column: float, per_mac: float, in_width: int = 16, out_width: int = 48) -> OrderCosts:
        curves = {w: ConvCostCurve(a0=per_column * w, a1=0.0, a2=0.0, a3=0.0) for w in (in_width, out_width)}
        return OrderCosts(curves, ProjectionCost(per_mac, 0.0), in_width, out_width)

    chains = [CHAIN, CHAIN]
    # aggregation dear, projection cheap: aggregate the narrower input first (case 2)
    assert not choose_projection_first(chains, costs(per_column=1.0, per_mac=1e-6))
    # projection dear: project first, then only the changed rows (case 1), though it aggregates wider
    assert choose_projection_first(chains, costs(per_column=1e-6, per_mac=1.0))
    # the same widths: case 1 aggregates no more and projects fewer rows
    assert choose_projection_first(chains, costs(per_column=1.0, per_mac=1e-6, in_width=32, out_width=32))
