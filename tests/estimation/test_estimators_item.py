"""Item-level estimator (Schnabel et al. 2016), its intervals, and judgement reuse."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from estimation.sampling.estimators import unreachable_mass
from estimation.sampling.intervals import empirical_bernstein_halfwidth, hoeffding_halfwidth, normal_quantile
from estimation.sampling.item_estimators import (
    item_level_difference_estimate,
    item_level_estimate,
    item_level_weight_bound,
    reuse_estimate,
)

# Three draws: u = (1, 0.5, 0), P = (0.2, 0.1, 0.3), Q = (0.1, 0.05, 0.5), so the terms
# u P / Q are (2, 1, 0): mean 1, sample variance 1, standard error sqrt(1/3).
LABELS = np.array([1.0, 0.5, 0.0])
TARGET = np.array([0.2, 0.1, 0.3])
PROPENSITIES = np.array([0.1, 0.05, 0.5])


def test_it_averages_the_importance_weighted_labels() -> None:
    estimate = item_level_estimate(LABELS, TARGET, PROPENSITIES)
    assert estimate.value == pytest.approx(1.0)
    assert estimate.standard_error == pytest.approx(math.sqrt(1 / 3))
    assert estimate.high == pytest.approx(1.0 + normal_quantile(0.95) * math.sqrt(1 / 3))
    assert estimate.interval == "clt"


def test_it_builds_a_hoeffding_interval_from_the_weight_bound() -> None:
    estimate = item_level_estimate(LABELS, TARGET, PROPENSITIES, interval="hoeffding", weight_bound=4.0)
    halfwidth = 4.0 * math.sqrt(math.log(2 / 0.05) / (2 * 3))
    assert (estimate.low, estimate.high) == pytest.approx((1.0 - halfwidth, 1.0 + halfwidth))
    # The standard error stays the sample one, whatever the interval.
    assert estimate.standard_error == pytest.approx(math.sqrt(1 / 3))


def test_it_builds_an_empirical_bernstein_interval() -> None:
    estimate = item_level_estimate(LABELS, TARGET, PROPENSITIES, interval="bernstein", weight_bound=4.0)
    halfwidth = empirical_bernstein_halfwidth(1.0, 4.0, 3, 0.95)
    assert estimate.high - estimate.value == pytest.approx(halfwidth)


@pytest.mark.parametrize("interval", ["hoeffding", "bernstein"])
def test_it_requires_a_weight_bound_for_exact_intervals(interval: str) -> None:
    with pytest.raises(ValueError, match="weight_bound"):
        item_level_estimate(LABELS, TARGET, PROPENSITIES, interval=interval)


def test_it_rejects_a_weight_bound_below_a_drawn_term() -> None:
    with pytest.raises(ValueError, match="weight_bound is smaller"):
        item_level_estimate(LABELS, TARGET, PROPENSITIES, interval="hoeffding", weight_bound=1.5)


def test_it_rejects_an_unknown_interval_kind() -> None:
    with pytest.raises(ValueError, match="interval must be one of"):
        item_level_estimate(LABELS, TARGET, PROPENSITIES, interval="bootstrap")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("labels", "target", "propensities", "message"),
    [
        ([1.5, 0.5], [0.1, 0.1], [0.5, 0.5], "labels u must lie in"),
        ([1.0, 0.5], [-0.1, 0.1], [0.5, 0.5], "target_weights must be >= 0"),
        ([1.0, 0.5], [0.1, 0.1], [0.0, 0.5], "propensities must lie in"),
        ([1.0, 0.5], [0.1], [0.5, 0.5], "lengths differ"),
    ],
)
def test_it_rejects_bad_item_draws(labels: list, target: list, propensities: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        item_level_estimate(np.array(labels), np.array(target), np.array(propensities))


def test_it_estimates_a_difference_as_the_difference_of_estimates() -> None:
    other = np.array([0.1, 0.4, 0.0])
    difference = item_level_difference_estimate(LABELS, TARGET, other, PROPENSITIES)
    one = item_level_estimate(LABELS, TARGET, PROPENSITIES)
    two = item_level_estimate(LABELS, other, PROPENSITIES)
    assert difference.value == pytest.approx(one.value - two.value)


def test_it_doubles_the_range_for_a_difference() -> None:
    other = np.array([0.1, 0.4, 0.0])
    bound = item_level_weight_bound(TARGET - other, PROPENSITIES)
    difference = item_level_difference_estimate(
        LABELS, TARGET, other, PROPENSITIES, interval="hoeffding", weight_bound=bound
    )
    assert difference.high - difference.value == pytest.approx(hoeffding_halfwidth(2 * bound, 3, 0.95))


def test_it_gives_the_largest_weight_ratio_as_the_bound() -> None:
    target = np.array([[0.2, 0.0], [0.1, 0.3]])
    q = np.array([[0.1, 0.4], [0.2, 0.3]])
    assert item_level_weight_bound(target, q) == pytest.approx(2.0)
    assert item_level_weight_bound(-target, q) == pytest.approx(2.0)


def test_it_gives_an_infinite_bound_when_a_weighted_pair_cannot_be_drawn() -> None:
    assert item_level_weight_bound(np.array([0.2, 0.1]), np.array([1.0, 0.0])) == math.inf


def test_it_sums_the_weight_no_draw_could_reach() -> None:
    target = np.array([[0.2, 0.1], [0.3, 0.4]])
    q = np.array([[0.5, 0.0], [0.5, 0.0]])
    assert unreachable_mass(target, q > 0) == pytest.approx(0.5)
    # Propensities work as well as a mask, and a prior u~ scales the mass.
    assert unreachable_mass(target, q, prior_labels=np.full((2, 2), 0.5)) == pytest.approx(0.25)


def test_it_reports_zero_unreachable_mass_when_everything_can_be_drawn() -> None:
    target = np.array([0.2, 0.0, 0.8])
    assert unreachable_mass(target, np.array([True, False, True])) == 0.0


def test_it_bounds_the_reuse_bias_by_the_unreachable_mass() -> None:
    # Exact expectation of one draw under Q: sum over Q > 0 of Q * (u P / Q) = sum_{Q>0} u P.
    rng = np.random.default_rng(5)
    labels, target = rng.random(6), rng.random(6) / 6
    q = np.array([0.3, 0.3, 0.4, 0.0, 0.0, 0.0])
    expected_estimate = np.sum(labels[q > 0] * target[q > 0])
    truth = np.sum(labels * target)
    bias = truth - expected_estimate
    assert 0 < bias <= unreachable_mass(target, q > 0)
    # Enumerate all two-draw samples to confirm the estimator's mean is that expectation.
    drawable = np.flatnonzero(q)
    mean = sum(
        q[i] * q[j] * item_level_estimate(labels[[i, j]], target[[i, j]], q[[i, j]]).value
        for i, j in itertools.product(drawable, repeat=2)
    )
    assert mean == pytest.approx(expected_estimate)


def test_it_returns_the_estimate_and_the_mass_for_reuse() -> None:
    pool_target = np.array([0.2, 0.1, 0.3, 0.05])
    pool_q = np.array([0.1, 0.05, 0.85, 0.0])
    result = reuse_estimate(
        LABELS, TARGET, PROPENSITIES, pool_target_weights=pool_target, pool_reachable=pool_q > 0
    )
    assert result.estimate.value == pytest.approx(item_level_estimate(LABELS, TARGET, PROPENSITIES).value)
    assert result.unreachable_mass == pytest.approx(0.05)
    assert not result.is_unbiased


def test_it_rejects_mismatched_shapes_for_the_unreachable_mass() -> None:
    with pytest.raises(ValueError, match="differ"):
        unreachable_mass(np.ones((2, 2)), np.ones(4, dtype=bool))


@pytest.mark.parametrize("kind", ["clt", "hoeffding", "bernstein"])
@pytest.mark.parametrize("n_draws", [1, 2, 30])
def test_it_knows_the_difference_of_two_identical_systems_is_exactly_zero(kind: str, n_draws: int) -> None:
    # Repro: following the docstring's recipe (the bound of P_a - P_b) for two identical
    # systems raised "weight_bound must be > 0, got 0.0" for every interval kind.
    rng = np.random.default_rng(n_draws)
    pool_weights = rng.random((4, 3))
    q = rng.random((4, 3))
    q /= q.sum()
    bound = item_level_weight_bound(pool_weights - pool_weights, q)
    assert bound == 0.0
    x, z = rng.integers(0, 4, n_draws), rng.integers(0, 3, n_draws)
    difference = item_level_difference_estimate(
        rng.random(n_draws),
        pool_weights[x, z],
        pool_weights[x, z],
        q[x, z],
        interval=kind,
        weight_bound=bound,
    )
    assert (difference.value, difference.standard_error, difference.low, difference.high) == (
        0.0,
        0.0,
        0.0,
        0.0,
    )
    assert difference.interval == kind and difference.n_draws == n_draws


def test_it_still_refuses_a_negative_weight_bound() -> None:
    with pytest.raises(ValueError, match="weight_bound must be >= 0"):
        item_level_estimate(LABELS, TARGET, PROPENSITIES, interval="hoeffding", weight_bound=-1.0)
