"""Profiles merged over ranks: medians per unit and the non-negative cost-model fit (no torch)."""

import numpy as np
import pytest

from dygsched.planner.profile import build_profile, fit_nonnegative, merge


def test_nonnegative_fit_recovers_a_linear_model_and_never_goes_negative():
    rng = np.random.default_rng(0)
    features = np.column_stack([rng.uniform(100, 1000, 40), rng.uniform(1000, 9000, 40), np.ones(40)])
    coef = fit_nonnegative(features, features @ np.array([2e-6, 5e-7, 1e-3]))
    assert np.allclose(coef, [2e-6, 5e-7, 1e-3], rtol=1e-6)
    # A target that decreases with edges: plain least squares would give a2 < 0.
    coef = fit_nonnegative(features, 1e-3 + 2e-6 * features[:, 0] - 1e-7 * features[:, 1])
    assert (coef >= 0).all() and coef[1] == 0


def test_profile_takes_the_median_per_unit_and_fits_the_cost_model():
    rank0, rank1 = {}, {}
    runs = (
        (0, [9.0, 1.0, 1.1, 1.2], rank0),
        (1, [2.0, 2.1, 2.0, 1.9], rank1),
        (2, [3.0, 3.0, 3.2, 2.9], rank1),
        (3, [4.0], rank0),
    )
    for unit, seconds, samples in runs:
        samples[unit] = [{"spatial": v / 2, "temporal": v / 4, "backward": v / 4} for v in seconds]
    profile = build_profile(merge([rank0, rank1]), {0: (10, 100), 1: (20, 200), 2: (30, 300), 3: (40, 400)})
    # each unit's first sample (the 9 s warm-up) is dropped; a unit with one sample keeps it
    assert profile.group_seconds == {0: pytest.approx(1.1), 1: pytest.approx(2.0), 2: pytest.approx(3.0), 3: pytest.approx(4.0)}
    assert set(profile.phase_seconds) == {"spatial", "temporal", "backward"}
    predicted = [profile.cost_model.time(n, e) for n, e in ((10, 100), (20, 200), (30, 300), (40, 400))]
    assert predicted == pytest.approx([1.1, 2.0, 3.0, 4.0], abs=0.15) and profile.r2 > 0.95
    assert profile.to_dict()["group_times"] == [pytest.approx(1.1), pytest.approx(2.0), pytest.approx(3.0), pytest.approx(4.0)]
