"""Confidence intervals: closed forms checked against the inequalities they come from."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from estimation.sampling.intervals import (
    clt_interval,
    empirical_bernstein_halfwidth,
    hoeffding_halfwidth,
    normal_quantile,
)


def test_it_builds_the_normal_interval_from_the_two_sided_quantile() -> None:
    low, high = clt_interval(2.0, 0.5, confidence=0.9)
    z = norm.ppf(0.95)
    assert low == pytest.approx(2.0 - 0.5 * z)
    assert high == pytest.approx(2.0 + 0.5 * z)
    assert normal_quantile(0.95) == pytest.approx(1.959964, abs=1e-6)


def test_it_returns_an_infinite_interval_when_the_standard_error_is_unknown() -> None:
    assert clt_interval(1.0, float("nan")) == (float("-inf"), float("inf"))


def test_it_returns_a_point_interval_for_a_zero_standard_error() -> None:
    assert clt_interval(3.0, 0.0) == (3.0, 3.0)


def test_it_broadcasts_the_normal_interval_over_arrays() -> None:
    low, high = clt_interval(np.array([0.0, 1.0]), np.array([1.0, np.nan]))
    assert low[0] == pytest.approx(-normal_quantile(0.95))
    assert np.isinf(low[1]) and np.isinf(high[1])


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1])
def test_it_rejects_a_confidence_outside_zero_one(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        clt_interval(0.0, 1.0, confidence)


def test_it_rejects_a_negative_standard_error() -> None:
    with pytest.raises(ValueError, match="standard_error"):
        clt_interval(0.0, -1.0)


def test_it_solves_the_hoeffding_tail_for_the_halfwidth() -> None:
    # Two-sided Hoeffding: 2 exp(-2 n t^2 / R^2) = alpha at t = halfwidth.
    value_range, n, alpha = 3.0, 40, 0.05
    halfwidth = hoeffding_halfwidth(value_range, n, 1 - alpha)
    assert 2 * math.exp(-2 * n * halfwidth**2 / value_range**2) == pytest.approx(alpha)


def test_it_shrinks_the_hoeffding_halfwidth_like_one_over_root_n() -> None:
    widths = hoeffding_halfwidth(1.0, np.array([25, 100]), 0.95)
    assert widths[0] / widths[1] == pytest.approx(2.0)


def test_it_uses_ln_three_over_alpha_in_the_two_sided_bernstein_bound() -> None:
    s2, value_range, n, alpha = 0.3, 2.0, 50, 0.1
    expected = math.sqrt(2 * s2 * math.log(3 / alpha) / n) + 7 * value_range * math.log(3 / alpha) / (
        3 * (n - 1)
    )
    assert empirical_bernstein_halfwidth(s2, value_range, n, 1 - alpha) == pytest.approx(expected)


def test_it_keeps_a_positive_bernstein_halfwidth_for_zero_variance() -> None:
    # Unlike the CLT, the bound still pays for the range: a zero sample variance is not proof.
    assert empirical_bernstein_halfwidth(0.0, 1.0, 10, 0.95) > 0


def test_it_returns_an_infinite_bernstein_halfwidth_for_one_term() -> None:
    assert math.isinf(empirical_bernstein_halfwidth(0.0, 1.0, 1, 0.95))


def test_it_beats_hoeffding_with_bernstein_when_the_variance_is_small() -> None:
    n = 10_000
    assert empirical_bernstein_halfwidth(1e-4, 1.0, n, 0.95) < hoeffding_halfwidth(1.0, n, 0.95)


@pytest.mark.parametrize(
    ("value_range", "n"),
    [(-1.0, 10), (float("nan"), 10), (1.0, 0), (1.0, 2.5)],
)
def test_it_rejects_a_bad_range_or_count(value_range: float, n: float) -> None:
    with pytest.raises(ValueError):
        hoeffding_halfwidth(value_range, n, 0.95)


def test_it_rejects_a_negative_sample_variance() -> None:
    with pytest.raises(ValueError, match="sample_variance"):
        empirical_bernstein_halfwidth(-0.1, 1.0, 10, 0.95)
