"""The distribution functions of `estimation.distributions` are scipy.stats' own, to the last bits
a float carries, at the points the estimators use them (deep tails included)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from estimation import distributions

POINTS = np.array([-40.0, -8.5, -3.0, -1.96, -0.3, 0.0, 0.7, 2.5, 6.0, 38.0])
PROBABILITIES = np.array([1e-300, 1e-12, 1e-4, 0.0125, 0.025, 0.3, 0.5, 0.9, 0.975, 1 - 1e-9])
FREEDOM = np.array([1.0, 2.0, 4.5, 29.0, 1e6])


def test_the_normal_functions_are_scipy_stats_norm() -> None:
    np.testing.assert_allclose(distributions.normal_cdf(POINTS), stats.norm.cdf(POINTS), rtol=1e-14, atol=0)
    np.testing.assert_allclose(distributions.normal_sf(POINTS), stats.norm.sf(POINTS), rtol=1e-14, atol=0)
    np.testing.assert_allclose(
        distributions.normal_ppf(PROBABILITIES), stats.norm.ppf(PROBABILITIES), rtol=1e-14
    )
    np.testing.assert_allclose(
        distributions.normal_isf(PROBABILITIES), stats.norm.isf(PROBABILITIES), rtol=1e-14
    )
    for scale in (1.0, 0.02, 3.5):
        np.testing.assert_allclose(
            distributions.normal_pdf(POINTS, scale=scale),
            stats.norm.pdf(POINTS, scale=scale),
            rtol=1e-13,
            atol=0,
        )
    assert isinstance(float(distributions.normal_ppf(0.975)), float)
    assert abs(distributions.normal_ppf(0.975) - 1.959963984540054) < 1e-15


def test_the_t_and_chi2_functions_are_scipy_stats() -> None:
    p, df = np.meshgrid(PROBABILITIES[1:], FREEDOM)
    np.testing.assert_allclose(distributions.student_t_ppf(p, df), stats.t.ppf(p, df), rtol=1e-12)
    np.testing.assert_allclose(distributions.student_t_isf(p, df), stats.t.isf(p, df), rtol=1e-12)
    x = np.abs(POINTS)[:, None]
    np.testing.assert_allclose(
        distributions.chi2_sf(x, FREEDOM[None, :]), stats.chi2.sf(x, FREEDOM[None, :]), rtol=1e-12, atol=0
    )
