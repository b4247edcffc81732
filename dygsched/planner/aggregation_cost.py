"""REAL appendix B: a fitted cost curve for graph aggregation, and the full-or-diff path choice.

Aggregation time is U-shaped in the average degree, so a diff map with few edges is not always
cheaper than the full graph. ``fit_cost_curve`` fits ``T(N, d) = a0 N + a1 d + a2 / d + a3`` to
timed aggregations; ``choose_path`` compares, per snapshot, the predicted time of aggregating
the full graph with that of the incremental update. Pure numpy: the timings and the workloads
of diff maps come from the engine and the data stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Work per message of an incremental step relative to a full aggregation's: 2.2x measured on CPU
# (60k nodes, 128 features, TGCN's 192-wide conv: 0.66 s for 326k messages against 0.32 s for 351k).
DIFF_MESSAGE_COST = 2.0


@dataclass(frozen=True)
class ConvCostCurve:
    """``T(N, d) = a0 * N + a1 * d + a2 / d + a3`` seconds for ``N`` rows of average degree ``d``."""

    a0: float
    a1: float
    a2: float
    a3: float

    def predict(self, num_nodes: float, avg_degree: float) -> float:
        d = max(float(avg_degree), 1e-3)
        return self.a0 * num_nodes + self.a1 * d + self.a2 / d + self.a3


def fit_cost_curve(num_nodes: Sequence[float], avg_degree: Sequence[float], seconds: Sequence[float]) -> ConvCostCurve:
    """Least-squares fit of ``ConvCostCurve`` to measured ``seconds`` (at least 4 distinct points)."""
    n = np.asarray(num_nodes, dtype=np.float64)
    d = np.asarray(avg_degree, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    if not n.shape == d.shape == t.shape or n.ndim != 1:
        raise ValueError("num_nodes, avg_degree and seconds must be 1-D sequences of one length")
    if (d <= 0).any():
        raise ValueError("average degrees must be positive")
    design = np.stack([n, d, 1.0 / d, np.ones_like(n)], axis=1)
    if np.linalg.matrix_rank(design) < 4:
        raise ValueError(f"cannot fit 4 coefficients to {len(t)} timings: vary both the node count and the degree")
    coef, *_ = np.linalg.lstsq(design, t, rcond=None)
    return ConvCostCurve(*(float(c) for c in coef))


def choose_path(curve: ConvCostCurve, num_nodes: int, full_messages: int, rows: int, messages: int) -> str:
    """``"full"`` or ``"diff"``: whichever ``curve`` predicts faster for one snapshot.

    Full: ``num_nodes`` rows of average degree ``full_messages / num_nodes`` (self-loops included).
    Diff: the ``rows`` the update touches, with ``messages / rows``. The incremental update also
    pays index work per message that the full path does not (signed coefficients, old and new
    rows, rescaling), so its messages must be fewer by that factor too: a growing graph's diffs
    can carry nearly as many messages as its edges.
    """
    full = curve.predict(num_nodes, full_messages / max(num_nodes, 1))
    incremental = curve.predict(rows, messages / max(rows, 1)) if rows else 0.0
    return "diff" if incremental <= full and DIFF_MESSAGE_COST * messages < full_messages else "full"


# --------------------------------------------------------------------------------------------
# REAL 4.1.2's two cases: project before the aggregation or after it


@dataclass(frozen=True)
class ProjectionCost:
    """``seconds = per_mac * rows * in_width * out_width + overhead`` for one dense projection."""

    per_mac: float
    overhead: float

    def predict(self, rows: float, in_width: int, out_width: int) -> float:
        return self.per_mac * rows * in_width * out_width + self.overhead if rows else 0.0


def fit_projection_cost(macs: Sequence[float], seconds: Sequence[float]) -> ProjectionCost:
    """Least-squares fit of ``ProjectionCost`` to timed projections of ``macs`` multiply-adds each."""
    m = np.asarray(macs, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    if m.shape != t.shape or m.ndim != 1 or len(np.unique(m)) < 2:
        raise ValueError("fit_projection_cost needs at least 2 distinct sizes, one time each")
    (per_mac, overhead), *_ = np.linalg.lstsq(np.stack([m, np.ones_like(m)], axis=1), t, rcond=None)
    return ProjectionCost(max(float(per_mac), 0.0), max(float(overhead), 0.0))


@dataclass(frozen=True)
class ChainStep:
    """One snapshot of a chain as the reuse engine runs it: ``rows`` output rows rewritten by
    ``messages`` messages, ``changed_rows`` input rows with new features. A ``full`` step (a
    chain's first snapshot, or where the curve chose the whole graph) aggregates every row
    (``rows`` = the node count, ``messages`` = edges plus self-loops) and projects every row."""

    full: bool
    rows: int
    messages: int
    changed_rows: int = 0


def predict_chain_seconds(
    steps: Sequence[ChainStep],
    aggregation: ConvCostCurve,
    projection: ProjectionCost,
    in_width: int,
    out_width: int,
    project_first: bool,
) -> float:
    """Predicted seconds of a chain's reusable convolution in one order, from the fitted curves.

    ``aggregation`` is the curve fitted at the width that order aggregates (``out_width`` when
    projecting first, ``in_width`` otherwise); an incremental step's messages cost
    ``DIFF_MESSAGE_COST`` times a full aggregation's. Projecting first (case 1) projects only the
    changed feature rows of an incremental step; aggregating first (case 2) projects every row the
    step's aggregation rewrote (the "selective MatMul").
    """
    seconds = 0.0
    for step in steps:
        if not step.rows:
            continue
        aggregate = aggregation.predict(step.rows, step.messages / step.rows)
        seconds += aggregate if step.full else DIFF_MESSAGE_COST * aggregate
        projected = step.changed_rows if project_first and not step.full else step.rows
        seconds += projection.predict(projected, in_width, out_width)
    return seconds


@dataclass(frozen=True)
class OrderCosts:
    """What the choice between REAL 4.1.2's two orders needs: the aggregation curve fitted at
    each width an order aggregates (``curves``, keyed by width) and the projection's cost."""

    curves: Mapping[int, ConvCostCurve]
    projection: ProjectionCost
    in_width: int
    out_width: int

    def predict(self, chains: Sequence[Sequence[ChainStep]], project_first: bool) -> float:
        curve = self.curves[self.out_width if project_first else self.in_width]
        return sum(
            predict_chain_seconds(steps, curve, self.projection, self.in_width, self.out_width, project_first) for steps in chains
        )


def choose_projection_first(chains: Sequence[Sequence[ChainStep]], costs: OrderCosts) -> bool:
    """True where projecting before the aggregation (case 1) is predicted faster over ``chains``
    than aggregating first (case 2)."""
    return costs.predict(chains, True) < costs.predict(chains, False)
