"""Query-level estimator (Sawade et al. 2013): hand-worked cases, invariances, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.intervals import clip_interval, normal_quantile


def test_it_weights_each_draw_by_p_over_q() -> None:
    # Draws: L = 1 with q = 0.5, L = 3 with q = 0.25; p = 0.5 each, so w = (1, 2).
    # R_hat = (1*1 + 2*3) / 3 = 7/3; delta method (1 (1 - 7/3)^2 + 4 (3 - 7/3)^2) / 9 = 32/81,
    # times n / (n - 1) = 2: Var = 64/81 (was 32/81 before the small-sample correction).
    estimate = query_level_estimate(
        np.array([1.0, 3.0]), np.array([0.5, 0.25]), np.array([0.5, 0.5]), interval="clt"
    )
    assert estimate.value == pytest.approx(7 / 3)
    assert estimate.standard_error == pytest.approx(8 / 9)
    assert estimate.low == pytest.approx(7 / 3 - normal_quantile(0.95) * 8 / 9)
    assert estimate.interval == "clt"
    assert estimate.n_draws == 2
    # The t interval with k - 1 = 1 degree of freedom: t_{0.025, 1} = 12.706.
    t = query_level_estimate(np.array([1.0, 3.0]), np.array([0.5, 0.25]), np.array([0.5, 0.5]), interval="t")
    assert t.low == pytest.approx(7 / 3 - 12.7062047 * 8 / 9)


def test_it_reduces_to_the_sample_mean_when_sampling_passively() -> None:
    values = np.array([0.2, 0.9, 0.4, 0.4, 0.1])
    uniform = np.full(5, 0.1)
    estimate = query_level_estimate(values, uniform, uniform)
    assert estimate.value == pytest.approx(values.mean())
    # Corrected delta-method variance with equal weights: sum (L - mean)^2 / (n (n - 1)) = s^2 / n.
    assert estimate.standard_error**2 == pytest.approx(values.var(ddof=1) / 5)


def test_it_does_not_depend_on_the_scale_of_the_query_weights() -> None:
    rng = np.random.default_rng(1)
    values, q, p = rng.random(8), rng.uniform(0.01, 0.2, 8), rng.uniform(0.01, 0.2, 8)
    plain = query_level_estimate(values, q, p)
    scaled = query_level_estimate(values, q, 7.0 * p)
    assert scaled.value == pytest.approx(plain.value)
    assert scaled.standard_error == pytest.approx(plain.standard_error)


def test_it_estimates_a_difference_from_per_draw_deltas() -> None:
    metric_a, metric_b = np.array([0.5, 0.7, 0.2]), np.array([0.4, 0.9, 0.1])
    q, p = np.array([0.2, 0.5, 0.3]), np.full(3, 1 / 3)
    difference = query_level_estimate(metric_a - metric_b, q, p)
    each_a, each_b = query_level_estimate(metric_a, q, p), query_level_estimate(metric_b, q, p)
    # The self-normalised estimator is linear in the values for fixed weights.
    assert difference.value == pytest.approx(each_a.value - each_b.value)


def test_it_computes_the_plain_unbiased_variant() -> None:
    # w = p/q = (2, 0.5); terms w L = (2, 1.5); mean 1.75; s^2 = 0.125; Var = s^2 / 2.
    estimate = query_level_estimate(
        np.array([1.0, 3.0]), np.array([0.25, 1.0]), np.array([0.5, 0.5]), self_normalised=False
    )
    assert estimate.value == pytest.approx(1.75)
    assert estimate.standard_error == pytest.approx(math.sqrt(0.125 / 2))


def test_it_reports_an_unknown_error_for_a_single_draw() -> None:
    # The delta-method formula would give 0 for one draw; an infinite interval is honest.
    estimate = query_level_estimate(np.array([0.3]), np.array([0.1]), np.array([0.05]))
    assert estimate.value == pytest.approx(0.3)
    assert math.isnan(estimate.standard_error)
    assert estimate.low == -math.inf and estimate.high == math.inf


def test_it_carries_the_bookkeeping_into_the_result() -> None:
    estimate = query_level_estimate(
        np.array([1.0, 1.0, 2.0]),
        np.array([0.5, 0.5, 0.5]),
        np.ones(3),
        n_judged=2,
        budget_spent=4.5,
        confidence=0.9,
    )
    assert (estimate.n_draws, estimate.n_judged, estimate.budget_spent, estimate.confidence) == (
        3,
        2,
        4.5,
        0.9,
    )


@pytest.mark.parametrize(
    ("values", "propensities", "weights", "message"),
    [
        ([1.0, 2.0], [0.5, 0.0], [0.5, 0.5], "propensities must lie in"),
        ([1.0, 2.0], [0.5, 1.5], [0.5, 0.5], "propensities must lie in"),
        ([1.0, 2.0], [0.5], [0.5, 0.5], "lengths differ"),
        ([], [], [], "at least one draw"),
        ([1.0, np.nan], [0.5, 0.5], [0.5, 0.5], "finite"),
        ([1.0, 2.0], [0.5, 0.5], [-0.5, 0.5], "query_weights must be >= 0"),
        ([1.0, 2.0], [0.5, 0.5], [0.0, 0.0], "weight p\\(x\\) = 0"),
        ([[1.0, 2.0]], [[0.5, 0.5]], [[0.5, 0.5]], "1-D"),
    ],
)
def test_it_rejects_bad_draws(values: list, propensities: list, weights: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        query_level_estimate(np.array(values), np.array(propensities), np.array(weights))


def test_an_interval_wholly_beyond_the_range_is_cut_to_the_bound_never_inverted() -> None:
    # A small sample's Horvitz-Thompson estimate of a DCG@5 difference (range +-8.85) can lie
    # above the range with its whole interval: cut, it is the bound, not [11.2, 8.85].
    assert clip_interval(11.2, 30.0, (-8.85, 8.85)) == (8.85, 8.85)
    assert clip_interval(-30.0, -11.2, (-8.85, 8.85)) == (-8.85, -8.85)
    assert clip_interval(-12.0, 3.0, (-8.85, 8.85)) == (-8.85, 3.0)
    low, high = clip_interval(np.array([11.2, -1.0]), np.array([30.0, 2.0]), (0.0, 8.85))
    np.testing.assert_array_equal(low, [8.85, 0.0])
    np.testing.assert_array_equal(high, [8.85, 2.0])
